//! The approval inbox (`/`): parked actions waiting for a human.
//!
//! The rows are server-rendered, inside the [`LiveInbox`] island. The island follows the live
//! stream and, when an action parks or a decision lands, swaps in the rows the server renders
//! now, so new items appear without a reload and the row markup never ships as wasm.
//! Keyboard triage: `j`/`k` move, `a` approves the selected item, `d` moves to its reason
//! field to deny. Approve and deny are plain form posts, so the page works without JavaScript.

use leptos::prelude::*;
use policy::activity::Kind;

use crate::api::inbox::{INBOX_PAGE, InboxRow, inbox};
use crate::components::common::FormOutcome;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::countdown::Countdown;

/// Kinds of activity after which the inbox may have changed, by name (evaluated at compile
/// time, so the island carries three strings, not the kind parser).
const INBOX_KINDS: [&str; 3] = [Kind::Park.as_str(), Kind::Approval.as_str(), Kind::Revoke.as_str()];

#[island]
fn LiveInbox(children: Children) -> impl IntoView {
    let live = RwSignal::new(false);
    let root = NodeRef::<leptos::html::Div>::new();
    let selected = StoredValue::new(Selection { id: linked_approval(), at: 0 });
    Effect::new(move |_| {
        let refresh = crate::components::live::refresher(root, move || mark(root, selected));
        crate::components::live::subscribe(
            move |e| {
                if INBOX_KINDS.contains(&e.kind.as_str()) {
                    refresh();
                }
            },
            move |up| live.set(up),
        );
        mark(root, selected);
    });
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |ev| triage(ev, root, selected));
        on_cleanup(move || handle.remove());
    }
    view! {
        <div node_ref=root data-testid="inbox-live" data-live=move || live.get().to_string()>
            {children()}
        </div>
    }
}

/// The approval a link opened the inbox on (`/?approval=<id>`, as notifications link), which
/// starts selected.
fn linked_approval() -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        let search = web_sys::window()?.location().search().ok()?;
        web_sys::UrlSearchParams::new_with_str(&search).ok()?.get("approval")
    }
    #[cfg(not(feature = "hydrate"))]
    {
        None
    }
}

/// The inbox's rows in the page, in order.
#[cfg(feature = "hydrate")]
fn rows(root: NodeRef<leptos::html::Div>) -> Vec<web_sys::Element> {
    root.get_untracked().map_or_else(Vec::new, |r| crate::components::browser::all(&r, "tr[data-approval]"))
}

/// The selected row: the approval it shows and where it was, so a live update keeps the same
/// approval selected, or the row now in its place once it has been decided.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Clone, Debug, Default)]
struct Selection {
    id: Option<String>,
    at: usize,
}

/// Marks the selected row with `aria-selected`, finding it again after the rows changed.
#[allow(unused_variables)]
fn mark(root: NodeRef<leptos::html::Div>, selected: StoredValue<Selection>) {
    #[cfg(feature = "hydrate")]
    {
        let rows = rows(root);
        let Some(last) = rows.len().checked_sub(1) else { return };
        let id_at = |i: usize| rows[i].get_attribute("data-approval");
        let Selection { id, at } = selected.get_value();
        let at = id
            .and_then(|id| (0..rows.len()).find(|i| id_at(*i).as_deref() == Some(id.as_str())))
            .unwrap_or(at.min(last));
        selected.set_value(Selection { id: id_at(at), at });
        for (i, row) in rows.iter().enumerate() {
            let _ = row.set_attribute("aria-selected", if i == at { "true" } else { "false" });
        }
    }
}

/// `j`/`k`/`a`/`d` on the inbox, unless the user is typing in a field.
#[cfg(feature = "hydrate")]
fn triage(ev: web_sys::KeyboardEvent, root: NodeRef<leptos::html::Div>, selected: StoredValue<Selection>) {
    use wasm_bindgen::JsCast;
    let typing = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
        return;
    }
    let rows = rows(root);
    let Some(last) = rows.len().checked_sub(1) else { return };
    let at = selected.with_value(|s| s.at).min(last);
    let find = |sel: &str| crate::components::browser::first::<web_sys::HtmlElement>(&rows[at], sel);
    match ev.key().as_str() {
        "j" | "k" => {
            let at = if ev.key() == "j" { (at + 1).min(last) } else { at.saturating_sub(1) };
            selected.set_value(Selection { id: rows[at].get_attribute("data-approval"), at });
        }
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
        _ => return,
    }
    mark(root, selected);
}

/// The inbox's live region: what the island swaps in when it changes.
#[component]
fn InboxRows(rows: Vec<InboxRow>, pending: bool) -> impl IntoView {
    let body = if rows.is_empty() {
        view! {
            <EmptyState
                title=if pending { "Nothing is waiting for approval" } else { "No items here" }
                detail="When a kit parks an action (a soft cap, an approval threshold or an always-approve rule), it appears here with a countdown to its expiry."
            />
        }
        .into_any()
    } else {
        let more = rows.len() >= INBOX_PAGE;
        view! {
            {pending.then(|| view! {
                <p class="mb-2 text-xs text-zinc-500 dark:text-zinc-400">"Keys: j / k to move, a to approve, d to deny with a reason."</p>
            })}
            {more.then(|| view! {
                <p class="mb-2 text-xs text-amber-700 dark:text-amber-400" data-testid="inbox-more">
                    {format!("Showing the newest {INBOX_PAGE}; older items appear as these are decided.")}
                </p>
            })}
            <div class=CARD tabindex="0">
                <table class=TABLE data-testid="inbox-table">
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
                        {rows.into_iter().map(|r| view! { <InboxLine r /> }).collect_view()}
                    </tbody>
                </table>
            </div>
        }
        .into_any()
    };
    view! { <div data-swap="inbox">{body}</div> }
}

#[component]
fn InboxLine(r: InboxRow) -> impl IntoView {
    // A notification's link names the item; it is selected (and scrolled to) from the start.
    let linked = leptos_router::hooks::use_query_map().read_untracked().get("approval").as_deref()
        == Some(r.id.as_str());
    view! {
        <tr class=format!("{TR} aria-selected:ring-2 aria-selected:ring-inset aria-selected:ring-sky-500") id=r.id.clone() data-approval=r.id.clone() data-swap-key=r.id.clone() aria-selected=if linked { "true" } else { "false" }>
            <td class=TD><span class="font-medium" title=r.agent_id>{r.agent}</span></td>
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
        <FormOutcome />
        <nav class="mb-3 flex gap-1" aria-label="Filter by status">
            {tab("pending", "Waiting")}
            {tab("approved", "Approved")}
            {tab("denied", "Denied")}
            {tab("expired", "Expired")}
        </nav>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let status_now = status();
                let pending = status_now.is_empty() || status_now == "pending";
                show(data.await, move |rows| {
                    view! { <LiveInbox><InboxRows rows pending /></LiveInbox> }
                })
            })}
        </Suspense>
    }
}
