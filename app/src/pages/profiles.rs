//! Profiles: the tenant's agent profiles as a sub-agent tree, with status and runtime.

use leptos::prelude::*;

use crate::api::console::list_profiles;
use crate::components::common::{
    CARD, EmptyState, Loading, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time, show,
};

#[component]
pub fn ProfilesPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| list_profiles());
    view! {
        <PageHeader title="Profiles" subtitle="Agent profiles and their sub-agents. A sub-agent's kit narrows its parent's, and it spends from the parent's budget." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! { <EmptyState title="No agent profiles" detail="Create a profile for each agent; it gets its own scoped keys, kit and budget." /> }.into_any();
                    }
                    view! {
                        <div class=CARD>
                            <table class=TABLE data-testid="profiles-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Profile"</th>
                                        <th class=TH>"Status"</th>
                                        <th class=TH>"Runtime"</th>
                                        <th class=TH>"Kit"</th>
                                        <th class=TH>"Owner"</th>
                                        <th class=TH>"Created"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|p| view! {
                                        <tr class=TR>
                                            <td class=TD>
                                                <span style=format!("padding-left: {}rem", p.depth as f32 * 1.25)>
                                                    {(p.depth > 0).then_some("↳ ")}
                                                    <span class="font-medium">{p.name}</span>
                                                </span>
                                                <div class="font-mono text-xs text-zinc-400">{p.id}</div>
                                            </td>
                                            <td class=TD><StatusBadge status=p.status /></td>
                                            <td class=TD>
                                                <StatusBadge status=p.runtime />
                                                {p.runtime_reason.map(|r| view! { <span class="ml-1 text-xs text-zinc-500">{r}</span> })}
                                            </td>
                                            <td class=TD>{p.kit_name}</td>
                                            <td class=TD>{p.owner.unwrap_or_else(|| "—".into())}</td>
                                            <td class=TD><Time rfc3339=p.created_at /></td>
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
