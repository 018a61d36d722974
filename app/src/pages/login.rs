//! The sign-in page (`/login`): a plain form that posts to the server, so it works without
//! JavaScript. The server checks the password (argon2id), limits attempts, sets the HttpOnly
//! session cookie and sends the browser on to where it was going. Beside it, single sign-on:
//! a work email leads to the company's identity provider (`server::http::sso`).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let next = move || {
        query
            .read()
            .get("next")
            .filter(|n| n.starts_with('/') && !n.starts_with("//"))
            .unwrap_or_else(|| "/".into())
    };
    let error = move || match query.read().get("error").as_deref() {
        Some("invalid") => Some("That username and password do not match. Try again."),
        Some("rate_limited") => {
            Some("Too many failed attempts for this user. Wait a few minutes, then try again.")
        }
        Some("signed_out") => Some("You have been signed out."),
        Some("sso_required") => {
            Some("Your company signs you in through its identity provider: use single sign-on below.")
        }
        Some("sso_unknown_domain") => Some(
            "No company here signs in with that email's domain. Check the address, or use your company's sign-in address.",
        ),
        _ => None,
    };
    view! {
        <div class="mx-auto mt-10 max-w-sm">
            <h1 class="text-lg font-semibold tracking-tight">"Sign in"</h1>
            <p class="mb-4 text-sm text-zinc-500 dark:text-zinc-400">"The console is for the company's approvers, reviewers, finance and admins."</p>
            {move || error().map(|e| view! {
                <p role="alert" data-testid="login-error" class="mb-3 rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">{e}</p>
            })}
            <form method="post" action="/login" class="space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900">
                <input type="hidden" name="next" value=next />
                <label class="block text-sm">
                    <span class="text-zinc-600 dark:text-zinc-300">"Username"</span>
                    <input name="username" required autocomplete="username" autofocus class="mt-1 block w-full rounded border border-zinc-300 px-2 py-1.5 dark:border-zinc-700 dark:bg-zinc-950" />
                </label>
                <label class="block text-sm">
                    <span class="text-zinc-600 dark:text-zinc-300">"Password"</span>
                    <input name="password" type="password" required autocomplete="current-password" class="mt-1 block w-full rounded border border-zinc-300 px-2 py-1.5 dark:border-zinc-700 dark:bg-zinc-950" />
                </label>
                <button type="submit" class="w-full rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Sign in"</button>
            </form>
            <form method="get" action="/login/sso" class="mt-3 space-y-2 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="sso-login">
                <input type="hidden" name="next" value=next />
                <label class="block text-sm">
                    <span class="text-zinc-600 dark:text-zinc-300">"Work email"</span>
                    <input name="email" type="email" required autocomplete="email" class="mt-1 block w-full rounded border border-zinc-300 px-2 py-1.5 dark:border-zinc-700 dark:bg-zinc-950" />
                </label>
                <button type="submit" class="w-full rounded border border-zinc-300 px-3 py-1.5 text-sm font-medium dark:border-zinc-700">"Continue with single sign-on"</button>
            </form>
            <p class="mt-3 text-xs text-zinc-500 dark:text-zinc-400">
                "No account? An admin adds console users. The first admin comes with the demo tenant (its password is printed once at the first start), or with "
                <code>"server tenant create --name … --admin …"</code>"."
            </p>
        </div>
    }
}
