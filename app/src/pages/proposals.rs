//! The proposal queue: beliefs that agents proposed through writebacks, awaiting review.

use leptos::prelude::*;

use crate::api::console::overview;
use crate::components::common::{EmptyState, Loading, PageHeader, show};

#[component]
pub fn ProposalsPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| overview());
    view! {
        <PageHeader title="Proposals" subtitle="Claims from agent writebacks, waiting to be accepted into the company's beliefs or rejected." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |o| view! {
                    <EmptyState
                        title="No proposals yet"
                        detail=format!(
                            "The brain primitive is opt-in and enabled in {} of {} kits. Agents under such a kit submit writebacks, and each claim lands here for review.",
                            o.brain_kits, o.kits,
                        )
                    />
                })
            })}
        </Suspense>
    }
}
