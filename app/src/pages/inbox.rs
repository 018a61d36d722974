//! The approval inbox (`/`): parked actions waiting for a human.

use leptos::prelude::*;

use crate::api::console::inbox;
use crate::components::common::FormError;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::countdown::Countdown;

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
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! {
                            <EmptyState
                                title="Nothing is waiting for approval"
                                detail="When a kit parks an action (a soft cap, an approval threshold or an always-approve rule), it appears here with a countdown to its expiry."
                            />
                        }.into_any();
                    }
                    view! {
                        <div class=CARD>
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
                                    {rows.into_iter().map(|r| view! {
                                        <tr class=TR data-approval=r.id.clone()>
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
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </div>
                    }.into_any()
                })
            })}
        </Suspense>
    }
}
