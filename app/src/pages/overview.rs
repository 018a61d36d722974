//! The overview (`/overview`, where an admin lands): what needs the signed-in user now, each
//! count linking to the view that holds the items. Server-rendered; an island re-renders it
//! from the server whenever the tenant's activity moves.

use leptos::prelude::*;

use crate::api::overview::{CapRow, Health, NeedsMe, StoppedRow, needs_me_view};
use crate::components::common::{CARD, Loading, PageHeader, Time, show};

#[island]
fn LiveOverview(children: Children) -> impl IntoView {
    let root = NodeRef::<leptos::html::Div>::new();
    let live = RwSignal::new(false);
    Effect::new(move |_| {
        let refresh = crate::components::live::refresher(root, || ());
        crate::components::live::subscribe(move |_| refresh(), move |up| live.set(up));
    });
    view! {
        <div node_ref=root data-testid="overview-live" data-live=move || live.get().to_string()>
            {children()}
        </div>
    }
}

#[component]
pub fn OverviewPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| needs_me_view());
    view! {
        <PageHeader title="Overview" subtitle="What needs you now. Each count opens the view that holds it." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |n| view! { <LiveOverview><div data-swap="overview">{sections(n)}</div></LiveOverview> })
            })}
        </Suspense>
    }
}

fn sections(n: NeedsMe) -> impl IntoView {
    view! {
        <div class="grid gap-4 md:grid-cols-2">
            {n.approvals.map(|(count, soonest)| view! {
                <Tile testid="needs-approvals" title="Approvals waiting for you" href="/" count=count
                    none="Nothing to decide: no parked action waits for you.">
                    {soonest.map(|t| view! { <p class="text-sm">"Soonest expires " <Time rfc3339=t /></p> })}
                </Tile>
            })}
            {n.proposals.map(|(pending, parked)| view! {
                <Tile testid="needs-proposals" title="Proposals waiting for a reviewer" href="/proposals?status=pending" count=pending + parked
                    none="No claim waits for review.">
                    <p class="text-sm">
                        <a class="underline" href="/proposals?status=pending">{format!("{pending} pending")}</a>
                        " · "
                        <a class="underline" href="/proposals?status=parked">{format!("{parked} accepted by an agent, waiting for a human")}</a>
                    </p>
                </Tile>
            })}
            {n.caps.map(|caps| view! {
                <Tile testid="needs-caps" title="Profiles at or near a soft cap" href="/spend" count=caps.len() as u64
                    none="Every profile is below 80 % of its soft cap.">
                    <ul class="text-sm">{caps.into_iter().map(cap_line).collect_view()}</ul>
                </Tile>
            })}
            {n.stopped.map(|stopped| view! {
                <Tile testid="needs-runtimes" title="Agent runtimes stopped" href="/profiles?runtime=stopped" count=stopped.len() as u64
                    none="Every active agent's runtime is running.">
                    <ul class="text-sm">{stopped.into_iter().map(stopped_line).collect_view()}</ul>
                </Tile>
            })}
            {n.health.map(health)}
            <section class=format!("{CARD} p-4") data-testid="needs-chain">
                <h2 class="text-sm font-semibold">"Audit chain"</h2>
                {match n.chain {
                    (true, entries) => view! { <p class="mt-1 text-sm"><a class="underline" href="/activity">{format!("✓ intact: {entries} entries verified")}</a></p> }.into_any(),
                    (false, _) => view! { <p class="mt-1 text-sm font-medium text-red-700 dark:text-red-400"><a class="underline" href="/activity">"✗ broken: open the activity feed to see where"</a></p> }.into_any(),
                }}
            </section>
        </div>
    }
}

/// One count: a heading, the number linking to its view (or what it means that there is
/// none), and details.
#[component]
fn Tile(
    testid: &'static str,
    title: &'static str,
    href: &'static str,
    count: u64,
    none: &'static str,
    children: Children,
) -> impl IntoView {
    view! {
        <section class=format!("{CARD} p-4") data-testid=testid data-count=count.to_string()>
            <h2 class="text-sm font-semibold">{title}</h2>
            {if count == 0 {
                view! { <p class="mt-1 text-sm text-zinc-600 dark:text-zinc-400">{none}</p> }.into_any()
            } else {
                view! { <p class="mt-1"><a class="text-2xl font-semibold tabular-nums underline-offset-2 hover:underline" href=href>{count.to_string()}</a></p> }.into_any()
            }}
            <div class="mt-1">{children()}</div>
        </section>
    }
}

fn cap_line(c: CapRow) -> impl IntoView {
    let state = if c.over { "over" } else { "near" };
    view! {
        <li data-cap=state>
            <a class="underline" href=format!("/spend?profile={}", c.id)>{c.profile}</a>
            {format!(": {} of a {} soft cap ({state})", c.used, c.soft_cap)}
        </li>
    }
}

fn stopped_line(s: StoppedRow) -> impl IntoView {
    let why = s.reason.map(|r| format!(": {r}")).unwrap_or_default();
    view! {
        <li data-stopped=s.id.clone()>
            <a class="underline" href=format!("/profiles/{}", s.id)>{s.profile}</a>
            {why}
        </li>
    }
}

/// `secs` as people read a wait: `45s`, `12m`, `3h 20m`, `2d 4h`.
fn wait(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h {}m", s / 3_600, s % 3_600 / 60),
        s => format!("{}d {}h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// The admin's health figures: the outbox, the oldest waiting approval, connector errors.
fn health(h: Health) -> impl IntoView {
    let outbox = match h.outbox_oldest_secs {
        Some(s) => format!("{} queued, the oldest for {}", h.outbox_depth, wait(s)),
        None => "nothing queued".to_string(),
    };
    let approval =
        h.oldest_approval_secs.map_or("none waiting".to_string(), |s| format!("waiting {}", wait(s)));
    view! {
        <section class=format!("{CARD} p-4") data-testid="health">
            <h2 class="text-sm font-semibold">"Health"</h2>
            <dl class="mt-1 grid grid-cols-[auto_1fr] gap-x-3 text-sm">
                <dt>"Outbox"</dt>
                <dd data-testid="health-outbox" data-count=h.outbox_depth.to_string()><a class="underline" href="/runtime">{outbox}</a></dd>
                <dt>"Oldest approval"</dt>
                <dd data-testid="health-approval" data-secs=h.oldest_approval_secs.unwrap_or(-1).to_string()><a class="underline" href="/">{approval}</a></dd>
                <dt>"Connector errors, last hour"</dt>
                <dd data-testid="health-connector-errors" data-count=h.connector_errors_last_hour.to_string()><a class="underline" href="/activity?verdict=unavailable">{h.connector_errors_last_hour.to_string()}</a></dd>
            </dl>
        </section>
    }
}
