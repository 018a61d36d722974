//! The approval inbox (`/`): parked actions waiting for a human.
//!
//! The list is an island: it follows the live stream and reloads itself (through the same
//! `inbox` server function that rendered it) when an action parks or a decision lands, so new
//! items appear without a reload. Keyboard triage: `j`/`k` move, `a` approves the selected
//! item, `d` moves to its reason field to deny. Approve and deny are plain form posts, so the
//! page works without JavaScript.

use leptos::prelude::*;

use crate::api::console::{InboxRow, inbox};
use crate::components::common::FormError;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::countdown::Countdown;

/// Kinds of activity after which the inbox may have changed.
const INBOX_KINDS: [&str; 3] = ["park", "approval", "revoke"];

/// Lazy: a wasm chunk of its own, fetched only on the inbox.
#[island(lazy)]
fn LiveInbox(rows: Vec<InboxRow>, status: String) -> impl IntoView {
    let rows = RwSignal::new(rows);
    let selected = RwSignal::new(0usize);
    let reloads = RwSignal::new(0u32);
    let live = RwSignal::new(false);
    let selected_id = Memo::new(move |_| rows.with(|r| r.get(selected.get()).map(|r| r.id.clone())));
    let pending = status.is_empty() || status == "pending";
    Effect::new(move |_| {
        let status = status.clone();
        crate::components::live::subscribe(
            move |row| {
                if !INBOX_KINDS.contains(&row.kind.as_str()) {
                    return;
                }
                let status = status.clone();
                leptos::task::spawn_local(async move {
                    if let Ok(fresh) = inbox(status).await {
                        rows.set(fresh);
                        selected.update(|s| *s = (*s).min(rows.with_untracked(Vec::len).saturating_sub(1)));
                        reloads.update(|n| *n += 1);
                    }
                });
            },
            move |up| live.set(up),
        );
    });
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |ev| triage(ev, rows, selected));
        on_cleanup(move || handle.remove());
    }
    view! {
        <div data-testid="inbox-live" data-live=move || live.get().to_string()>
        {move || if rows.with(Vec::is_empty) {
            view! {
                <EmptyState
                    title=if pending { "Nothing is waiting for approval" } else { "No items here" }
                    detail="When a kit parks an action (a soft cap, an approval threshold or an always-approve rule), it appears here with a countdown to its expiry."
                />
            }.into_any()
        } else {
            view! {
                {pending.then(|| view! {
                    <p class="mb-2 text-xs text-zinc-500">"Keys: j / k to move, a to approve, d to deny with a reason."</p>
                })}
                {move || (rows.with(Vec::len) >= crate::api::console::INBOX_PAGE).then(|| view! {
                    <p class="mb-2 text-xs text-amber-700 dark:text-amber-400" data-testid="inbox-more">
                        {format!("Showing the newest {}; older items appear as these are decided.", crate::api::console::INBOX_PAGE)}
                    </p>
                })}
                <div class=CARD>
                    <table class=TABLE data-testid="inbox-table" data-reloads=move || reloads.get().to_string()>
                        <thead class=THEAD>
                            <tr>
                                <th class=TH>"Agent"</th>
                                <th class=TH>"Action"</th>
                                <th class=TH>"Arguments"</th>
                                <th class=format!("{TH} text-right")>"Amount"</th>
                                <th class=TH>"Kit"</th>
                                <th class=TH>"Why"</th>
                                <th class=TH>"Expires"</th>
                                <th class=TH>"Decide"</th>
                            </tr>
                        </thead>
                        <tbody>
                            <For each=move || rows.get() key=|r| r.id.clone() let:r>
                                {
                                    let id = r.id.clone();
                                    view! { <InboxLine r selected=Signal::derive(move || selected_id.with(|s| s.as_ref() == Some(&id))) /> }
                                }
                            </For>
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        </div>
    }
}

/// `j`/`k`/`a`/`d` on the inbox, unless the user is typing in a field.
#[cfg(feature = "hydrate")]
fn triage(ev: web_sys::KeyboardEvent, rows: RwSignal<Vec<InboxRow>>, selected: RwSignal<usize>) {
    use wasm_bindgen::JsCast;
    let typing = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
        return;
    }
    let count = rows.with_untracked(Vec::len);
    if count == 0 {
        return;
    }
    let Some(id) =
        rows.with_untracked(|r| r.get(selected.get_untracked().min(count - 1)).map(|r| r.id.clone()))
    else {
        return;
    };
    let find = |sel: &str| {
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector(&format!("tr[data-approval=\"{id}\"] {sel}")).ok().flatten())
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    };
    match ev.key().as_str() {
        "j" => selected.update(|s| *s = (*s + 1).min(count - 1)),
        "k" => selected.update(|s| *s = s.saturating_sub(1)),
        "a" => {
            if let Some(button) = find("[data-testid=approve]") {
                button.click();
            }
        }
        "d" => {
            if let Some(field) = find("input[name=reason]") {
                ev.prevent_default();
                let _ = field.focus();
            }
        }
        _ => (),
    }
}

#[component]
fn InboxLine(r: InboxRow, selected: Signal<bool>) -> impl IntoView {
    view! {
        <tr class=TR data-approval=r.id.clone() aria-selected=move || selected.get().to_string()
            class:ring-2=move || selected.get() class:ring-inset=move || selected.get() class:ring-sky-500=move || selected.get()>
            <td class=TD><span class="font-medium">{r.agent}</span></td>
            <td class=TD><code class="text-xs">{r.action}</code></td>
            <td class=format!("{TD} text-zinc-600 dark:text-zinc-300")>{r.summary}</td>
            <td class=format!("{TD} text-right")><MoneyCell amount=Some(r.amount) /></td>
            <td class=TD>{r.kit}</td>
            <td class=TD><StatusBadge status=r.reason /></td>
            <td class=TD>
                <Countdown seconds_left=r.seconds_left />
                <div class="text-xs"><Time rfc3339=r.expires_at /></div>
            </td>
            <td class=TD>
                {match r.why_not {
                    None => view! {
                        <div class="flex flex-col gap-2">
                            <form method="post" action="/api/approve" class="flex gap-1">
                                <input type="hidden" name="id" value=r.id.clone() />
                                <input name="note" placeholder="note (optional)" aria-label="Approval note" class="w-32 rounded border border-zinc-300 px-1.5 py-0.5 text-xs dark:border-zinc-700 dark:bg-zinc-950" />
                                <button type="submit" data-testid="approve" class="rounded bg-emerald-700 px-2 py-0.5 text-xs font-medium text-white">"Approve"</button>
                            </form>
                            <form method="post" action="/api/deny" class="flex gap-1">
                                <input type="hidden" name="id" value=r.id.clone() />
                                <input name="reason" required placeholder="reason (required)" aria-label="Reason to deny" class="w-32 rounded border border-zinc-300 px-1.5 py-0.5 text-xs dark:border-zinc-700 dark:bg-zinc-950" />
                                <button type="submit" data-testid="deny" class="rounded bg-red-700 px-2 py-0.5 text-xs font-medium text-white">"Deny"</button>
                            </form>
                        </div>
                    }.into_any(),
                    Some(why) => view! {
                        <p data-testid="cannot-decide" class="max-w-48 text-xs text-zinc-500 dark:text-zinc-400">{why}</p>
                    }.into_any(),
                }}
            </td>
        </tr>
    }
}

#[component]
pub fn InboxPage() -> impl IntoView {
    let query = leptos_router::hooks::use_query_map();
    let status = move || query.read().get("status").unwrap_or_default();
    let data = Resource::new(status, inbox);
    let tab = move |value: &'static str, label: &'static str| {
        let current = move || status() == value || (value == "pending" && status().is_empty());
        view! {
            <a href=format!("/?status={value}") data-testid=format!("filter-{value}")
                aria-current=move || current().then_some("page")
                class="rounded px-2 py-1 text-sm text-zinc-600 hover:bg-zinc-100 aria-[current=page]:bg-zinc-900 aria-[current=page]:text-white dark:text-zinc-300 dark:hover:bg-zinc-800">
                {label}
            </a>
        }
    };
    view! {
        <PageHeader title="Approval inbox" subtitle="Actions an AccountKit parked for a human decision. Each holds its cost until decided; unanswered ones expire into a denial." />
        <FormError />
        <nav class="mb-3 flex gap-1" aria-label="Filter by status">
            {tab("pending", "Waiting")}
            {tab("approved", "Approved")}
            {tab("denied", "Denied")}
            {tab("expired", "Expired")}
        </nav>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let status_now = status();
                show(data.await, move |rows| {
                    view! { <LiveInbox rows status=status_now /> }
                })
            })}
        </Suspense>
    }
}
