//! The approval inbox (`/`): parked actions waiting for a human.

use leptos::prelude::*;

use crate::api::console::inbox;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};

/// "in 14 min", "in 40 s", "expired".
fn time_left(secs: i64) -> String {
    match secs {
        s if s <= 0 => "expired".into(),
        s if s < 60 => format!("in {s} s"),
        s => format!("in {} min", s / 60),
    }
}

#[component]
pub fn InboxPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| inbox());
    view! {
        <PageHeader title="Approval inbox" subtitle="Actions an AccountKit parked for a human decision. Each holds its cost until decided; unanswered ones expire into a denial." />
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
                                                <span class="tabular-nums">{time_left(r.seconds_left)}</span>
                                                <div class="text-xs"><Time rfc3339=r.expires_at /></div>
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
