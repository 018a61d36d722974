//! Replay and shadow in the console: `/kits/:name/replay`, every call a draft (or a saved
//! version) would have decided otherwise over the last week, paged; the editor's summary of
//! the same (`ReplaySummary`, in [`crate::components::replay`], rendered on the server and put
//! in place by the editor's island); and the kit's shadow ([`ShadowPanel`]), whose differences follow the live stream
//! in the activity feed's island.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::replay::{ShadowData, replay_kit};
use crate::api::session::encode_query_value;
use crate::components::common::{EmptyState, Loading, PageHeader, Time, show};
use crate::components::kit_editor::DiffList;
use crate::components::replay::{ChangeTable, EffectLines, replay_href};
use crate::pages::activity::ActivityTable;

const SMALL_BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

/// `/kits/:name/replay?kit_json=…` (or `?version=N`): every changed call, 50 at a time.
#[component]
pub fn KitReplayPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(
        move || (name(), get("kit_json"), get("version").parse().ok(), get("after").parse().ok()),
        |(n, k, v, a)| replay_kit(n, k, v, a),
    );
    view! {
        <PageHeader title="Replay" subtitle="What the draft would have decided otherwise, over the last 7 days of recorded calls. Nothing was reserved or changed." />
        <p class="mb-4"><a href=move || format!("/kits/{}", encode_query_value(&name())) class="text-sm text-zinc-500 underline dark:text-zinc-400">"← back to the kit"</a></p>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let kit_json = get("kit_json");
                show(data.await, move |v| {
                    let next = v.next.map(|n| view! {
                        <a class="mt-2 inline-block text-sm underline" data-testid="replay-next" href=replay_href(&v.kit, &kit_json, Some(n))>"Next changed calls →"</a>
                    });
                    let table = if v.changes.is_empty() {
                        view! { <EmptyState title="No changed calls" detail="Every recorded call in the range would be decided the same way." /> }.into_any()
                    } else {
                        view! { <ChangeTable rows=v.changes before="Was" after="Draft" /> }.into_any()
                    };
                    view! {
                        <section class="mb-4 space-y-2" data-testid="replay-page"><EffectLines effect=v.effect what=format!("{} from {} to {}", v.kit, &v.from[..10], &v.to[..10]) /></section>
                        {table}
                        {next}
                    }.into_any()
                })
            })}
        </Suspense>
    }
}

/// A kit's shadow: its running totals and newest differences, live, and promote or discard.
#[component]
pub fn ShadowPanel(name: String, shadow: Option<ShadowData>) -> impl IntoView {
    let Some(s) = shadow else {
        return view! {
            <section class="mt-8 space-y-1" data-testid="shadow-none">
                <h2 class="text-sm font-semibold">"Shadow"</h2>
                <p class="text-sm text-zinc-500 dark:text-zinc-400">"No shadow runs. Run a draft in shadow (the button under the form) to see what it decides beside the live kit on today's calls, without effect, before you promote it."</p>
            </section>
        }
        .into_any();
    };
    let live_version = s.live_version;
    let actions = s.can_edit.then(|| view! {
        <div class="flex gap-2">
            <form method="post" action="/api/promote_shadow">
                <input type="hidden" name="name" value=name.clone() />
                <input type="hidden" name="expected_version" value=live_version.to_string() />
                <input type="hidden" name="shadow" value=s.after_seq.to_string() />
                <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-sm text-white dark:bg-zinc-100 dark:text-zinc-900" data-testid="promote-shadow">{format!("Promote: save as the version after v{live_version}")}</button>
            </form>
            <form method="post" action="/api/discard_shadow">
                <input type="hidden" name="name" value=name.clone() />
                <button type="submit" class=SMALL_BUTTON data-testid="discard-shadow">"Discard"</button>
            </form>
        </div>
    });
    let since = format!("Since {} started it beside v{}", s.started_by, s.based_on);
    view! {
        <section class="mt-8 space-y-3 rounded-lg border border-amber-300 p-4 dark:border-amber-800" data-testid="shadow">
            <h2 class="text-sm font-semibold">"Shadow"</h2>
            <p class="text-xs text-zinc-500 dark:text-zinc-400">"A draft that decides every live call of this kit's agents beside the live kit, without effect. Started "<Time rfc3339=s.started_at />"."</p>
            <ActivityTable>
                <div data-swap="shadow" data-live="true" data-agent="" data-kind="shadow" data-verdict="" data-transport="">
                    <EffectLines effect=s.effect what=since />
                    {if s.recent.is_empty() {
                        view! { <p class="text-sm text-zinc-500 dark:text-zinc-400" data-testid="shadow-quiet">"No differences yet: each one appears here as it happens."</p> }.into_any()
                    } else {
                        view! { <ChangeTable rows=s.recent before="Live" after="Shadow" /> }.into_any()
                    }}
                </div>
            </ActivityTable>
            <div>
                <h3 class="text-sm font-semibold">"Promoting it changes"</h3>
                <DiffList diff=s.diff />
            </div>
            {actions}
        </section>
    }
    .into_any()
}
