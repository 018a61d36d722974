//! The proposal queue (`/proposals`): beliefs that agents proposed through writebacks, with
//! filters kept in the URL (status, object type, run), and one proposal in full
//! (`/proposals/:id`) with its claim, its writeback envelope and its decision trail as a
//! timeline, where a reviewer accepts or rejects with a required `because`. Plain GET forms
//! filter and plain POST forms decide, so all of it works without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::proposals::{ProposalRow, TrailRow, proposal_detail, proposals_view};
use crate::components::common::{
    CARD, EmptyState, FormOutcome, INPUT, Loading, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time,
    show,
};

#[component]
pub fn ProposalsPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(
        move || (get("status"), get("object_type"), get("run_id")),
        |(s, o, r)| proposals_view(s, o, r),
    );
    view! {
        <PageHeader title="Proposals" subtitle="Claims from agent writebacks, waiting to be accepted into the company's beliefs or rejected." />
        <form method="get" action="/proposals" class="mb-3 flex flex-wrap items-end gap-2 text-sm" data-testid="proposal-filters">
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">"Status"</span>
                <select name="status" class=INPUT>
                    {["", "pending", "parked", "accepted", "rejected"].into_iter().map(|s| {
                        let selected = move || get("status") == s;
                        view! { <option value=s selected=selected>{if s.is_empty() { "any" } else { s }}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">"Object type"</span>
                <input name="object_type" value=move || get("object_type") placeholder="fact, preference…" class=INPUT />
            </label>
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">"Run"</span>
                <input name="run_id" value=move || get("run_id") placeholder="run id" class=INPUT />
            </label>
            <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
            <a href="/proposals" class="px-1 py-1 text-zinc-500 underline dark:text-zinc-400">"Clear"</a>
        </form>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |q| {
                    if q.rows.is_empty() {
                        return view! {
                            <EmptyState
                                title="No proposals match"
                                detail=format!(
                                    "The brain primitive is opt-in and enabled in {} of {} kits. Agents under such a kit submit writebacks, and each claim lands here for review.",
                                    q.brain_kits, q.kits,
                                )
                            />
                        }.into_any();
                    }
                    view! {
                        <div class=CARD tabindex="0">
                            <table class=TABLE data-testid="proposals-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Claim"</th>
                                        <th class=TH>"Type"</th>
                                        <th class=TH>"Agent"</th>
                                        <th class=TH>"Run"</th>
                                        <th class=TH>"Status"</th>
                                        <th class=TH>"Proposed"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {q.rows.into_iter().map(|r| view! {
                                        <tr class=TR data-proposal=r.id.clone()>
                                            <td class=TD><a class="font-medium underline-offset-2 hover:underline" href=format!("/proposals/{}", r.id)>{r.claim}</a></td>
                                            <td class=TD><code class="text-xs">{r.object_type}</code></td>
                                            <td class=TD title=r.agent_id>{r.agent}</td>
                                            <td class=TD><a class="text-xs text-zinc-500 underline dark:text-zinc-400" href=format!("/proposals?run_id={}", r.run_id)>{r.run_id.clone()}</a></td>
                                            <td class=TD><StatusBadge status=r.status /></td>
                                            <td class=TD><Time rfc3339=r.created_at /></td>
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

/// The decision trail, oldest first.
#[component]
fn Trail(steps: Vec<TrailRow>) -> impl IntoView {
    view! {
        <ol class="relative ml-2 border-l border-zinc-200 dark:border-zinc-800" data-testid="trail">
            {steps.into_iter().map(|t| view! {
                <li class="mb-3 ml-4">
                    <span class="absolute -left-1.5 mt-1.5 h-3 w-3 rounded-full border border-white bg-zinc-400 dark:border-zinc-900"></span>
                    <p class="text-sm"><span class="font-medium" title=t.actor_id>{t.actor}</span>" "<StatusBadge status=t.step /></p>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400"><Time rfc3339=t.at /></p>
                    {t.note.map(|n| view! { <p class="text-sm text-zinc-700 dark:text-zinc-300">"because: "{n}</p> })}
                </li>
            }).collect_view()}
        </ol>
    }
}

#[component]
pub fn ProposalDetailPage() -> impl IntoView {
    let params = use_params_map();
    let data = Resource::new(move || params.read().get("id").unwrap_or_default(), proposal_detail);
    view! {
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |d| {
                    let ProposalRow { id, claim, object_type, agent, run_id, status, trail, .. } = d.row;
                    view! {
                        <PageHeader title="Proposal" subtitle=format!("{object_type} from {agent}, run {run_id}") />
                        <p class="mb-4"><a href="/proposals" class="text-sm text-zinc-500 underline dark:text-zinc-400">"← all proposals"</a></p>
                        <div class="grid gap-4 md:grid-cols-2">
                            <section class="space-y-3">
                                <h2 class="text-sm font-semibold">"Claim"</h2>
                                <p class="text-base" data-testid="claim">{claim}</p>
                                <p><StatusBadge status=status /></p>
                                <pre class="overflow-x-auto rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800">{d.content}</pre>
                                <h2 class="text-sm font-semibold" id="writeback">"Writeback envelope"</h2>
                                <pre class="max-h-64 overflow-auto rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800" data-testid="envelope">{d.envelope}</pre>
                            </section>
                            <section class="space-y-3">
                                <FormOutcome />
                                <h2 class="text-sm font-semibold">"Decision trail"</h2>
                                <Trail steps=trail />
                                {match d.why_not {
                                    Some(why) => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400" data-testid="cannot-decide">{why}</p> }.into_any(),
                                    None => view! {
                                        <form method="post" action="/api/decide_proposal" class="space-y-2 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800">
                                            <input type="hidden" name="id" value=id />
                                            <label class="block text-sm">
                                                <span class="text-zinc-600 dark:text-zinc-300">"Because (required)"</span>
                                                <textarea name="because" required rows="2" class=format!("{INPUT} mt-1 block w-full") placeholder="why this belief is right or wrong"></textarea>
                                            </label>
                                            <div class="flex gap-2">
                                                <button type="submit" name="decision" value="accept" data-testid="accept" class="rounded bg-emerald-700 px-3 py-1 text-sm font-medium text-white">"Accept"</button>
                                                <button type="submit" name="decision" value="reject" data-testid="reject" class="rounded bg-red-700 px-3 py-1 text-sm font-medium text-white">"Reject"</button>
                                            </div>
                                        </form>
                                    }.into_any(),
                                }}
                            </section>
                        </div>
                    }
                })
            })}
        </Suspense>
    }
}
