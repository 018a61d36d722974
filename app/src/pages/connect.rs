//! The consent page (`/connect`): an MCP client asks to act through this gateway. The person
//! sees the client's name, the host the browser will return to, and what it asks for, and
//! chooses which agent profile it acts as (an existing one, or a new sub-agent whose kit can
//! only narrow its parent's). The form posts to `/oauth/authorize`; the page cannot be framed
//! (the console's `frame-ancestors 'none'`) and its form is accepted only from this origin.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::oauth::{AuthorizeParams, ConsentView, consent_request};
use crate::components::common::{FormOutcome, INPUT, Loading, PageHeader, show};

#[component]
pub fn ConnectPage() -> impl IntoView {
    let query = use_query_map();
    let params = move || {
        let q = query.read();
        let get = |k: &str| q.get(k).unwrap_or_default();
        AuthorizeParams {
            response_type: get("response_type"),
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            state: q.get("state"),
            code_challenge: get("code_challenge"),
            code_challenge_method: get("code_challenge_method"),
            resource: q.get("resource"),
            scope: q.get("scope"),
        }
    };
    let data = Resource::new(params, consent_request);
    view! {
        <PageHeader title="Connect an MCP client" subtitle="A client asks to call this gateway's tools as one of your agents. Everything it does is governed by that agent's kit, budget and approvals." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let p = params();
                show(data.await, move |v| view! { <Consent v p /> })
            })}
        </Suspense>
    }
}

#[component]
fn Consent(v: ConsentView, p: AuthorizeParams) -> impl IntoView {
    if !v.may_connect {
        return view! {
            <p role="alert" class="text-sm" data-testid="connect-forbidden">"Connecting a client needs the admin role, or an admin's leave. Ask an admin to connect it, or to allow you on the users page."</p>
        }
        .into_any();
    }
    let first = v.profiles.first().map(|(id, _)| id.clone()).unwrap_or_default();
    view! {
        <section class="max-w-2xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="consent">
            <p class="text-sm"><span class="font-semibold" data-testid="client-name">{v.client_name}</span>
                " wants to use the tools at "<code class="break-all">{v.resource}</code>"."</p>
            <p class="text-sm text-zinc-600 dark:text-zinc-400">"Its identity: "<code class="break-all" data-testid="client-id">{v.client_id}</code>
                ". After you decide, your browser returns to "<code data-testid="redirect-host">{v.redirect_host}</code>"."</p>
            <form method="post" action="/oauth/authorize" class="space-y-3">
                <Hidden p />
                <fieldset class="space-y-2 text-sm">
                    <legend class="font-medium">"It acts as"</legend>
                    <label class="flex flex-wrap items-center gap-2">
                        <input type="radio" name="act_as" value="profile" checked />
                        "the agent profile "
                        <select name="profile_id" class=INPUT data-testid="profile-choice">
                            {v.profiles.iter().map(|(id, name)| view! { <option value=id.clone()>{name.clone()}</option> }).collect_view()}
                        </select>
                    </label>
                    <label class="flex flex-wrap items-center gap-2">
                        <input type="radio" name="act_as" value="new" data-testid="act-as-new" />
                        "a new sub-agent named "
                        <input name="new_name" class=INPUT placeholder="claude-connector" data-testid="new-name" />
                        " under "
                        <select name="parent_id" class=INPUT>
                            {v.profiles.iter().map(|(id, name)| {
                                let selected = *id == first;
                                view! { <option value=id.clone() selected=selected>{name.clone()}</option> }
                            }).collect_view()}
                        </select>
                    </label>
                </fieldset>
                <div class="flex gap-3">
                    <button type="submit" name="decision" value="allow" data-testid="connect-allow" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Connect"</button>
                    <button type="submit" name="decision" value="deny" data-testid="connect-deny" class="rounded border border-zinc-300 px-3 py-1.5 text-sm dark:border-zinc-700">"Cancel"</button>
                </div>
            </form>
        </section>
    }
    .into_any()
}

/// The request's parameters, carried to the form post.
#[component]
fn Hidden(p: AuthorizeParams) -> impl IntoView {
    let fields = [
        ("response_type", Some(p.response_type)),
        ("client_id", Some(p.client_id)),
        ("redirect_uri", Some(p.redirect_uri)),
        ("state", p.state),
        ("code_challenge", Some(p.code_challenge)),
        ("code_challenge_method", Some(p.code_challenge_method)),
        ("resource", p.resource),
        ("scope", p.scope),
    ];
    fields
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| view! { <input type="hidden" name=name value=v /> }))
        .collect_view()
}

/// The users page's MCP clients section (admins): who besides the admins may connect clients
/// through OAuth, and whether clients that register themselves are accepted.
/// The section's data.
pub fn client_settings_data() -> Resource<Result<crate::api::oauth::ClientSettings, ServerFnError>> {
    Resource::new(|| (), |_| crate::api::oauth::client_settings_view())
}

#[component]
pub fn ClientSettingsSection(
    data: Resource<Result<crate::api::oauth::ClientSettings, ServerFnError>>,
) -> impl IntoView {
    view! {
        <section class="mt-8" data-testid="mcp-clients">
            <h2 class="mb-1 text-base font-semibold">"MCP clients (OAuth)"</h2>
            <p class="mb-3 text-sm text-zinc-500 dark:text-zinc-400">"Hosted MCP clients connect through OAuth: a person signs in here and picks the agent profile the client acts as. Admins may always; allow others below."</p>
            <Suspense fallback=Loading>
                {move || Suspend::new(async move { show(data.await, |s| view! { <Settings s /> }) })}
            </Suspense>
        </section>
    }
}

#[component]
fn Settings(s: crate::api::oauth::ClientSettings) -> impl IntoView {
    view! {
        <ul class="mb-2 space-y-1 text-sm" data-testid="connectors">
            {s.connectors.into_iter().map(|(id, name)| { let key = name.clone(); view! {
                <li class="flex items-center gap-2" data-connector=key>{name}
                    <form method="post" action="/api/set_client_connector">
                        <input type="hidden" name="user_id" value=id />
                        <input type="hidden" name="allow" value="no" />
                        <button type="submit" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Remove"</button>
                    </form>
                </li>
            }}).collect_view()}
        </ul>
        {(!s.others.is_empty()).then(|| view! {
            <form method="post" action="/api/set_client_connector" class="mb-3 flex items-center gap-2 text-sm">
                <input type="hidden" name="allow" value="yes" />
                <label class="flex items-center gap-2">"Allow "
                    <select name="user_id" class=INPUT data-testid="connector-choice">
                        {s.others.into_iter().map(|(id, name)| view! { <option value=id>{name}</option> }).collect_view()}
                    </select>
                </label>
                <button type="submit" data-testid="allow-connector" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Allow to connect clients"</button>
            </form>
        })}
        <form method="post" action="/api/set_dynamic_clients" class="flex items-center gap-2 text-sm">
            <label class="flex items-center gap-2">
                <input type="checkbox" name="accept" checked=s.dynamic_clients data-testid="dynamic-clients" />
                "Accept clients that register themselves (dynamic client registration, RFC 7591). Off: only clients identified by a metadata document at an https address."
            </label>
            <button type="submit" data-testid="save-dynamic-clients" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Save"</button>
        </form>
    }
}
