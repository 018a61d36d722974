//! The activity feed: every action, refusal and decision, newest first, with the state of the
//! tamper-evident chain.

use leptos::prelude::*;

use crate::api::console::activity_feed;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};

#[component]
pub fn ActivityPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| activity_feed());
    view! {
        <PageHeader title="Activity" subtitle="Every tool call, spend and decision, newest first." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |feed| {
                    let chain = if feed.chain_ok {
                        view! { <p class="mb-3 text-sm text-emerald-700 dark:text-emerald-400" data-testid="chain-status">{format!("✓ chain verified · {} entries", feed.chain_entries)}</p> }.into_any()
                    } else {
                        view! { <p class="mb-3 text-sm font-medium text-red-700 dark:text-red-400" data-testid="chain-status">{format!("✗ chain broken at entry {}", feed.first_broken.unwrap_or_default())}</p> }.into_any()
                    };
                    if feed.rows.is_empty() {
                        return view! { {chain} <EmptyState title="No activity recorded yet" detail="Each call agents make through the gateway, allowed, parked or refused, is appended here with its verdict and amount." /> }.into_any();
                    }
                    view! {
                        {chain}
                        <div class=CARD>
                            <table class=TABLE data-testid="activity-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"#"</th>
                                        <th class=TH>"When"</th>
                                        <th class=TH>"Agent"</th>
                                        <th class=TH>"Kind"</th>
                                        <th class=TH>"Action"</th>
                                        <th class=TH>"Verdict"</th>
                                        <th class=format!("{TH} text-right")>"Amount"</th>
                                        <th class=TH>"By"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {feed.rows.into_iter().map(|r| view! {
                                        <tr class=TR>
                                            <td class=format!("{TD} tabular-nums text-zinc-400")>{r.seq}</td>
                                            <td class=TD><Time rfc3339=r.at /></td>
                                            <td class=TD>{r.agent.unwrap_or_else(|| "—".into())}</td>
                                            <td class=TD>{r.kind}</td>
                                            <td class=TD><code class="text-xs">{r.action.unwrap_or_default()}</code></td>
                                            <td class=TD>{r.verdict.map(|v| view! { <StatusBadge status=v /> })}</td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.amount /></td>
                                            <td class=format!("{TD} text-xs text-zinc-500")>{r.actor}</td>
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
