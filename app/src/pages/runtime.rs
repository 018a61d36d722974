//! Runtime (`/runtime`, admins only): the team runtime (which one, whether it is claimed,
//! reachable now or when last seen) and its registration; the outbox of runtime commands
//! (queued, delivered, rejected, dead letters with a Retry button); the webhook endpoints
//! that tell approvers and operators what happened, with a "Send test event" button, and
//! their deliveries; the log streams to a SIEM ([`crate::pages::streams`]); and the Slack
//! app that posts parked calls to the tenant's channels (docs/slack.md). Every form is a
//! plain post, so the page works without JavaScript.

use leptos::prelude::*;

use crate::api::runtime::{BacklogRow, DeliveryRow, EndpointRow, RuntimeData, RuntimeView, runtime_page};
use crate::api::slack::SlackView;
use crate::components::common::{
    CARD, EmptyState, FormOutcome, INPUT, Loading, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::secret::SecretOnce;
use crate::pages::archive::ArchiveSection;
use crate::pages::streams::StreamsSection;

const BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";
const PRIMARY: &str =
    "rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900";
const PANEL: &str = "mt-6 max-w-3xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";
const LABEL: &str = "text-zinc-600 dark:text-zinc-300";
const FIELD: &str = "flex min-w-0 max-w-full flex-col text-sm";
const NOTE: &str = "mb-3 text-sm text-zinc-600 dark:text-zinc-300";

fn control() -> String {
    format!("{INPUT} max-w-full")
}

#[component]
pub fn RuntimePage() -> impl IntoView {
    let query = leptos_router::hooks::use_query_map();
    let data = Resource::new(move || query.read().get("issued"), runtime_page);
    view! {
        <PageHeader title="Runtime" subtitle="The team runtime agents read and command through the teams tools, the outbox that carries their commands and your notifications, and the webhooks that tell people what happened." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move { show(data.await, |d: RuntimeData| view! { <Runtime d /> }) })}
        </Suspense>
    }
}

#[component]
fn Runtime(d: RuntimeData) -> impl IntoView {
    // A secret just issued belongs to a webhook or to a log stream (`lst_…`).
    let (stream_secret, webhook_secret) = match d.new_secret {
        Some((id, s)) if id.starts_with("lst_") => (Some((id, s)), None),
        other => (None, other),
    };
    view! {
        <h2 class="mb-2 text-base font-semibold">"Team runtime"</h2>
        {match d.runtime.clone() {
            Some(r) => view! { <RuntimeCard r /> }.into_any(),
            None => view! { <EmptyState title="No runtime registered" detail="Register your team runtime's control wire below. Until then the teams tools answer that none is registered, and nothing is queued." /> }.into_any(),
        }}
        <RegisterForm registered=d.runtime.is_some() />
        <h2 class="mt-8 mb-2 text-base font-semibold">"Outbox: what waits"</h2>
        <p class=NOTE>"Each destination has one queue, delivered in order. A queue at its bound refuses new runtime commands (agents are told to wait) and keeps new webhook messages as dead letters. Purge a queue whose destination is gone for good: its rows are never sent."</p>
        <BacklogTable rows=d.backlogs />
        <h2 class="mt-8 mb-2 text-base font-semibold">"Outbox: runtime commands"</h2>
        <p class=NOTE>"Comments and unblocks wait here until the runtime has them, in order. A command the runtime refused is rejected; one that never got an answer within the attempt limit is a dead letter you can retry."</p>
        <DeliveryTable rows=d.commands testid="commands-table" what="command" key_label="Task" />
        <h2 class="mt-8 mb-2 text-base font-semibold">"Webhooks"</h2>
        <p class=NOTE>"Endpoints that are told when something needs a person or happened: signed the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature)."</p>
        {webhook_secret.map(|(id, secret)| view! {
            <section role="status" data-testid="secret-once" class="mb-4 rounded-lg border border-emerald-300 bg-emerald-50 p-3 dark:border-emerald-800 dark:bg-emerald-950">
                <p class="mb-2 text-sm font-medium">{format!("Signing secret of {id} — copy it now into the receiver. It is shown only this once.")}</p>
                <SecretOnce token=secret />
            </section>
        })}
        <EndpointTable endpoints=d.webhooks />
        <WebhookForm events=d.events />
        <h2 class="mt-8 mb-2 text-base font-semibold">"Webhook deliveries"</h2>
        <DeliveryTable rows=d.deliveries testid="deliveries-table" what="message" key_label="Endpoint" />
        <StreamsSection streams=d.streams new_secret=stream_secret />
        <ArchiveSection a=d.archive />
        <SlackSection app=d.slack />
        <h2 class="mt-8 mb-2 text-base font-semibold">"Slack deliveries"</h2>
        <DeliveryTable rows=d.slack_deliveries testid="slack-deliveries-table" what="message" key_label="Channel" />
    }
}

/// The tenant's Slack app: which workspace and channels, and the form that sets it.
#[component]
fn SlackSection(app: Option<SlackView>) -> impl IntoView {
    let kept = app.is_some();
    let channels = app.as_ref().map(|a| a.channels.join(", ")).unwrap_or_default();
    let secret_hint = if kept { "stored; leave empty to keep it" } else { "" };
    let links = app.as_ref().map(|a| a.links.clone());
    view! {
        <h2 class="mt-8 mb-2 text-base font-semibold" id="slack">"Slack"</h2>
        <p class=NOTE>"Each call that waits for approval is posted to these channels, and every message is rewritten when the approval ends: how, and who decided. See docs/slack.md for the app manifest."</p>
        {match app {
            Some(a) => view! {
                <div class=format!("{CARD} p-4 text-sm space-y-1") data-testid="slack-app">
                    <p>"Workspace "<strong>{a.team_name}</strong>" ("<code>{a.team_id}</code>")"</p>
                    <p>"Posts to "<code>{a.channels.join(", ")}</code></p>
                    <p>"Request URL (Interactivity & Shortcuts): "<code class="break-all" data-testid="slack-request-url">{a.interactions_url}</code></p>
                    <p class=LABEL>"Set by "{a.updated_by}" "<Time rfc3339=a.updated_at /></p>
                    <form method="post" action="/api/remove_slack">
                        <button type="submit" class=BUTTON data-testid="remove-slack">"Remove the Slack app"</button>
                    </form>
                </div>
            }.into_any(),
            None => view! { <EmptyState title="No Slack app" detail="Set the app's bot token, signing secret and channels below; the gateway checks the token with Slack before it keeps anything." /> }.into_any(),
        }}
        {links.map(|l| view! { <SlackLinks links=l /> })}
        <form method="post" action="/api/put_slack" class=PANEL data-testid="slack-form">
            <h2 class="text-sm font-semibold">{if kept { "Change the Slack app" } else { "Set the Slack app" }}</h2>
            <label class=FIELD><span class=LABEL>"Bot User OAuth Token (xoxb-…)"</span>
                <input name="bot_token" type="password" autocomplete="off" required=!kept placeholder=secret_hint class=control() />
            </label>
            <label class=FIELD><span class=LABEL>"Signing secret"</span>
                <input name="signing_secret" type="password" autocomplete="off" required=!kept placeholder=secret_hint class=control() />
            </label>
            <label class=FIELD><span class=LABEL>"Channel ids, separated by commas"</span>
                <input name="channels" required value=channels placeholder="C0123456789" class=control() />
            </label>
            <p class="text-xs text-zinc-600 dark:text-zinc-300">"The token and the secret go into the vault and are not shown again."</p>
            <button type="submit" class=PRIMARY data-testid="save-slack">"Save"</button>
        </form>
    }
}

/// Who linked which Slack user: their clicks are their votes. An admin removes a link here.
#[component]
fn SlackLinks(links: Vec<(String, String, String, String)>) -> impl IntoView {
    view! {
        <h3 class="mt-4 mb-1 text-sm font-semibold">"Linked Slack users"</h3>
        <p class=NOTE>"A person links their Slack user themselves, the first time they click Approve or Deny: Slack shows only them a single-use link to this console. A click is then their vote, with their roles and groups."</p>
        {if links.is_empty() {
            view! { <p class="text-sm" data-testid="slack-links-empty">"Nobody has linked a Slack user yet."</p> }.into_any()
        } else {
            view! {
                <table class="text-sm" data-testid="slack-links">
                    <thead><tr><th class="pr-4 text-left">"Slack user"</th><th class="pr-4 text-left">"Console user"</th><th class="pr-4 text-left">"Linked"</th><th></th></tr></thead>
                    <tbody>
                        {links.into_iter().map(|(id, name, username, at)| { let (row, shown) = (id.clone(), id.clone()); view! {
                            <tr data-slack-user=row>
                                <td class="pr-4">"@"{name}" "<code>{shown}</code></td>
                                <td class="pr-4">{username}</td>
                                <td class="pr-4"><Time rfc3339=at /></td>
                                <td><form method="post" action="/api/unlink_slack">
                                    <input type="hidden" name="slack_user_id" value=id />
                                    <button type="submit" class=BUTTON>"Remove link"</button>
                                </form></td>
                            </tr>
                        }}).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}

#[component]
fn RuntimeCard(r: RuntimeView) -> impl IntoView {
    let (badge, tone) = if r.reachable {
        ("reachable", "bg-emerald-100 text-emerald-900 dark:bg-emerald-900/50 dark:text-emerald-200")
    } else {
        ("unreachable", "bg-red-100 text-red-900 dark:bg-red-900/50 dark:text-red-200")
    };
    let claimed = if r.claimed { "claimed for this tenant" } else { "not claimed for this tenant" };
    view! {
        <div class=format!("{CARD} p-4 text-sm space-y-1") data-testid="runtime-card" data-reachable=r.reachable.to_string()>
            <p><code class="break-all">{r.url}</code>" "
                <span class=format!("rounded px-1.5 py-0.5 text-xs font-medium {tone}")>{badge}</span>" · "{claimed}</p>
            {r.live.map(|l| view! { <p data-testid="runtime-live">{l}</p> })}
            <p class="text-zinc-600 dark:text-zinc-300">"Last seen: "
                {match r.last_seen_at { Some(t) => view! { <Time rfc3339=t /> }.into_any(), None => "never".into_any() }}
                {r.last_error.map(|e| format!(" · last error: {e}"))}</p>
            <p class="text-xs text-zinc-600 dark:text-zinc-300">"Shared secret: "<code>{r.fingerprint}</code>" (its fingerprint; the value is never shown)"</p>
        </div>
    }
}

#[component]
fn RegisterForm(registered: bool) -> impl IntoView {
    let hint = if registered {
        "Leave the secret empty to keep the current one."
    } else {
        "At least 16 characters; the runtime signs and checks every request with it."
    };
    view! {
        <form method="post" action="/api/register_runtime" class=PANEL data-testid="register-runtime">
            <h2 class="text-sm font-semibold">{if registered { "Change the runtime" } else { "Register the runtime" }}</h2>
            <label class=FIELD><span class=LABEL>"Control wire URL"</span>
                <input name="url" type="url" required placeholder="https://runtime.example.com/" class=control() />
            </label>
            <label class=FIELD><span class=LABEL>"Shared secret"</span>
                <input name="secret" type="password" autocomplete="new-password" minlength="16" required=!registered class=control() />
            </label>
            <p class="text-xs text-zinc-600 dark:text-zinc-300">{hint}" It goes into the vault and is not shown again."</p>
            <button type="submit" class=PRIMARY>"Register"</button>
        </form>
    }
}

#[component]
fn DeliveryTable(
    rows: Vec<DeliveryRow>,
    testid: &'static str,
    what: &'static str,
    key_label: &'static str,
) -> impl IntoView {
    if rows.is_empty() {
        return view! { <EmptyState title="Nothing yet" detail=format!("No {what} has been queued.") /> }
            .into_any();
    }
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid=testid>
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Id"</th>
                        <th class=TH>{key_label}</th>
                        <th class=TH>"What"</th>
                        <th class=TH>"State"</th>
                        <th class=TH>"Attempts"</th>
                        <th class=TH>"Queued"</th>
                        <th class=TH>"Dead letters"</th>
                    </tr>
                </thead>
                <tbody>{rows.into_iter().map(|r| view! { <DeliveryLine r /> }).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn BacklogTable(rows: Vec<BacklogRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <EmptyState title="Nothing waits" detail="Every runtime command and webhook message has been delivered or ended." /> }
            .into_any();
    }
    view! {
        <div class="overflow-x-auto">
            <table class=TABLE data-testid="backlog-table">
                <thead class=THEAD><tr><th class=TH>"Destination"</th><th class=TH>"Waiting"</th><th class=TH>"Next"</th><th class=TH></th></tr></thead>
                <tbody>{rows.into_iter().map(|q| view! { <BacklogLine q /> }).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn BacklogLine(q: BacklogRow) -> impl IntoView {
    let what = if q.channel == "runtime" {
        "team runtime".to_string()
    } else {
        format!("webhook {}", q.destination)
    };
    let next = if q.in_flight { "being delivered now".to_string() } else { String::new() };
    let (channel, destination) = (q.channel.clone(), q.destination.clone());
    view! {
        <tr class=TR data-backlog=q.channel.clone()>
            <td class=TD>{what}</td>
            <td class=TD>{format!("{} of at most {}", q.queued, q.max)}</td>
            <td class=TD>{if q.in_flight { view! { <span>{next}</span> }.into_any() } else { view! { <Time rfc3339=q.due_at /> }.into_any() }}</td>
            <td class=TD>
                <form method="post" action="/api/purge_backlog">
                    <input type="hidden" name="channel" value=channel />
                    <input type="hidden" name="destination" value=destination />
                    <button type="submit" class=BUTTON data-testid="purge-backlog">"Purge"</button>
                </form>
            </td>
        </tr>
    }
}

#[component]
fn DeliveryLine(r: DeliveryRow) -> impl IntoView {
    let tone = match r.status.as_str() {
        "delivered" => "bg-emerald-100 text-emerald-900 dark:bg-emerald-900/50 dark:text-emerald-200",
        "dead" | "rejected" => "bg-red-100 text-red-900 dark:bg-red-900/50 dark:text-red-200",
        "purged" => "bg-zinc-100 text-zinc-700 dark:bg-zinc-800 dark:text-zinc-200",
        _ => "bg-amber-100 text-amber-900 dark:bg-amber-900/50 dark:text-amber-200",
    };
    let dead = r.status == "dead";
    let (id, row_id, row_status) = (r.id.clone(), r.id.clone(), r.status.clone());
    view! {
        <tr class=TR data-delivery=row_id data-status=row_status>
            <td class=TD><code class="text-xs">{r.id}</code></td>
            <td class=TD><code class="text-xs">{r.key}</code></td>
            <td class=TD>{r.kind}</td>
            <td class=TD><span class=format!("rounded px-1.5 py-0.5 text-xs font-medium {tone}")>{r.status}</span>
                {r.last_error.map(|e| view! { <span class="block text-xs text-zinc-600 dark:text-zinc-300">{e}</span> })}</td>
            <td class=TD>{r.attempts}</td>
            <td class=TD><Time rfc3339=r.created_at /></td>
            <td class=TD>{dead.then(|| view! {
                <form method="post" action="/api/retry_delivery">
                    <input type="hidden" name="id" value=id />
                    <button type="submit" class=BUTTON data-testid="retry-delivery">"Retry"</button>
                </form>
            })}</td>
        </tr>
    }
}

#[component]
fn EndpointTable(endpoints: Vec<EndpointRow>) -> impl IntoView {
    if endpoints.is_empty() {
        return view! { <EmptyState title="No webhooks" detail="Add an endpoint below to be told when a call waits for approval, a budget runs out or a profile is revoked." /> }.into_any();
    }
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="webhooks-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Endpoint"</th>
                        <th class=TH>"Events"</th>
                        <th class=TH>"Format"</th>
                        <th class=TH>"Added"</th>
                        <th class=TH>"Check"</th>
                    </tr>
                </thead>
                <tbody>{endpoints.into_iter().map(|e| view! { <EndpointLine e /> }).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn EndpointLine(e: EndpointRow) -> impl IntoView {
    let (test_id, delete_id, row_id) = (e.id.clone(), e.id.clone(), e.id.clone());
    view! {
        <tr class=TR data-webhook=row_id>
            <td class=TD><code class="break-all text-xs">{e.url}</code><span class="block text-xs text-zinc-600 dark:text-zinc-300">{e.id}</span></td>
            <td class=TD>{e.events.join(", ")}</td>
            <td class=TD>{e.format}</td>
            <td class=TD>{e.created_by}" · "<Time rfc3339=e.created_at /></td>
            <td class=TD>
                <div class="flex gap-2">
                    <form method="post" action="/api/test_webhook">
                        <input type="hidden" name="id" value=test_id />
                        <button type="submit" class=BUTTON data-testid="test-webhook">"Send test event"</button>
                    </form>
                    <form method="post" action="/api/delete_webhook">
                        <input type="hidden" name="id" value=delete_id />
                        <button type="submit" class=BUTTON data-testid="delete-webhook">"Remove"</button>
                    </form>
                </div>
            </td>
        </tr>
    }
}

#[component]
fn WebhookForm(events: Vec<String>) -> impl IntoView {
    view! {
        <form method="post" action="/api/create_webhook" class=PANEL data-testid="create-webhook">
            <h2 class="text-sm font-semibold">"Add a webhook"</h2>
            <label class=FIELD><span class=LABEL>"Endpoint URL"</span>
                <input name="url" type="url" required placeholder="https://hooks.example.com/naive" class=control() />
            </label>
            <fieldset class="flex flex-wrap gap-x-4 gap-y-1 text-sm">
                <legend class=LABEL>"Events"</legend>
                {events.into_iter().map(|e| {
                    let name = e.replace('.', "_");
                    let checked = e.starts_with("approval.");
                    view! { <label class="flex items-center gap-1"><input type="checkbox" name=name checked=checked />{e}</label> }
                }).collect_view()}
            </fieldset>
            <label class=FIELD><span class=LABEL>"Body"</span>
                <select name="format" class=control()>
                    <option value="standard">"Standard Webhooks JSON"</option>
                    <option value="slack">"Slack-compatible text"</option>
                </select>
            </label>
            <button type="submit" class=PRIMARY>"Add webhook"</button>
        </form>
    }
}
