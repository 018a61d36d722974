//! Replay and shadow in the console: `/kits/:name/replay`, every call a draft (or a saved
//! version) would have decided otherwise over the last week, paged; the editor's summary of
//! the same ([`ReplaySummary`], rendered on the server and put in place by the editor's
//! island); and the kit's shadow ([`ShadowPanel`]), whose differences follow the live stream
//! in the activity feed's island.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::replay::{ChangeRow, Effect, ReplayView, ShadowData, replay_kit};
use crate::api::session::encode_query_value;
use crate::components::common::{
    CARD, EmptyState, Loading, MoneyCell, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::kit_editor::DiffList;
use crate::pages::activity::ActivityTable;

const SMALL_BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

fn verdict_class(v: &str) -> &'static str {
    match v {
        "allow" => "text-emerald-700 dark:text-emerald-400",
        "park" => "text-amber-700 dark:text-amber-400",
        _ => "text-red-700 dark:text-red-400",
    }
}

/// What moved, in words: how many calls, by transition, and the money.
#[component]
pub fn EffectLines(effect: Effect, #[prop(into)] what: String) -> impl IntoView {
    let headline = if effect.changed == 0 {
        format!("{what}: none of {} calls would be decided otherwise.", effect.calls)
    } else {
        format!("{what}: {} of {} calls would be decided otherwise.", effect.changed, effect.calls)
    };
    let money = [
        ("spend that ran would be refused", effect.refused, "money-refused"),
        ("spend that ran would wait for a human", effect.parked, "money-parked"),
        ("spend refused or parked would run", effect.ran, "money-ran"),
    ];
    view! {
        <p class="text-sm" data-testid="effect-headline" data-changed=effect.changed data-calls=effect.calls>{headline}</p>
        <ul class="text-sm">
            {effect.transitions.into_iter().map(|t| view! {
                <li data-testid="transition" data-from=t.from.clone() data-to=t.to.clone()>
                    <span class=verdict_class(&t.from)>{t.from.clone()}</span>" → "<span class=verdict_class(&t.to)>{t.to.clone()}</span>
                    {format!(": {} call{}, {}", t.calls, if t.calls == 1 { "" } else { "s" }, t.amount)}
                </li>
            }).collect_view()}
        </ul>
        <dl class="grid grid-cols-3 gap-2 text-xs">
            {money.into_iter().map(|(label, amount, testid)| view! {
                <div><dt class="text-zinc-500 dark:text-zinc-400">{label}</dt><dd class="font-medium tabular-nums" data-testid=testid>{amount.to_string()}</dd></div>
            }).collect_view()}
        </dl>
    }
}

/// Changed calls: when, who, what, and the verdict before and after.
#[component]
pub fn ChangeTable(
    rows: Vec<ChangeRow>,
    #[prop(into)] before: String,
    #[prop(into)] after: String,
) -> impl IntoView {
    let side = |(v, detail): (String, Option<String>)| {
        let class = format!("font-medium {}", verdict_class(&v));
        view! { <span class=class>{v}</span>{detail.map(|d| view! { " "<code class="text-xs">{d}</code> })} }
    };
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="changes">
                <thead class=THEAD><tr>
                    <th class=TH>"#"</th><th class=TH>"When"</th><th class=TH>"Agent"</th><th class=TH>"Action"</th>
                    <th class=format!("{TH} text-right")>"Amount"</th><th class=TH>{before}</th><th class=TH>{after}</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|c| view! {
                        <tr class=TR data-testid="change" data-seq=c.seq>
                            <td class=format!("{TD} tabular-nums text-zinc-500 dark:text-zinc-400")>{c.seq}</td>
                            <td class=TD><Time rfc3339=c.at /></td>
                            <td class=TD title=c.agent_id>{c.agent}</td>
                            <td class=TD><code class="text-xs">{c.action}</code></td>
                            <td class=format!("{TD} text-right")><MoneyCell amount=Some(c.amount) /></td>
                            <td class=TD data-testid="was">{side(c.was)}</td>
                            <td class=TD data-testid="would-be">{side(c.would_be)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// The replay page's address for `kit_json` (a draft) of kit `kit`, after entry `after`.
fn replay_href(kit: &str, kit_json: &str, after: Option<i64>) -> String {
    let mut href =
        format!("/kits/{}/replay?kit_json={}", encode_query_value(kit), encode_query_value(kit_json));
    if let Some(a) = after {
        href.push_str(&format!("&after={a}"));
    }
    href
}

/// The editor's "Against the last 7 days": what moved, the first changed calls and a link to
/// all of them.
#[component]
pub fn ReplaySummary(view: ReplayView, kit_json: String) -> impl IntoView {
    let all = (view.effect.changed > 0).then(|| {
        let href = replay_href(&view.kit, &kit_json, None);
        let label = format!("All {} changed calls →", view.effect.changed);
        view! { <a class="text-sm underline" href=href target="_blank" data-testid="replay-all">{label}</a> }
    });
    let first = (!view.changes.is_empty())
        .then(|| view! { <ChangeTable rows=view.changes before="Was" after="Draft" /> });
    view! {
        <div class="space-y-2" data-testid="replay-summary">
            <EffectLines effect=view.effect what="Against the last 7 days" />
            {first}
            {all}
        </div>
    }
}

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
