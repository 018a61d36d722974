//! The approval inbox (`/`): parked actions waiting for a human.

use leptos::prelude::*;

use crate::api::console::overview;
use crate::components::common::{EmptyState, Loading, PageHeader, show};

#[component]
pub fn InboxPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| overview());
    view! {
        <PageHeader title="Approval inbox" subtitle="Actions an AccountKit parked for a human decision." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |o| view! {
                    <EmptyState
                        title="Nothing is waiting for approval"
                        detail=format!(
                            "{} of {} agent profiles are active under {} kits. When a kit parks an action (a soft cap, an approval threshold or an always-approve rule), it appears here with a countdown to its expiry.",
                            o.active_profiles, o.profiles, o.kits,
                        )
                    />
                })
            })}
        </Suspense>
    }
}
