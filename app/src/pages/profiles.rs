//! Profiles: the tenant's agent profiles as a sub-agent tree, with status and runtime; and
//! one profile's page with its keys (create, rotate, revoke) and a revoke that previews its
//! cascade first. Every action is a plain form post, so it works without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::profiles::list_profiles;
use crate::api::profiles::{KeyRow, ProfileFull, profile_detail};
use crate::components::common::{
    CARD, EmptyState, FormOutcome, INPUT, Loading, PageHeader, StatusBadge, TABLE, TD, TH, THEAD, TR, Time,
    show,
};
use crate::components::secret::SecretOnce;

#[component]
pub fn ProfilesPage() -> impl IntoView {
    let query = use_query_map();
    let runtime = move || query.read().get("runtime").unwrap_or_default();
    let data = Resource::new(runtime, list_profiles);
    view! {
        <PageHeader title="Profiles" subtitle="Agent profiles and their sub-agents. A sub-agent's kit narrows its parent's, and it spends from the parent's budget." />
        {move || (!runtime().is_empty()).then(|| view! {
            <p class="mb-3 text-sm" data-testid="profiles-filter">
                {format!("Active profiles whose runtime is {} · ", runtime())}
                <a class="underline" href="/profiles">"show all"</a>
            </p>
        })}
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |rows| {
                    if rows.is_empty() {
                        return view! { <EmptyState title="No agent profiles here" detail="Create a profile for each agent; it gets its own scoped keys, kit and budget. A filtered list shows only active profiles in that runtime state." /> }.into_any();
                    }
                    view! {
                        <div class=CARD tabindex="0">
                            <table class=TABLE data-testid="profiles-table">
                                <thead class=THEAD>
                                    <tr>
                                        <th class=TH>"Profile"</th>
                                        <th class=TH>"Status"</th>
                                        <th class=TH>"Runtime"</th>
                                        <th class=TH>"Kit"</th>
                                        <th class=TH>"Owner"</th>
                                        <th class=TH>"Created"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|p| view! {
                                        <tr class=TR>
                                            <td class=TD>
                                                <span style=format!("padding-left: {}rem", p.depth as f32 * 1.25)>
                                                    {(p.depth > 0).then_some("↳ ")}
                                                    <a class="font-medium underline decoration-zinc-300 hover:decoration-zinc-600" href=format!("/profiles/{}", p.id)>{p.name}</a>
                                                </span>
                                                <div class="font-mono text-xs text-zinc-500 dark:text-zinc-400">{p.id}</div>
                                            </td>
                                            <td class=TD><StatusBadge status=p.status /></td>
                                            <td class=TD>
                                                <StatusBadge status=p.runtime />
                                                {p.runtime_reason.map(|r| view! { <span class="ml-1 text-xs text-zinc-500 dark:text-zinc-400">{r}</span> })}
                                            </td>
                                            <td class=TD>{p.kit_name}</td>
                                            <td class=TD>{p.owner.unwrap_or_else(|| "—".into())}</td>
                                            <td class=TD><Time rfc3339=p.created_at /></td>
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

/// A ready-to-paste MCP client configuration for `url` with `key`.
fn mcp_config(url: &str, key: &str) -> String {
    let config = serde_json::json!({
        "mcpServers": { "naive": { "type": "http", "url": url, "headers": { "Authorization": format!("Bearer {key}") } } }
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

const BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

#[component]
pub fn ProfileDetailPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let data = Resource::new(
        move || (params.read().get("id").unwrap_or_default(), query.read().get("issued")),
        |(id, issued)| profile_detail(id, issued),
    );
    view! {
        <Suspense fallback=Loading>
            {move || Suspend::new(async move { show(data.await, |d| view! { <ProfileView d /> }) })}
        </Suspense>
    }
}

#[component]
fn ProfileView(d: ProfileFull) -> impl IntoView {
    let p = d.profile;
    let id = p.id.clone();
    let revoked = p.status == "revoked";
    let subtitle = match &d.parent {
        Some(parent) => format!("Sub-agent of {parent}, kit {}", p.kit_name),
        None => format!("Kit {}", p.kit_name),
    };
    view! {
        <PageHeader title="Agent profile" subtitle=subtitle />
        <p class="mb-4"><a href="/profiles" class="text-sm text-zinc-500 underline dark:text-zinc-400">"← all profiles"</a></p>
        <FormOutcome />
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <h2 class="text-lg font-semibold" data-testid="profile-name">{p.name.clone()}</h2>
            <span data-testid="profile-status"><StatusBadge status=p.status.clone() /></span>
            <StatusBadge status=p.runtime.clone() />
            {p.runtime_reason.clone().map(|r| view! { <span class="text-xs text-zinc-500 dark:text-zinc-400">{r}</span> })}
            <span class="font-mono text-xs text-zinc-500 dark:text-zinc-400">{p.id.clone()}</span>
        </div>
        {d.new_secret.map(|s| {
            let config = mcp_config(&d.mcp_url, &s.token);
            view! {
                <section role="status" data-testid="secret-once" class="mb-4 rounded-lg border border-emerald-300 bg-emerald-50 p-3 dark:border-emerald-800 dark:bg-emerald-950">
                    <p class="mb-2 text-sm font-medium">"New key — copy it now. It is shown only this once; the gateway keeps just a hash."</p>
                    <SecretOnce token=s.token />
                    <p class="mb-1 mt-3 text-sm">"An MCP client's configuration, with this key:"</p>
                    <pre data-testid="mcp-config" class="select-all overflow-x-auto rounded bg-zinc-900 p-2 font-mono text-xs text-emerald-300">{config}</pre>
                </section>
            }
        })}
        <McpEndpoint url=d.mcp_url.clone() />
        <section class="mb-6">
            <div class="mb-2 flex items-baseline justify-between">
                <h2 class="text-sm font-semibold">"Keys"</h2>
                {(d.can_manage && !revoked).then(|| view! {
                    <form method="post" action="/api/create_key">
                        <input type="hidden" name="profile_id" value=id.clone() />
                        <button type="submit" data-testid="create-key" class="rounded bg-zinc-900 px-3 py-1 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Create key"</button>
                    </form>
                })}
            </div>
            {if d.keys.is_empty() {
                view! { <EmptyState title="No keys" detail="An agent calls the gateway with a scoped key; create one and give it to the agent." /> }.into_any()
            } else {
                let can_manage = d.can_manage;
                view! {
                    <div class=CARD tabindex="0">
                        <table class=TABLE data-testid="keys-table">
                            <thead class=THEAD>
                                <tr>
                                    <th class=TH>"Key"</th>
                                    <th class=TH>"State"</th>
                                    <th class=TH>"Created"</th>
                                    <th class=TH>"Last used"</th>
                                    <th class=TH>"Ends"</th>
                                    <th class=TH>""</th>
                                </tr>
                            </thead>
                            <tbody>
                                {d.keys.into_iter().map(|k| view! { <KeyLine k profile_id=id.clone() can_manage /> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
        <Connections rows=d.connections can_manage=d.can_manage />
        <section class="max-w-2xl rounded-lg border border-red-200 p-4 dark:border-red-900" data-testid="revoke-profile">
            <h2 class="text-sm font-semibold">"Revoke this profile"</h2>
            {if revoked {
                view! { <p class="mt-1 text-sm text-zinc-500 dark:text-zinc-400">"Revoked. Every call with its keys, or its sub-agents' keys, is refused with agent_profile_revoked."</p> }.into_any()
            } else {
                let c = d.cascade;
                let count = c.profiles.len();
                view! {
                    <p class="mt-1 text-sm">"Revoking stops this agent and everything beneath it, at once and for good:"</p>
                    <ul class="mt-2 list-disc pl-5 text-sm" data-testid="cascade">
                        <li>{format!("{count} profile{} revoked: {}", if count == 1 { "" } else { "s" }, c.profiles.join(", "))}</li>
                        <li>{format!("{} pending approval{} denied", c.approvals_denied, if c.approvals_denied == 1 { "" } else { "s" })}</li>
                        <li>{format!("{} hold{} voided", c.holds_voided, if c.holds_voided == 1 { "" } else { "s" })}</li>
                    </ul>
                    {if d.can_manage {
                        view! {
                            <form method="post" action="/api/revoke_profile" class="mt-3 flex flex-wrap items-center gap-3">
                                <input type="hidden" name="profile_id" value=id.clone() />
                                <input type="hidden" name="confirm_count" value=count.to_string() />
                                <label class="flex items-center gap-2 text-sm">
                                    <input type="checkbox" required data-testid="confirm-revoke" />
                                    {format!("I understand this revokes {count} profile{}", if count == 1 { "" } else { "s" })}
                                </label>
                                <button type="submit" data-testid="revoke" class="rounded bg-red-700 px-3 py-1 text-sm font-medium text-white">"Revoke"</button>
                            </form>
                        }.into_any()
                    } else {
                        view! { <p class="mt-2 text-sm text-zinc-500 dark:text-zinc-400">"Only an admin can revoke a profile."</p> }.into_any()
                    }}
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn KeyLine(k: KeyRow, profile_id: String, can_manage: bool) -> impl IntoView {
    let live = matches!(k.state.as_str(), "active" | "expiring");
    let ends = k.revoked_at.clone().or(k.expires_at.clone());
    view! {
        <tr class=TR data-key=k.prefix.clone()>
            <td class=TD><code class="font-mono text-xs">{format!("nv_{}_…", k.prefix)}</code></td>
            <td class=TD><StatusBadge status=k.state.clone() /></td>
            <td class=TD><Time rfc3339=k.created_at /></td>
            <td class=TD>{match k.last_used_at {
                Some(t) => view! { <Time rfc3339=t /> }.into_any(),
                None => view! { <span class="text-zinc-500 dark:text-zinc-400">"never"</span> }.into_any(),
            }}</td>
            <td class=TD>{ends.map(|t| view! { <Time rfc3339=t /> })}</td>
            <td class=TD>
                {(can_manage && live).then(|| view! {
                    <div class="flex flex-wrap items-center gap-2">
                        <form method="post" action="/api/rotate_key" class="flex items-center gap-1">
                            <input type="hidden" name="profile_id" value=profile_id.clone() />
                            <input type="hidden" name="key_id" value=k.id.clone() />
                            <select name="grace_secs" class=INPUT title="How long the old key keeps working">
                                <option value="0">"old key stops now"</option>
                                <option value="3600">"old key works 1 h"</option>
                                <option value="86400">"old key works 1 day"</option>
                            </select>
                            <button type="submit" data-testid="rotate-key" class=BUTTON>"Rotate"</button>
                        </form>
                        <form method="post" action="/api/revoke_key">
                            <input type="hidden" name="profile_id" value=profile_id.clone() />
                            <input type="hidden" name="key_id" value=k.id.clone() />
                            <button type="submit" data-testid="revoke-key" class=format!("{BUTTON} text-red-700 dark:text-red-400")>"Revoke"</button>
                        </form>
                    </div>
                })}
            </td>
        </tr>
    }
}

/// The MCP clients connected through OAuth to act as this profile, each revocable here.
#[component]
fn Connections(rows: Vec<crate::api::oauth::ConnectionRow>, can_manage: bool) -> impl IntoView {
    (!rows.is_empty()).then(|| view! {
        <section class="mb-6" data-testid="connections">
            <h2 class="mb-2 text-sm font-semibold">"Connected clients (OAuth)"</h2>
            <ul class="space-y-2 text-sm">
                {rows.into_iter().map(|c| {
                    let live = c.revoked_at.is_none();
                    view! {
                        <li class="flex flex-wrap items-center gap-2" data-connection=c.client_name.clone()>
                            <span class="font-medium">{c.client_name.clone()}</span>
                            <span class="text-zinc-500 dark:text-zinc-400">{format!("({}), connected by {} ", c.client_host, c.connected_by)}<Time rfc3339=c.created_at /></span>
                            <span class="text-zinc-500 dark:text-zinc-400">" · last used "{match c.last_used_at {
                                Some(t) => view! { <Time rfc3339=t /> }.into_any(),
                                None => view! { <span>"never"</span> }.into_any(),
                            }}</span>
                            {c.revoked_at.map(|t| view! { <span>" · revoked "<Time rfc3339=t /></span> })}
                            {(can_manage && live).then(|| view! {
                                <form method="post" action="/api/revoke_connection">
                                    <input type="hidden" name="connection_id" value=c.id.clone() />
                                    <button type="submit" data-testid="revoke-connection" class="rounded border border-red-300 px-2 py-0.5 text-xs text-red-700 dark:border-red-800 dark:text-red-400">"Revoke"</button>
                                </form>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    })
}

/// Where the agent connects: with its key in a header, or through OAuth from a hosted client.
#[component]
fn McpEndpoint(url: String) -> impl IntoView {
    view! {
        <p class="mb-4 text-sm text-zinc-600 dark:text-zinc-400">
            "MCP endpoint: " <code data-testid="mcp-endpoint" class="font-mono">{url}</code>
            " — send the agent's key as " <code class="font-mono">"Authorization: Bearer …"</code> " on every request, or connect a hosted client (a chat product's connector) to the same address: it signs in through OAuth, and an admin picks this profile on the consent page."
        </p>
    }
}
