//! The approval inbox (`/`): parked actions waiting for a human.
//!
//! The rows are server-rendered, inside the [`LiveInbox`] island. The island follows the live
//! stream and, when an action parks or a decision lands, swaps in the rows the server renders
//! now, so new items appear without a reload and the row markup never ships as wasm.
//! Keyboard triage: `j`/`k` move, `a` approves the selected item, `d` moves to its reason
//! field to deny, `x` ticks it for a bulk decision (shift-click ticks a range). Approve, deny
//! and the bulk decision are plain form posts, so the page works without JavaScript. On a
//! phone each item reads as a card with its amount, reason, expiry and both decisions, and the
//! filters and the bulk bar fold behind one control so the first item is on the first screen.

use leptos::prelude::*;
use policy::activity::Kind;

use crate::api::inbox::{INBOX_PAGE, InboxFilter, InboxRow, inbox};
use crate::components::common::FormOutcome;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TH, THEAD, TR, Time, show,
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
        let last = StoredValue::new(None::<usize>);
        let clicks = window_event_listener(leptos::ev::click, move |ev| tick_range(ev, root, last));
        on_cleanup(move || {
            handle.remove();
            clicks.remove();
        });
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
        "x" => {
            if let Some(tick) = find("input[data-tick]") {
                tick.click();
            }
        }
        _ => return,
    }
    mark(root, selected);
}

/// A click on a row's tick box: with shift held, every box between it and the one ticked
/// before takes its state.
#[cfg(feature = "hydrate")]
fn tick_range(ev: web_sys::MouseEvent, root: NodeRef<leptos::html::Div>, last: StoredValue<Option<usize>>) {
    use wasm_bindgen::JsCast;
    let Some(clicked) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else {
        return;
    };
    if clicked.get_attribute("data-tick").is_none() {
        return;
    }
    let ticks: Vec<web_sys::HtmlInputElement> = rows(root)
        .iter()
        .filter_map(|r| crate::components::browser::first::<web_sys::HtmlInputElement>(r, "input[data-tick]"))
        .collect();
    let Some(at) = ticks.iter().position(|t| t == &clicked) else { return };
    if let (true, Some(from)) = (ev.shift_key(), last.get_value()) {
        for t in &ticks[from.min(at)..=from.max(at).min(ticks.len() - 1)] {
            t.set_checked(clicked.checked());
        }
    }
    last.set_value(Some(at));
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
                <p class="mb-2 text-xs text-zinc-500 dark:text-zinc-400 max-sm:hidden">"Keys: j / k to move, a to approve, d to deny with a reason, x to tick for a bulk decision (shift-click ticks a range)."</p>
                <BulkBar />
            })}
            {more.then(|| view! {
                <p class="mb-2 text-xs text-amber-700 dark:text-amber-400" data-testid="inbox-more">
                    {format!("Showing the newest {INBOX_PAGE}; older items appear as these are decided.")}
                </p>
            })}
            <div class=format!("{CARD} max-sm:overflow-visible max-sm:border-0 max-sm:bg-transparent max-sm:shadow-none") tabindex="0">
                <table class=format!("{TABLE} max-sm:block") data-testid="inbox-table">
                    <thead class=format!("{THEAD} max-sm:hidden")>
                        <tr>
                            <th class=TH><span class="sr-only">"Tick"</span></th>
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
                    <tbody class="max-sm:block">
                        {rows.into_iter().enumerate().map(|(i, r)| view! { <InboxLine r i /> }).collect_view()}
                    </tbody>
                </table>
            </div>
        }
        .into_any()
    };
    view! { <div data-swap="inbox">{body}</div> }
}

/// The bulk decision: one note for every ticked item, approve or deny (a deny needs the note).
#[component]
fn BulkBar() -> impl IntoView {
    view! {
        <form id="bulk" method="post" action="/api/decide_many" data-testid="bulk" class=format!("mb-2 flex flex-wrap items-center gap-2 text-xs {FOLDED}")>
            <span class="text-zinc-500 dark:text-zinc-400">"Ticked items:"</span>
            <input name="note" placeholder="one note for all (required to deny)" aria-label="Note for the ticked items" class=format!("{FIELD} w-64 max-sm:w-full") />
            <button type="submit" name="decision" value="approve" data-testid="bulk-approve" class="rounded bg-emerald-700 px-2 py-1 font-medium text-white">"Approve ticked"</button>
            <button type="submit" name="decision" value="deny" data-testid="bulk-deny" class="rounded bg-red-700 px-2 py-1 font-medium text-white">"Deny ticked"</button>
        </form>
    }
}

/// On a phone the filters and the bulk bar are folded behind one control ([`ToolsToggle`]),
/// so the first screen shows the first item; a wider screen always shows them. Plain CSS (the
/// page's `group/inbox` has a ticked toggle), so it works before the wasm and without it.
const FOLDED: &str = "max-sm:hidden max-sm:group-has-[[data-tools]:checked]/inbox:flex";

/// The phone's one control for the filters and the bulk decision.
#[component]
fn ToolsToggle() -> impl IntoView {
    view! {
        <label data-testid="inbox-tools" class="mb-2 inline-flex cursor-pointer items-center gap-1 rounded border border-zinc-300 px-2 py-1 text-xs has-[:focus-visible]:ring-2 has-[:checked]:bg-zinc-100 sm:hidden dark:border-zinc-700 dark:has-[:checked]:bg-zinc-800">
            <input type="checkbox" data-tools class="sr-only" />
            "Filters and bulk decisions"
        </label>
    }
}

const FIELD: &str =
    "rounded border border-zinc-300 px-1.5 py-0.5 text-xs dark:border-zinc-700 dark:bg-zinc-950";
/// A cell that is a line of the card on a phone.
const CELL: &str = "px-3 py-2 align-top max-sm:block max-sm:px-0 max-sm:py-0.5";

#[component]
fn InboxLine(r: InboxRow, i: usize) -> impl IntoView {
    // A notification's link names the item; it is selected (and scrolled to) from the start.
    let linked = leptos_router::hooks::use_query_map().read_untracked().get("approval").as_deref()
        == Some(r.id.as_str());
    let card = "max-sm:mb-3 max-sm:block max-sm:rounded-lg max-sm:border max-sm:border-zinc-200 max-sm:bg-white max-sm:p-3 max-sm:shadow-sm dark:max-sm:border-zinc-800 dark:max-sm:bg-zinc-900";
    view! {
        <tr class=format!("{TR} {card} aria-selected:ring-2 aria-selected:ring-inset aria-selected:ring-sky-500") id=r.id.clone() data-approval=r.id.clone() data-swap-key=r.id.clone() aria-selected=if linked { "true" } else { "false" }>
            <td class=format!("{CELL} max-sm:float-right")>
                {r.can_decide.then(|| view! {
                    <input type="checkbox" form="bulk" name=format!("ids[{i}]") value=r.id.clone() data-tick="" aria-label="Tick for a bulk decision" class="size-4" />
                })}
            </td>
            <td class=CELL><span class="font-medium" title=r.agent_id>{r.agent}</span></td>
            <td class=CELL><code class="text-xs">{r.action}</code></td>
            <td class=format!("{CELL} text-zinc-600 dark:text-zinc-300")>
                {r.summary}
                {r.justification.map(|j| view! {
                    <p class="mt-1 text-xs italic text-zinc-700 dark:text-zinc-200" data-testid="justification">"“" {j} "”"</p>
                })}
            </td>
            <td class=format!("{CELL} text-right max-sm:text-left max-sm:text-base max-sm:font-semibold")><MoneyCell amount=Some(r.amount) /></td>
            <td class=format!("{CELL} max-sm:hidden")>{r.kit}</td>
            <td class=CELL>
                <StatusBadge status=r.reason />
                {r.progress.map(|p| view! { <p class="mt-1 text-xs" data-testid="progress">{p}</p> })}
                {r.needs.map(|n| view! { <p class="text-xs text-zinc-500 dark:text-zinc-400" data-testid="needs">{format!("needs {n}")}</p> })}
            </td>
            <td class=CELL>
                <Countdown seconds_left=r.seconds_left />
                <div class="text-xs"><Time rfc3339=r.expires_at /></div>
            </td>
            <td class=format!("{CELL} max-sm:pt-2")>
                {match r.why_not {
                    None => view! { <Decide id=r.id.clone() /> }.into_any(),
                    Some(why) => view! {
                        <p data-testid="cannot-decide" class="max-w-48 text-xs text-zinc-500 dark:text-zinc-400 max-sm:max-w-none">{why}</p>
                    }.into_any(),
                }}
            </td>
        </tr>
    }
}

/// Approve (with an optional note) and deny (with a required reason), as plain form posts.
#[component]
fn Decide(id: String) -> impl IntoView {
    let button = "rounded px-2 py-0.5 text-xs font-medium text-white max-sm:px-4 max-sm:py-2 max-sm:text-sm";
    view! {
        <div class="flex flex-col gap-2">
            <form method="post" action="/api/approve" class="flex gap-1">
                <input type="hidden" name="id" value=id.clone() />
                <input name="note" placeholder="note (optional)" aria-label="Approval note" class=format!("{FIELD} w-32 max-sm:w-auto max-sm:flex-1") />
                <button type="submit" data-testid="approve" class=format!("{button} bg-emerald-700")>"Approve"</button>
            </form>
            <form method="post" action="/api/deny" class="flex gap-1">
                <input type="hidden" name="id" value=id />
                <input name="reason" required placeholder="reason (required)" aria-label="Reason to deny" class=format!("{FIELD} w-32 max-sm:w-auto max-sm:flex-1") />
                <button type="submit" data-testid="deny" class=format!("{button} bg-red-700")>"Deny"</button>
            </form>
        </div>
    }
}

/// The filters: agent, action, least amount and age, and words to search the record for.
#[component]
fn Filters(f: InboxFilter) -> impl IntoView {
    let export = format!("/approvals/export.csv?{}", f.query());
    view! {
        <form method="get" action="/" class=format!("mb-3 flex flex-wrap items-end gap-2 text-xs {FOLDED}") data-testid="inbox-filters">
            <input type="hidden" name="status" value=f.status.clone() />
            <input name="agent" value=f.agent placeholder="agent" aria-label="Agent" class=format!("{FIELD} w-32") />
            <input name="action" value=f.action placeholder="action, e.g. cards.*" aria-label="Action" class=format!("{FIELD} w-36") />
            <input name="min" value=f.min placeholder="at least $" aria-label="Least amount" inputmode="decimal" class=format!("{FIELD} w-24") />
            <input name="age" value=f.age placeholder="waiting ≥ min" aria-label="Waiting at least (minutes)" inputmode="numeric" class=format!("{FIELD} w-28") />
            <input name="q" value=f.q placeholder="search words" aria-label="Search" class=format!("{FIELD} w-36") />
            <button type="submit" class="rounded bg-zinc-900 px-2 py-1 font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
            <a href=export download data-testid="export-approvals" class="px-1 py-1 underline">"Export CSV"</a>
        </form>
    }
}

#[component]
pub fn InboxPage() -> impl IntoView {
    let query = leptos_router::hooks::use_query_map();
    let status = move || query.read().get("status").unwrap_or_default();
    let filter = move || {
        let q = query.read();
        let get = |k: &str| q.get(k).unwrap_or_default();
        InboxFilter {
            status: get("status"),
            agent: get("agent"),
            action: get("action"),
            min: get("min"),
            age: get("age"),
            q: get("q"),
        }
    };
    let data = Resource::new(filter, inbox);
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
        <div class="group/inbox">
        <ToolsToggle />
        <nav class="mb-3 flex gap-1" aria-label="Filter by status">
            {tab("pending", "Waiting")}
            {tab("approved", "Approved")}
            {tab("denied", "Denied")}
            {tab("expired", "Expired")}
        </nav>
        {move || view! { <Filters f=filter() /> }}
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let status_now = status();
                let pending = status_now.is_empty() || status_now == "pending";
                show(data.await, move |rows| {
                    view! { <LiveInbox><InboxRows rows pending /></LiveInbox> }
                })
            })}
        </Suspense>
        </div>
    }
}
