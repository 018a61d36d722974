//! Spend (`/spend`): each profile's posted and pending spend against its caps as one bar (the
//! soft cap marked), and, for a chosen profile, its ledger entries with a period filter,
//! keyset pages and a CSV export of exactly the filtered entries. Filters live in the URL and
//! are plain GET forms, so the page works without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use policy::Money;

use crate::api::console::{SpendRow, ledger_page, spend_overview};
use crate::components::common::{
    CARD, EmptyState, INPUT, Loading, MoneyCell, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};

fn pct(part: Money, whole: i64) -> f64 {
    if whole <= 0 { 0.0 } else { (part.units() as f64 / whole as f64 * 100.0).clamp(0.0, 100.0) }
}

/// Posted, then pending, against the hard cap (or, with no cap, against a little more than
/// the spend), with the soft cap as a marker.
#[component]
fn SpendBar(row: SpendRow) -> impl IntoView {
    let used = row.posted.units() + row.pending.units();
    let whole = row.hard_cap.map_or(((used as f64) * 1.25) as i64, |c| c.units()).max(1);
    let posted = pct(row.posted, whole);
    let pending = pct(row.pending, whole).min(100.0 - posted);
    let soft = row.soft_cap.map(|s| pct(s, whole));
    let title = format!(
        "posted {} · pending {} · hard cap {}",
        row.posted,
        row.pending,
        row.hard_cap.map_or("none".to_string(), |c| c.to_string())
    );
    view! {
        <div class="relative h-3 w-48 overflow-hidden rounded bg-zinc-100 dark:bg-zinc-800" title=title data-testid="spend-bar"
            data-posted=row.posted.to_decimal_string() data-pending=row.pending.to_decimal_string()>
            <div class="absolute inset-y-0 left-0 bg-zinc-800 dark:bg-zinc-200" style=format!("width: {posted:.2}%")></div>
            <div class="absolute inset-y-0 bg-amber-400/80" style=format!("left: {posted:.2}%; width: {pending:.2}%")></div>
            {soft.map(|s| view! { <div class="absolute inset-y-0 w-0.5 bg-red-500" style=format!("left: {s:.2}%") title="soft cap"></div> })}
        </div>
    }
}

#[component]
pub fn SpendPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(|| (), |_| spend_overview());
    view! {
        <PageHeader title="Spend" subtitle="Posted and pending spend per agent profile against its caps. Real spend and platform credits count against one combined hard cap; sub-agents share their parent's." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! { <EmptyState title="No profiles spend yet" detail="Each agent profile's budget appears here once it exists." /> }.into_any();
                    }
                    view! {
                        <div class=CARD>
                            <table class=TABLE data-testid="spend-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Profile"</th>
                                        <th class=TH>"Kit"</th>
                                        <th class=TH>"Spend against cap"</th>
                                        <th class=format!("{TH} text-right")>"Posted"</th>
                                        <th class=format!("{TH} text-right")>"Pending"</th>
                                        <th class=format!("{TH} text-right")>"Hard cap"</th>
                                        <th class=format!("{TH} text-right")>"Soft cap"</th>
                                        <th class=format!("{TH} text-right")>"Approve at or above"</th>
                                        <th class=TH></th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|r| view! {
                                        <tr class=TR data-profile=r.profile.clone()>
                                            <td class=TD>
                                                <span style=format!("padding-left: {}rem", r.depth as f32 * 1.25)>
                                                    {(r.depth > 0).then_some("↳ ")}{r.profile.clone()}
                                                </span>
                                            </td>
                                            <td class=TD>{r.kit_name.clone()}</td>
                                            <td class=TD><SpendBar row=r.clone() /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=Some(r.posted) /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=Some(r.pending) /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.hard_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.soft_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.approve_above /></td>
                                            <td class=TD><a class="text-xs underline" href=format!("/spend?profile={}", r.id)>"Ledger"</a></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </div>
                    }.into_any()
                })
            })}
        </Suspense>
        {move || (!get("profile").is_empty()).then(|| view! { <Ledger /> })}
    }
}

/// The chosen profile's ledger, with the period filter and the CSV export of it.
#[component]
fn Ledger() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(
        move || (get("profile"), get("from"), get("to"), get("after").parse::<i64>().ok()),
        |(p, f, t, a)| ledger_page(p, f, t, a),
    );
    let export =
        move || format!("/spend/export.csv?profile={}&from={}&to={}", get("profile"), get("from"), get("to"));
    view! {
        <section class="mt-6" data-testid="ledger">
            <form method="get" action="/spend" class="mb-3 flex flex-wrap items-end gap-2 text-sm">
                <input type="hidden" name="profile" value=move || get("profile") />
                <label class="flex flex-col">
                    <span class="text-xs text-zinc-500">"From (UTC day)"</span>
                    <input type="date" name="from" value=move || get("from") class=INPUT />
                </label>
                <label class="flex flex-col">
                    <span class="text-xs text-zinc-500">"To (UTC day, exclusive)"</span>
                    <input type="date" name="to" value=move || get("to") class=INPUT />
                </label>
                <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
                <a href=export class="px-1 py-1 underline" data-testid="export-csv" download>"Export CSV"</a>
            </form>
            <Suspense fallback=Loading>
                {move || Suspend::new(async move {
                    show(data.await, move |l| view! {
                        <h2 class="mb-2 text-sm font-semibold">"Ledger of " {l.profile}</h2>
                        {if l.rows.is_empty() {
                            view! { <EmptyState title="No entries in this period" detail="Every hold, post, void and expiry of this profile's budget is an entry here." /> }.into_any()
                        } else {
                            view! {
                                <div class=CARD>
                                    <table class=TABLE data-testid="ledger-table">
                                        <thead class=THEAD>
                                            <tr>
                                                <th class=TH>"#"</th>
                                                <th class=TH>"When"</th>
                                                <th class=TH>"Action"</th>
                                                <th class=TH>"Kind"</th>
                                                <th class=format!("{TH} text-right")>"Pending Δ"</th>
                                                <th class=format!("{TH} text-right")>"Posted Δ"</th>
                                            </tr>
                                        </thead>
                                        <tbody>
                                            {l.rows.into_iter().map(|e| view! {
                                                <tr class=TR data-seq=e.seq.to_string()>
                                                    <td class=TD>{e.seq}</td>
                                                    <td class=TD><Time rfc3339=e.at /></td>
                                                    <td class=TD><code class="text-xs">{e.action}</code></td>
                                                    <td class=TD>{e.kind}</td>
                                                    <td class=format!("{TD} text-right tabular-nums")>{e.pending_delta}</td>
                                                    <td class=format!("{TD} text-right tabular-nums")>{e.posted_delta}</td>
                                                </tr>
                                            }).collect_view()}
                                        </tbody>
                                    </table>
                                </div>
                            }.into_any()
                        }}
                        {l.next.map(|n| view! {
                            <a class="mt-2 inline-block text-sm underline" data-testid="next-page"
                                href=format!("/spend?profile={}&from={}&to={}&after={n}", get("profile"), get("from"), get("to"))>"Next page →"</a>
                        })}
                    })
                })}
            </Suspense>
        </section>
    }
}
