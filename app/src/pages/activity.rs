//! The activity feed: every action, refusal and decision as it happens.

use leptos::prelude::*;

use crate::api::console::overview;
use crate::components::common::{EmptyState, Loading, PageHeader, show};

#[component]
pub fn ActivityPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| overview());
    view! {
        <PageHeader title="Activity" subtitle="Every tool call, spend and decision, newest first." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |o| view! {
                    <EmptyState
                        title="No activity recorded yet"
                        detail=format!(
                            "{} agent profiles can act. Each call they make through the gateway, allowed, parked or refused, is appended here with its verdict and amount.",
                            o.profiles,
                        )
                    />
                })
            })}
        </Suspense>
    }
}
