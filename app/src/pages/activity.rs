//! The activity feed: every action, refusal and decision, newest first, with the state of the
//! tamper-evident chain. Filters by agent, kind, verdict and transport live in the URL (a plain GET form),
//! and older entries are a keyset page away. The first page is server-rendered from the log,
//! inside the [`ActivityTable`] island, which follows the live stream: on every row that
//! passes the filters it swaps in the page the server renders now. It can be paused and
//! resumed; a paused feed counts what arrived and shows it on resume.

use leptos::prelude::*;
use policy::activity::{Kind, Transport, Verdict};

use crate::api::activity::{ActivityRow, activity_feed};
use crate::components::common::{
    CARD, EmptyState, INPUT, Loading, MoneyCell, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time,
    show,
};

#[island]
pub(crate) fn ActivityTable(children: Children) -> impl IntoView {
    let root = NodeRef::<leptos::html::Div>::new();
    // Whether this page follows the stream (the newest page does, older ones do not); `None`
    // until the island has read it from the region.
    let follows = RwSignal::new(None::<bool>);
    let connected = RwSignal::new(None::<bool>);
    let paused = RwSignal::new(false);
    let waiting = RwSignal::new(0usize);
    let refresh = crate::components::live::refresher(root, || ());
    let on_row = refresh.clone();
    Effect::new(move |_| {
        let Some(region) = root.get().and_then(|r| r.query_selector("[data-swap]").ok().flatten()) else {
            return;
        };
        let filter = |name: &str| region.get_attribute(name).filter(|v| !v.is_empty());
        // The filters as the server rendered them (`as_str` of the typed filter it applied).
        let (agent, kind, verdict) = (filter("data-agent"), filter("data-kind"), filter("data-verdict"));
        let transport = filter("data-transport");
        let live = region.get_attribute("data-live").as_deref() == Some("true");
        follows.set(Some(live));
        if !live {
            return;
        }
        let refresh = on_row.clone();
        crate::components::live::subscribe(
            move |e| {
                let wanted = agent.as_ref().is_none_or(|a| e.agent.as_ref() == Some(a))
                    && kind.as_ref().is_none_or(|k| &e.kind == k)
                    && verdict.as_ref().is_none_or(|v| e.verdict.as_ref() == Some(v))
                    && transport.as_ref().is_none_or(|t| e.transport.as_ref() == Some(t));
                if !wanted {
                    return;
                }
                if paused.get_untracked() {
                    waiting.update(|n| *n += 1);
                } else {
                    refresh();
                }
            },
            move |up| connected.set(Some(up)),
        );
    });
    let toggle = move |_| {
        if paused.get_untracked() && waiting.get_untracked() > 0 {
            waiting.set(0);
            refresh();
        }
        paused.update(|p| *p = !*p);
    };
    view! {
        <div node_ref=root>
            <div class="mb-2 flex items-center gap-3 text-sm" hidden=move || follows.get() == Some(false)>
                <button type="button" data-testid="pause" on:click=toggle
                    class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">
                    {move || if paused.get() { "Resume" } else { "Pause" }}
                </button>
                <span data-testid="live-state" class="text-xs text-zinc-500 dark:text-zinc-400">
                    {move || match (connected.get(), paused.get()) {
                        (None, _) => "showing the log; live updates need JavaScript".to_string(),
                        (Some(false), _) => "reconnecting…".to_string(),
                        (Some(true), false) => "live".to_string(),
                        (Some(true), true) => format!("paused · {} new", waiting.get()),
                    }}
                </span>
            </div>
            {children()}
        </div>
    }
}

/// The feed's live region: what the island swaps in, with the filters it follows.
#[component]
fn ActivityRows(
    rows: Vec<ActivityRow>,
    live: bool,
    agent: String,
    kind: String,
    verdict: String,
    transport: String,
) -> impl IntoView {
    let body = if rows.is_empty() {
        view! { <EmptyState title="No activity recorded yet" detail="Each call agents make through the gateway, allowed, parked or refused, is appended here with its verdict and amount." /> }.into_any()
    } else {
        view! {
            <div class=CARD tabindex="0">
                <table class=TABLE data-testid="activity-table">
                    <thead class=THEAD>
                        <tr>
                            <th class=TH>"#"</th>
                            <th class=TH>"When"</th>
                            <th class=TH>"Agent"</th>
                            <th class=TH>"Kind"</th>
                            <th class=TH>"Action"</th>
                            <th class=TH>"Verdict"</th>
                            <th class=format!("{TH} text-right")>"Amount"</th>
                            <th class=TH>"By"</th>
                            <th class=TH>"Via"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {rows.into_iter().map(|r| view! { <ActivityLine r /> }).collect_view()}
                    </tbody>
                </table>
            </div>
        }
        .into_any()
    };
    view! {
        <div data-swap="activity" data-live=live.to_string() data-agent=agent data-kind=kind data-verdict=verdict data-transport=transport>
            {body}
        </div>
    }
}

#[component]
fn ActivityLine(r: ActivityRow) -> impl IntoView {
    let (k, v) = (r.kind.as_str(), r.verdict.map_or("", Verdict::as_str));
    let via = r.transport.map_or("", Transport::as_str);
    view! {
        <tr class=TR data-kind=k data-verdict=v data-transport=via data-seq=r.seq>
            <td class=format!("{TD} tabular-nums text-zinc-500 dark:text-zinc-400")>{r.seq}</td>
            <td class=TD><Time rfc3339=r.at /></td>
            <td class=TD title=r.agent_id>{r.agent.unwrap_or_else(|| "—".into())}</td>
            <td class=TD>{r.kind.as_str()}</td>
            <td class=TD>
                <code class="text-xs">{r.action.unwrap_or_default()}</code>
                {r.connector.map(|c| { let tag = c.clone(); view! { " "<span class="rounded bg-zinc-100 px-1 text-xs text-zinc-700 dark:bg-zinc-800 dark:text-zinc-200" data-connector=tag>{c}</span> } })}
            </td>
            <td class=TD>{r.verdict.map(|v| view! { <StatusBadge status=v.as_str() /> })}</td>
            <td class=format!("{TD} text-right")><MoneyCell amount=r.amount /></td>
            <td class=format!("{TD} text-xs text-zinc-500 dark:text-zinc-400") title=r.actor_id>{r.actor}</td>
            <td class=format!("{TD} text-xs text-zinc-500 dark:text-zinc-400")>{r.transport.map_or("—", Transport::as_str)}</td>
        </tr>
    }
}

/// The values a filter offers, from the types themselves, so a new kind or verdict is offered
/// the day it is written.
fn options<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|v| name(*v).to_string()).collect()
}

#[component]
pub fn ActivityPage() -> impl IntoView {
    let query = leptos_router::hooks::use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(
        move || {
            (get("agent"), get("kind"), get("verdict"), get("transport"), get("before").parse::<i64>().ok())
        },
        |(a, k, v, t, b)| activity_feed(a, k, v, t, b),
    );
    let select = move |name: &'static str, label: &'static str, options: Vec<String>| {
        view! {
            <label class="flex flex-col">
                <span class="text-xs text-zinc-500 dark:text-zinc-400">{label}</span>
                <select name=name class=INPUT>
                    <option value="">"any"</option>
                    {options.into_iter().map(|o| {
                        let selected = get(name) == o;
                        view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
    };
    view! {
        <PageHeader title="Activity" subtitle="Every tool call, spend and decision, newest first." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let before_none = get("before").is_empty();
                show(data.await, move |feed| {
                    let (ok, checked) = (feed.chain_ok.to_string(), feed.chain_checked.to_string());
                    let chain = if feed.chain_ok {
                        view! { <p class="mb-3 text-sm text-emerald-700 dark:text-emerald-400" data-testid="chain-status" data-chain-ok=ok data-chain-checked=checked>{format!("✓ chain verified · {} entries ({} new since the last look)", feed.chain_entries, feed.chain_checked)}</p> }.into_any()
                    } else {
                        view! { <p class="mb-3 text-sm font-medium text-red-700 dark:text-red-400" data-testid="chain-status" data-chain-ok=ok data-chain-checked=checked>{format!("✗ chain broken at entry {}", feed.first_broken.unwrap_or_default())}</p> }.into_any()
                    };
                    let filters = view! {
                        <form method="get" action="/activity" class="mb-3 flex flex-wrap items-end gap-2 text-sm" data-testid="activity-filters">
                            {select("agent", "Agent", feed.agents.clone())}
                            {select("kind", "Kind", options(Kind::ALL, Kind::as_str))}
                            {select("verdict", "Verdict", options(Verdict::ALL, Verdict::as_str))}
                            {select("transport", "Via", options(Transport::ALL, Transport::as_str))}
                            <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
                            <a href="/activity" class="px-1 py-1 text-zinc-500 underline dark:text-zinc-400">"Clear"</a>
                        </form>
                    };
                    let older = feed.older.map(|b| view! {
                        <a class="mt-2 inline-block text-sm underline" data-testid="older"
                            href=format!("/activity?agent={}&kind={}&verdict={}&transport={}&before={b}", get("agent"), get("kind"), get("verdict"), get("transport"))>"Older entries →"</a>
                    });
                    view! {
                        {chain}
                        {filters}
                        <ActivityTable>
                            <ActivityRows rows=feed.rows live=before_none agent=get("agent") kind=get("kind") verdict=get("verdict") transport=get("transport") />
                        </ActivityTable>
                        {older}
                    }.into_any()
                })
            })}
        </Suspense>
    }
}
