//! A console user's own page (`/account`): their roles and their personal API tokens. A token
//! is how they decide over HTTP as themselves (`Authorization: Bearer nvu_…`); it carries only
//! the roles ticked for it, its secret is shown once, and it can be revoked here at any time.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::account::{AccountData, account_view};
use crate::components::common::{
    CARD, EmptyState, FormOutcome, INPUT, Loading, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};
use crate::components::secret::SecretOnce;

#[component]
pub fn AccountPage() -> impl IntoView {
    let query = use_query_map();
    let data = Resource::new(move || query.read().get("issued"), account_view);
    view! {
        <PageHeader title="Your account" subtitle="Your roles, and the personal API tokens you decide with over HTTP. Every decision records which credential made it." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move { show(data.await, |d| view! { <Account d /> }) })}
        </Suspense>
    }
}

#[component]
fn Account(d: AccountData) -> impl IntoView {
    let roles = d.roles.clone();
    view! {
        <p class="mb-4 text-sm" data-testid="account-roles">
            <span class="font-medium">{d.username.clone()}</span>" · roles: "{d.roles.join(", ")}
        </p>
        {d.new_secret.map(|s| view! {
            <section role="status" data-testid="secret-once" class="mb-4 rounded-lg border border-emerald-300 bg-emerald-50 p-3 dark:border-emerald-800 dark:bg-emerald-950">
                <p class="mb-2 text-sm font-medium">"New token — copy it now. It is shown only this once; the gateway keeps just a hash. Send it as " <code>"Authorization: Bearer …"</code>"."</p>
                <SecretOnce token=s.token />
            </section>
        })}
        <h2 class="mb-2 text-sm font-semibold">"Personal API tokens"</h2>
        {if d.tokens.is_empty() {
            view! { <EmptyState title="No tokens" detail="Create one to approve, deny or review over /v1 as yourself; the company key never decides for a person." /> }.into_any()
        } else {
            view! { <TokenTable tokens=d.tokens /> }.into_any()
        }}
        <SlackLink slack=d.slack />
        <form method="post" action="/api/create_token" class="mt-6 max-w-xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="create-token">
            <h2 class="text-sm font-semibold">"Create a token"</h2>
            <label class="flex flex-col text-sm">
                <span class="text-zinc-600 dark:text-zinc-300">"Label"</span>
                <input name="label" required maxlength="80" placeholder="deploy script" class=INPUT />
            </label>
            <fieldset class="space-y-1">
                <legend class="text-sm text-zinc-600 dark:text-zinc-300">"Roles it may use (of yours)"</legend>
                {roles.into_iter().map(|r| view! {
                    <label class="flex items-center gap-2 text-sm">
                        <input type="checkbox" name=r.clone() />
                        <span class="font-medium">{r}</span>
                    </label>
                }).collect_view()}
                <label class="flex items-center gap-2 text-sm">
                    <input type="checkbox" name="groups" />
                    <span><span class="font-medium">"groups"</span>" · approve for the approval groups you are in"</span>
                </label>
            </fieldset>
            <button type="submit" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Create token"</button>
        </form>
    }
}

/// The Slack user this person linked, and the button that unlinks it.
#[component]
fn SlackLink(slack: Option<(String, String)>) -> impl IntoView {
    view! {
        <h2 class="mt-6 mb-2 text-sm font-semibold">"Slack"</h2>
        {match slack {
            Some((id, name)) => view! {
                <form method="post" action="/api/unlink_my_slack" class="flex items-center gap-3 text-sm" data-testid="my-slack">
                    <span>"Your Slack user "<strong>"@"{name}</strong>" ("<code>{id}</code>"): a click on Approve or Deny in Slack is your vote."</span>
                    <button type="submit" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Unlink"</button>
                </form>
            }.into_any(),
            None => view! { <p class="text-sm" data-testid="my-slack-none">"No Slack user linked. Click Approve or Deny on an approval in Slack: Slack shows you a link to link it."</p> }.into_any(),
        }}
    }
}

#[component]
fn TokenTable(tokens: Vec<crate::api::account::TokenRow>) -> impl IntoView {
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="tokens-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Label"</th>
                        <th class=TH>"Token"</th>
                        <th class=TH>"Roles"</th>
                        <th class=TH>"Created"</th>
                        <th class=TH>"Last used"</th>
                        <th class=TH>""</th>
                    </tr>
                </thead>
                <tbody>
                    {tokens.into_iter().map(|t| { let id = t.id.clone(); view! {
                        <tr class=TR data-token=t.id>
                            <td class=TD>{t.label}</td>
                            <td class=TD><span class="font-mono text-xs">{format!("nvu_{}_…", t.prefix)}</span></td>
                            <td class=TD>{if t.groups { format!("{}, groups", t.roles.join(", ")) } else { t.roles.join(", ") }}</td>
                            <td class=TD><Time rfc3339=t.created_at /></td>
                            <td class=TD>{t.last_used_at.map_or_else(|| view! { <span class="text-zinc-500 dark:text-zinc-400">"never"</span> }.into_any(), |at| view! { <Time rfc3339=at /> }.into_any())}</td>
                            <td class=TD>
                                {match t.revoked_at {
                                    Some(_) => view! { <span class="text-xs text-zinc-500 dark:text-zinc-400">"revoked"</span> }.into_any(),
                                    None => view! {
                                        <form method="post" action="/api/revoke_token">
                                            <input type="hidden" name="token_id" value=id.clone() />
                                            <button type="submit" data-testid="revoke-token" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Revoke"</button>
                                        </form>
                                    }.into_any(),
                                }}
                            </td>
                        </tr>
                    }}).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
