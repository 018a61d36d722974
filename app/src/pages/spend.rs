//! Spend (`/spend`): each profile's posted and pending spend against its caps as one bar (the
//! soft cap marked), its burn rate and when it would reach its cap; and, for a chosen
//! profile, its spend per day as a server-rendered chart and its ledger entries with a period filter,
//! keyset pages and a CSV export of exactly the filtered entries. Filters live in the URL and
//! are plain GET forms, so the page works without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use policy::Money;

use crate::api::spend::{
    BURN_WINDOW_DAYS, CalendarView, DayPoint, PeriodBar, PeriodRow, SpendRow, ledger_page, spend_overview,
    tenant_calendar,
};
use crate::components::common::{
    CARD, EmptyState, FormOutcome, INPUT, Loading, MoneyCell, PageHeader, TABLE, TD, TH, THEAD, TR, Time,
    show,
};

fn pct(part: Money, whole: i64) -> f64 {
    if whole <= 0 { 0.0 } else { (part.units() as f64 / whole as f64 * 100.0).clamp(0.0, 100.0) }
}

/// Posted, then pending, against the hard cap, with the soft cap as a marker. A profile with
/// no hard cap of its own has nothing to fill, so it gets words instead of a bar.
#[component]
fn SpendBar(row: SpendRow) -> impl IntoView {
    let Some(cap) = row.hard_cap else {
        let title = format!("posted {} · pending {} · no hard cap of its own", row.posted, row.pending);
        return view! {
            <span class="text-xs text-zinc-600 dark:text-zinc-400" title=title data-testid="no-cap"
                data-posted=row.posted.to_decimal_string() data-pending=row.pending.to_decimal_string()>"no cap of its own"</span>
        }
        .into_any();
    };
    let whole = cap.units().max(1);
    let posted = pct(row.posted, whole);
    let pending = pct(row.pending, whole).min(100.0 - posted);
    let soft = row.soft_cap.map(|s| pct(s, whole));
    let title = format!("posted {} · pending {} · hard cap {cap}", row.posted, row.pending);
    view! {
        <div class="relative h-3 w-48 overflow-hidden rounded bg-zinc-100 dark:bg-zinc-800" title=title data-testid="spend-bar"
            data-posted=row.posted.to_decimal_string() data-pending=row.pending.to_decimal_string()>
            <div class="absolute inset-y-0 left-0 bg-zinc-800 dark:bg-zinc-200" style=format!("width: {posted:.2}%")></div>
            <div class="absolute inset-y-0 bg-amber-400/80" style=format!("left: {posted:.2}%; width: {pending:.2}%")></div>
            {soft.map(|s| view! { <div class="absolute inset-y-0 w-0.5 bg-red-500" style=format!("left: {s:.2}%") title="soft cap"></div> })}
        </div>
    }
    .into_any()
}

/// When the hard cap is reached at the current burn rate, in words.
fn to_cap(r: &SpendRow) -> String {
    match (r.hard_cap, r.days_to_cap) {
        (None, _) => "no cap".into(),
        (Some(_), None) => "not at this rate".into(),
        (Some(_), Some(d)) if d < 1.0 => "within a day".into(),
        (Some(_), Some(d)) if d < 365.0 => format!("in about {} days", d.round() as i64),
        (Some(_), Some(_)) => "over a year away".into(),
    }
}

/// Posted spend per day as bars, server-rendered SVG; each bar names its day and amount.
#[component]
fn SpendChart(points: Vec<DayPoint>) -> impl IntoView {
    const W: f64 = 600.0;
    const H: f64 = 120.0;
    let max = points.iter().map(|p| p.posted.units()).max().unwrap_or(0).max(1);
    let slot = W / points.len().max(1) as f64;
    let total = points.iter().fold(Money::ZERO, |a, p| a.checked_add(p.posted).unwrap_or(a));
    let (first, last) = (
        points.first().map(|p| p.day.clone()).unwrap_or_default(),
        points.last().map(|p| p.day.clone()).unwrap_or_default(),
    );
    let peak = Money::from_units(max).unwrap_or(Money::ZERO);
    let label = format!("posted spend per day from {first} to {last}");
    view! {
        <figure class="mb-4" data-testid="spend-chart">
            <figcaption class="mb-1 text-xs text-zinc-500 dark:text-zinc-400">{format!("Posted per day, last {} days: {total} in all, peak {peak}", points.len())}</figcaption>
            <svg viewBox=format!("0 0 {W} {}", H + 16.0) class="h-36 w-full max-w-2xl text-zinc-800 dark:text-zinc-200" role="img"
                aria-label=label>
                <line x1="0" y1=H x2=W y2=H stroke="currentColor" stroke-opacity="0.2" />
                {points.into_iter().enumerate().map(|(i, p)| {
                    let h = (p.posted.units() as f64 / max as f64 * (H - 4.0)).max(if p.posted.is_zero() { 0.0 } else { 1.0 });
                    view! {
                        <rect x=format!("{:.1}", i as f64 * slot + 1.0) y=format!("{:.1}", H - h) width=format!("{:.1}", (slot - 2.0).max(1.0)) height=format!("{h:.1}")
                            fill="currentColor" fill-opacity="0.75" data-day=p.day.clone() data-posted=p.posted.to_decimal_string()>
                            <title>{format!("{}: {}", p.day, p.posted)}</title>
                        </rect>
                    }
                }).collect_view()}
                <text x="0" y=H + 13.0 font-size="10" fill="currentColor" fill-opacity="0.6">{first}</text>
                <text x=W y=H + 13.0 font-size="10" fill="currentColor" fill-opacity="0.6" text-anchor="end">{last}</text>
            </svg>
        </figure>
    }
}

/// One period limit of one profile: this period against its caps, what is left, the burn
/// rate and when the cap would be reached at it, and the periods before beside it as bars
/// against the cap (server-rendered SVG).
#[component]
fn PeriodCard(profile: String, p: PeriodRow) -> impl IntoView {
    let cap = p.hard_cap.or(p.soft_cap);
    let bars: Vec<(PeriodBar, bool)> =
        p.previous.iter().cloned().map(|b| (b, false)).chain([(p.current.clone(), true)]).collect();
    let scale =
        bars.iter().map(|(b, _)| b.used.units()).chain(cap.map(Money::units)).max().unwrap_or(0).max(1);
    const W: f64 = 240.0;
    const H: f64 = 80.0;
    let slot = W / bars.len() as f64;
    let aria = format!("this {} against the {} before it", p.label, bars.len() - 1);
    let y = |units: i64| H - units as f64 / scale as f64 * (H - 4.0);
    let caps = match (p.hard_cap, p.soft_cap) {
        (Some(h), Some(s)) => format!("hard cap {h}, soft cap {s}"),
        (Some(h), None) => format!("hard cap {h}"),
        (None, Some(s)) => format!("soft cap {s}"),
        (None, None) => String::new(),
    };
    let reached = match &p.cap_reached_at {
        Some(t) => {
            view! { <span>"at this rate the cap is reached " <Time rfc3339=t.clone() /></span> }.into_any()
        }
        None => view! { <span>"at this rate the cap holds this "{p.label.clone()}</span> }.into_any(),
    };
    view! {
        <div class="rounded-lg border border-zinc-200 p-3 text-sm dark:border-zinc-800" data-testid="period-card"
            data-profile=profile.clone() data-every=p.every.clone() data-used=p.current.used.to_decimal_string()
            data-cap=p.hard_cap.map(|c| c.to_decimal_string()).unwrap_or_default()>
            <p class="font-semibold">{format!("{profile} · this {} ({} to {})", p.label, p.current.first_day, p.current.end_day)}</p>
            <p data-testid="period-used">{format!("{} of {caps}", p.current.used)}{p.left.map(|l| format!(" · {l} left"))}</p>
            <p class="text-xs text-zinc-500 dark:text-zinc-400">
                {format!("{} pending · burn {} / day · ", p.pending, p.burn_per_day)}{reached}
                " · starts again from zero " <Time rfc3339=p.resets_at.clone() />
            </p>
            <svg viewBox=format!("0 0 {W} {}", H + 14.0) class="mt-2 h-24 w-full max-w-xs text-zinc-800 dark:text-zinc-200" role="img"
                aria-label=aria>
                {bars.into_iter().enumerate().map(|(i, (b, now))| {
                    let top = y(b.used.units());
                    view! {
                        <rect x=format!("{:.1}", i as f64 * slot + 4.0) y=format!("{top:.1}") width=format!("{:.1}", slot - 8.0) height=format!("{:.1}", H - top)
                            fill="currentColor" fill-opacity=if now { "0.85" } else { "0.35" }
                            data-testid=if now { "period-bar-current" } else { "period-bar-previous" } data-first-day=b.first_day.clone() data-used=b.used.to_decimal_string()>
                            <title>{format!("{} to {}: {}", b.first_day, b.end_day, b.used)}</title>
                        </rect>
                        <text x=format!("{:.1}", i as f64 * slot + slot / 2.0) y=H + 11.0 font-size="9" text-anchor="middle" fill="currentColor" fill-opacity="0.6">
                            {b.first_day.get(5..).unwrap_or_default().to_string()}
                        </text>
                    }
                }).collect_view()}
                {cap.map(|c| view! { <line x1="0" x2=W y1=format!("{:.1}", y(c.units())) y2=format!("{:.1}", y(c.units())) stroke="rgb(239 68 68)" stroke-dasharray="4 2"><title>{format!("cap {c}")}</title></line> })}
            </svg>
        </div>
    }
}

/// The zone budget periods count in, a change waiting for midnight, and (for admins) the form
/// that changes it.
#[component]
fn Calendar(c: CalendarView) -> impl IntoView {
    view! {
        <section class="mb-4 flex flex-wrap items-end gap-3 text-sm" data-testid="calendar">
            <p>"Days, weeks and months count in " <strong data-testid="time-zone">{c.time_zone.clone()}</strong>
                {c.next_time_zone.map(|z| view! { " · changing to " <strong>{z}</strong> " at " <Time rfc3339=c.changes_at.unwrap_or_default() /> })}
            </p>
            {c.can_edit.then(|| view! {
                <form method="post" action="/api/save_time_zone" class="flex items-end gap-2">
                    <label class="flex flex-col">
                        <span class="text-xs text-zinc-500 dark:text-zinc-400">"Time zone (IANA, such as Europe/Berlin)"</span>
                        <input name="time_zone" value=c.time_zone required maxlength="64" class=INPUT data-testid="time-zone-input" />
                    </label>
                    <button type="submit" class="rounded border border-zinc-300 px-3 py-1 dark:border-zinc-700">"Change at midnight"</button>
                </form>
            })}
        </section>
    }
}

/// Every period limit of every profile, if any profile has one.
#[component]
fn PeriodCards(rows: Vec<SpendRow>) -> impl IntoView {
    let cards: Vec<(String, PeriodRow)> =
        rows.into_iter().flat_map(|r| r.periods.into_iter().map(move |p| (r.profile.clone(), p))).collect();
    (!cards.is_empty()).then(|| view! {
        <section class="mt-6" data-testid="periods">
            <h2 class="mb-2 text-sm font-semibold">"This period against each cap"</h2>
            <p class="mb-2 text-xs text-zinc-500 dark:text-zinc-400">"Days, weeks and months in the tenant's time zone; each bar beside is a period before."</p>
            <div class="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
                {cards.into_iter().map(|(profile, p)| view! { <PeriodCard profile p /> }).collect_view()}
            </div>
        </section>
    })
}

#[component]
pub fn SpendPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(|| (), |_| spend_overview());
    let calendar = Resource::new(|| (), |_| tenant_calendar());
    view! {
        <PageHeader title="Spend" subtitle="Posted and pending spend per agent profile against its caps. Real spend and platform credits count against one combined hard cap; sub-agents share their parent's." />
        <FormOutcome />
        <Suspense fallback=Loading>
            // A viewer the page refuses sees its one refusal, from the table below.
            {move || Suspend::new(async move { calendar.await.ok().map(|c| view! { <Calendar c /> }) })}
        </Suspense>
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! { <EmptyState title="No profiles spend yet" detail="Each agent profile's budget appears here once it exists." /> }.into_any();
                    }
                    let periods = rows.clone();
                    view! {
                        <div class=CARD tabindex="0">
                            <table class=TABLE data-testid="spend-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Profile"</th>
                                        <th class=TH>"Kit"</th>
                                        <th class=TH>"Spend against cap"</th>
                                        <th class=format!("{TH} text-right")>"Posted"</th>
                                        <th class=format!("{TH} text-right")>"Pending"</th>
                                        <th class=format!("{TH} text-right")>"Hard cap"</th>
                                        <th class=format!("{TH} text-right")>"Soft cap"</th>
                                        <th class=format!("{TH} text-right")>"Approve at or above"</th>
                                        <th class=format!("{TH} text-right") title=format!("average posted per day over the last {BURN_WINDOW_DAYS} days")>"Burn / day"</th>
                                        <th class=format!("{TH} text-right")>"Cap reached"</th>
                                        <th class=TH></th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|r| view! {
                                        <tr class=TR data-profile=r.profile.clone()>
                                            <td class=TD>
                                                <span style=format!("padding-left: {}rem", r.depth as f32 * 1.25)>
                                                    {(r.depth > 0).then_some("↳ ")}{r.profile.clone()}
                                                </span>
                                            </td>
                                            <td class=TD>{r.kit_name.clone()}</td>
                                            <td class=TD><SpendBar row=r.clone() /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=Some(r.posted) /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=Some(r.pending) /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.hard_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.soft_cap /></td>
                                            <td class=format!("{TD} text-right")><MoneyCell amount=r.approve_above /></td>
                                            <td class=format!("{TD} text-right tabular-nums") data-testid="burn">{r.burn_per_day.to_string()}</td>
                                            <td class=format!("{TD} text-right text-xs") data-testid="to-cap">{to_cap(&r)}</td>
                                            <td class=TD><a class="text-xs underline" href=format!("/spend?profile={}", r.id)>"Ledger"</a></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </div>
                        <PeriodCards rows=periods />
                    }.into_any()
                })
            })}
        </Suspense>
        {move || (!get("profile").is_empty()).then(|| view! { <Ledger /> })}
    }
}

/// The chosen profile's ledger, with the period filter and the CSV export of it.
#[component]
fn Ledger() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let data = Resource::new(
        move || (get("profile"), get("from"), get("to"), get("after").parse::<i64>().ok()),
        |(p, f, t, a)| ledger_page(p, f, t, a),
    );
    let export =
        move || format!("/spend/export.csv?profile={}&from={}&to={}", get("profile"), get("from"), get("to"));
    view! {
        <section class="mt-6" data-testid="ledger">
            <form method="get" action="/spend" class="mb-3 flex flex-wrap items-end gap-2 text-sm">
                <input type="hidden" name="profile" value=move || get("profile") />
                <label class="flex flex-col">
                    <span class="text-xs text-zinc-500 dark:text-zinc-400">"From (UTC day)"</span>
                    <input type="date" name="from" value=move || get("from") class=INPUT />
                </label>
                <label class="flex flex-col">
                    <span class="text-xs text-zinc-500 dark:text-zinc-400">"To (UTC day, exclusive)"</span>
                    <input type="date" name="to" value=move || get("to") class=INPUT />
                </label>
                <button type="submit" class="rounded bg-zinc-900 px-3 py-1 text-white dark:bg-zinc-100 dark:text-zinc-900">"Filter"</button>
                <a href=export class="px-1 py-1 underline" data-testid="export-csv" download>"Export CSV"</a>
            </form>
            <Suspense fallback=Loading>
                {move || Suspend::new(async move {
                    show(data.await, move |l| view! {
                        <h2 class="mb-2 text-sm font-semibold">"Ledger of " {l.profile}</h2>
                        <SpendChart points=l.chart />
                        {if l.rows.is_empty() {
                            view! { <EmptyState title="No entries in this period" detail="Every hold, post, void and expiry of this profile's budget is an entry here." /> }.into_any()
                        } else {
                            view! {
                                <div class=CARD tabindex="0">
                                    <table class=TABLE data-testid="ledger-table">
                                        <thead class=THEAD>
                                            <tr>
                                                <th class=TH>"#"</th>
                                                <th class=TH>"When"</th>
                                                <th class=TH>"Action"</th>
                                                <th class=TH>"Kind"</th>
                                                <th class=format!("{TH} text-right")>"Pending Δ"</th>
                                                <th class=format!("{TH} text-right")>"Posted Δ"</th>
                                            </tr>
                                        </thead>
                                        <tbody>
                                            {l.rows.into_iter().map(|e| view! {
                                                <tr class=TR data-seq=e.seq.to_string()>
                                                    <td class=TD>{e.seq}</td>
                                                    <td class=TD><Time rfc3339=e.at /></td>
                                                    <td class=TD><code class="text-xs">{e.action}</code></td>
                                                    <td class=TD>{e.kind}</td>
                                                    <td class=format!("{TD} text-right tabular-nums")>{e.pending_delta}</td>
                                                    <td class=format!("{TD} text-right tabular-nums")>{e.posted_delta}</td>
                                                </tr>
                                            }).collect_view()}
                                        </tbody>
                                    </table>
                                </div>
                            }.into_any()
                        }}
                        {l.next.map(|n| view! {
                            <a class="mt-2 inline-block text-sm underline" data-testid="next-page"
                                href=format!("/spend?profile={}&from={}&to={}&after={n}", get("profile"), get("from"), get("to"))>"Next page →"</a>
                        })}
                    })
                })}
            </Suspense>
        </section>
    }
}
