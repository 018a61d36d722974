//! What a replay (or a shadow) decided otherwise, as the console shows it: the view models the
//! replay server functions answer with, and the summary, the totals and the table of changed
//! calls that the kit editor, the replay page and the shadow panel render. Below the pages and
//! the server functions alike: the editor's summary is rendered by a server function and put
//! in place by its island, the page renders the same parts.

use leptos::prelude::*;
use policy::Money;
use serde::{Deserialize, Serialize};

use crate::api::session::encode_query_value;
use crate::components::common::{CARD, MoneyCell, TABLE, TD, TH, THEAD, TR, Time};

/// How many days the editor's replay reads.
pub const EDITOR_DAYS: i64 = 7;
/// How many changed calls the editor's summary lists; the replay page lists more.
pub const EDITOR_CHANGES: usize = 5;
/// How many changed calls one page of the replay page lists.
pub const PAGE_CHANGES: usize = 50;

/// One call decided otherwise, as the console shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeRow {
    pub seq: i64,
    pub at: String,
    pub agent: String,
    pub agent_id: Option<String>,
    pub action: String,
    pub amount: Money,
    /// `allow`, `park` or `deny`, and the detail of a refusal or park.
    pub was: (String, Option<String>),
    pub would_be: (String, Option<String>),
}

/// Calls moved from one verdict to another, and their money.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransitionRow {
    pub from: String,
    pub to: String,
    pub calls: u64,
    pub amount: Money,
}

/// What a draft (replayed) or a shadow (live) decided otherwise, in total.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub calls: u64,
    pub changed: u64,
    pub transitions: Vec<TransitionRow>,
    /// Spend that ran and would be refused; that ran and would park; refused or parked and would run.
    pub refused: Money,
    pub parked: Money,
    pub ran: Money,
}

/// A replay as the console shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayView {
    pub kit: String,
    pub from: String,
    pub to: String,
    pub effect: Effect,
    pub changes: Vec<ChangeRow>,
    pub next: Option<i64>,
}

pub(crate) fn verdict_class(v: &str) -> &'static str {
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
pub(crate) fn replay_href(kit: &str, kit_json: &str, after: Option<i64>) -> String {
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
