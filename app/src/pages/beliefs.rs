//! The company's beliefs (`/beliefs`): the source of truth that accepted proposals canonize
//! (docs/architecture.md#brain-governance), newest first, each with who accepted it and why, the agent
//! that proposed it, and
//! links back to its proposal (with the writeback envelope) and its run. A plain GET form
//! filters by object type and searches the content, so it works without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::beliefs::beliefs_view;
use crate::components::common::{
    CARD, EmptyState, INPUT, Loading, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};

#[component]
pub fn BeliefsPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(move || (get("object_type"), get("q")), |(o, q)| beliefs_view(o, q));
    view! {
        <PageHeader title="Beliefs" subtitle="What the company holds true: claims agents proposed and a reviewer accepted." />
        <form method="get" action="/beliefs" role="search" class="mb-3 flex flex-wrap items-end gap-2 text-sm" data-testid="belief-filters">
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">"Search"</span>
                <input name="q" type="search" maxlength="200" value=move || get("q") placeholder="words in the claim" class=INPUT />
            </label>
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">"Object type"</span>
                <input name="object_type" value=move || get("object_type") placeholder="fact, preference…" class=INPUT />
            </label>
            <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
            <a href="/beliefs" class="px-1 py-1 text-zinc-500 underline dark:text-zinc-400">"Clear"</a>
        </form>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! {
                            <EmptyState
                                title="No beliefs match"
                                detail="A belief is a proposal a reviewer accepted. Accept one in Proposals and it appears here."
                            />
                        }.into_any();
                    }
                    view! {
                        <div class=CARD tabindex="0">
                            <table class=TABLE data-testid="beliefs-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Belief"</th>
                                        <th class=TH>"Type"</th>
                                        <th class=TH>"Accepted by"</th>
                                        <th class=TH>"Proposed by"</th>
                                        <th class=TH>"Since"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|b| view! {
                                        <tr class=TR data-belief=b.id.clone()>
                                            <td class=TD>
                                                <a class="font-medium underline-offset-2 hover:underline" href=format!("/proposals/{}", b.proposal_id) title=format!("belief {}, from proposal {}", b.id, b.proposal_id)>{b.claim}</a>
                                            </td>
                                            <td class=TD><code class="text-xs">{b.object_type}</code></td>
                                            <td class=TD>
                                                <span class="font-medium">{b.accepted_by}</span>
                                                {b.because.map(|w| view! { <p class="text-xs text-zinc-500 dark:text-zinc-400">"because: "{w}</p> })}
                                            </td>
                                            <td class=TD>
                                                {b.agent}
                                                <p class="text-xs">
                                                    <a class="text-zinc-500 underline dark:text-zinc-400" href=format!("/proposals?run_id={}", b.run_id)>"run "{b.run_id.clone()}</a>
                                                    " · "
                                                    <a class="text-zinc-500 underline dark:text-zinc-400" href=format!("/proposals/{}#writeback", b.proposal_id) title=b.writeback_id>"writeback"</a>
                                                </p>
                                            </td>
                                            <td class=TD><Time rfc3339=b.since /></td>
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
