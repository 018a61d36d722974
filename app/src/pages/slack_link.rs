//! The Slack link page (`/slack/link?code=…`): a person who clicked Approve or Deny in Slack
//! before linking was sent, by Slack and to them alone, a single-use link here. Signed in,
//! they see which Slack user it links to their console user, and confirm with a button: the
//! link is made only by that form post (from this origin), never by opening the page, so a
//! link preview cannot use it up.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::slack::{LinkView, slack_link_view};
use crate::components::common::{FormOutcome, Loading, PageHeader, show};

#[component]
pub fn SlackLinkPage() -> impl IntoView {
    let query = use_query_map();
    let code = move || query.read().get("code").unwrap_or_default();
    let data = Resource::new(code, slack_link_view);
    view! {
        <PageHeader title="Link your Slack user" subtitle="Once linked, a click on Approve or Deny in a Slack message is your vote, with your roles and groups, exactly as here." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let c = code();
                show(data.await, move |v| view! { <Offer v code=c /> })
            })}
        </Suspense>
    }
}

#[component]
fn Offer(v: LinkView, code: String) -> impl IntoView {
    view! {
        <section class="max-w-2xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="slack-link-offer">
            <p class="text-sm">"Link the Slack user "<strong data-testid="slack-name">"@"{v.slack_name}</strong>" ("<code>{v.slack_user_id}</code>")"
                {(!v.team_name.is_empty()).then(|| format!(" of {}", v.team_name))}
                " to your console user "<strong data-testid="console-user">{v.username}</strong>"?"</p>
            <p class="text-sm text-zinc-600 dark:text-zinc-300">"If this is not your Slack user, do not link it: close this page. A link replaces any earlier one of yours."</p>
            <form method="post" action="/api/link_slack">
                <input type="hidden" name="code" value=code />
                <button type="submit" data-testid="link-slack" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Link my Slack user"</button>
            </form>
        </section>
    }
}
