//! Spend: each profile's caps against its kit, and the company's credit.

use leptos::prelude::*;

use crate::api::console::spend_overview;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, TABLE, TD, TH, THEAD, TR, show,
};

#[component]
pub fn SpendPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| spend_overview());
    view! {
        <PageHeader title="Spend" subtitle="Caps per agent profile. Real spend and platform credits count against one combined hard cap; sub-agents share their parent's." />
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
                                        <th class=format!("{TH} text-right")>"Hard cap"</th>
                                        <th class=format!("{TH} text-right")>"Soft cap"</th>
                                        <th class=format!("{TH} text-right")>"Approve at or above"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|r| view! {
                                        <tr class=TR>
                                            <td class=TD>
                                                <span style=format!("padding-left: {}rem", r.depth as f32 * 1.25)>
                                                    {(r.depth > 0).then_some("↳ ")}{r.profile}
                                                </span>
                                            </td>
                                            <td class=TD>{r.kit_name}</td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.hard_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.soft_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.approve_above /></td>
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
