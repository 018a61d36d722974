//! The users page's single sign-on section (admins): the tenant's OpenID connection as a plain
//! form, what to register at the provider (the redirect URI), the address people sign in at,
//! and who is bound to the provider. The client secret is write-only: the form never shows it.

use leptos::prelude::*;

use crate::api::sso::{SsoView, sso_settings};
use crate::components::common::{INPUT, Loading, Time, show};

const LABEL: &str = "flex flex-col text-sm";
const HINT: &str = "text-xs text-zinc-500 dark:text-zinc-400";
const ROLE_CHOICES: [&str; 5] = ["", "admin", "approver", "reviewer", "finance"];

/// The section's data: the tenant's connection, and a SCIM token just issued to this session.
pub fn sso_data() -> Resource<Result<SsoView, ServerFnError>> {
    let query = leptos_router::hooks::use_query_map();
    Resource::new(move || query.read().get("issued"), sso_settings)
}

#[component]
pub fn SingleSignOn(data: Resource<Result<SsoView, ServerFnError>>) -> impl IntoView {
    view! {
        <section class="mt-8" data-testid="sso">
            <h2 class="mb-1 text-base font-semibold">"Single sign-on"</h2>
            <p class="mb-3 text-sm text-zinc-500 dark:text-zinc-400">"Sign people in with the company's OpenID Connect provider (Okta, Entra ID, Google Workspace, Keycloak). A person is bound to the provider's account, never to an email; their roles and approval groups follow their provider groups at every sign-in."</p>
            <Suspense fallback=Loading>
                {move || Suspend::new(async move { show(data.await, |f| view! { <SsoSettings f /> }) })}
            </Suspense>
        </section>
    }
}

#[component]
fn SsoSettings(f: SsoView) -> impl IntoView {
    let stored = f.stored;
    let role = f.default_role.clone();
    view! {
        <div class="mb-3 space-y-1 text-sm">
            <p>"Redirect URI to register at the provider: "<code data-testid="sso-redirect-uri" class="break-all">{f.redirect_uri}</code></p>
            <p>"Your people's sign-in address: "<code data-testid="sso-login-address" class="break-all">{f.login_address}</code></p>
        </div>
        <form method="post" action="/api/save_sso" class="max-w-2xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="sso-form">
            <div class="grid gap-3 sm:grid-cols-2">
                <label class=LABEL>"Issuer URL"
                    <input name="issuer" type="url" required value=f.issuer placeholder="https://login.example.com/realms/acme" class=INPUT />
                </label>
                <label class=LABEL>"Client id"
                    <input name="client_id" required value=f.client_id class=INPUT />
                </label>
                <label class=LABEL>"Client secret"
                    <input name="client_secret" type="password" autocomplete="off" required=!stored
                        placeholder=if stored { "stored; leave empty to keep it" } else { "" } class=INPUT />
                </label>
                <label class=LABEL>"Scopes besides openid"
                    <input name="scopes" value=f.scopes class=INPUT />
                </label>
                <label class=LABEL>"Groups claim"
                    <input name="groups_claim" required value=f.groups_claim class=INPUT />
                </label>
                <label class=LABEL>"Email domains"
                    <input name="domains" value=f.domains placeholder="example.com" class=INPUT />
                    <span class=HINT>"People who type an email of these domains on the sign-in page are sent here."</span>
                </label>
            </div>
            <label class=LABEL>"Group mapping, one provider group a line"
                <textarea name="mapping" rows="4" class=INPUT data-testid="sso-mapping"
                    placeholder="finance-team -> finance, approver, group:treasury">{f.mapping}</textarea>
                <span class=HINT>"Roles: admin, approver, reviewer, finance; group:name puts members in an approval group."</span>
            </label>
            <div class="flex flex-wrap items-end gap-4">
                <label class=LABEL>"Role for everyone"
                    <select name="default_role" class=INPUT>
                        {ROLE_CHOICES.into_iter().map(|r| view! {
                            <option value=r selected=r == role>{if r.is_empty() { "none" } else { r }}</option>
                        }).collect_view()}
                    </select>
                </label>
                <label class="flex items-center gap-2 text-sm">
                    <input type="checkbox" name="create_users" checked=f.create_users />"Create people at their first sign-in"
                </label>
                <label class="flex items-center gap-2 text-sm">
                    <input type="checkbox" name="required" checked=f.required />"Require single sign-on"
                </label>
                <label class=LABEL>"Break-glass local admin"
                    <input name="break_glass" value=f.break_glass placeholder="admin" class=INPUT />
                </label>
            </div>
            <button type="submit" data-testid="save-sso" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Save single sign-on"</button>
        </form>
        {stored.then(|| view! {
            <form method="post" action="/api/test_sso" class="mt-2">
                <button type="submit" data-testid="test-sso" class="rounded border border-zinc-300 px-2 py-1 text-xs dark:border-zinc-700">"Test the connection"</button>
            </form>
        })}
        <People people=f.people />
        <Provisioning base=f.scim_base token=f.scim_token new_token=f.new_scim_token />
    }
}

/// SCIM: where the directory sends requests, the token's prefix, and issuing one (shown once).
#[component]
fn Provisioning(base: String, token: Option<(String, String)>, new_token: Option<String>) -> impl IntoView {
    view! {
        <section id="scim" class="mt-6 space-y-2 text-sm" data-testid="scim">
            <h3 class="font-semibold">"Provisioning (SCIM 2.0)"</h3>
            <p>"The directory's base URL: "<code data-testid="scim-base" class="break-all">{base}</code></p>
            {match token {
                Some((prefix, at)) => view! { <p>"Token "<code>{format!("nvs_{prefix}_…")}</code>", issued "<Time rfc3339=at /></p> }.into_any(),
                None => view! { <p>"No SCIM token yet."</p> }.into_any(),
            }}
            {new_token.map(|t| view! { <crate::components::secret::SecretOnce token=t /> })}
            <form method="post" action="/api/create_scim_token">
                <button type="submit" data-testid="create-scim-token" class="rounded border border-zinc-300 px-2 py-1 text-xs dark:border-zinc-700">"Issue a SCIM token (replaces the current one)"</button>
            </form>
        </section>
    }
}

#[component]
fn People(people: Vec<(String, String, String)>) -> impl IntoView {
    (!people.is_empty()).then(|| {
        view! {
            <h3 class="mt-4 text-sm font-semibold">"Signed in through the provider"</h3>
            <ul class="mt-1 space-y-1 text-sm" data-testid="sso-people">
                {people.into_iter().map(|(name, email, seen)| { let key = name.clone(); view! {
                    <li data-sso-user=key><span class="font-medium">{name}</span>" "
                        <span class="text-zinc-500 dark:text-zinc-400">{email}</span>" · last sign-in "<Time rfc3339=seen /></li>
                }}).collect_view()}
            </ul>
        }
    })
}
