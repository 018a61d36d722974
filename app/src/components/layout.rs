//! The console frame: a left navigation offering only the views the user's roles open, a top
//! bar with the signed-in user and tenant, and the page. Server-rendered; the connection indicator in the top bar is an island.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api::session::session_info;
use crate::components::connection::ConnectionIndicator;

const NAV_LINK: &str = "block rounded px-3 py-1.5 text-sm text-zinc-700 hover:bg-zinc-100 aria-[current=page]:bg-zinc-900 aria-[current=page]:text-white dark:text-zinc-300 dark:hover:bg-zinc-800 dark:aria-[current=page]:bg-zinc-100 dark:aria-[current=page]:text-zinc-900";

#[component]
pub fn Layout(children: Children) -> impl IntoView {
    let session = Resource::new(|| (), |_| session_info());
    view! {
        <div class="flex min-h-screen flex-col md:flex-row">
            <nav class="border-b border-zinc-200 bg-white md:w-52 md:shrink-0 md:border-b-0 md:border-r dark:border-zinc-800 dark:bg-zinc-900" aria-label="Main">
                <Suspense fallback=|| view! { <Brand href="/".to_string() /> }>
                    {move || Suspend::new(async move {
                        // Only the views this user's roles open; signed out, none.
                        let s = session.await.ok().flatten();
                        let landing = s.as_ref().map_or_else(|| "/".to_string(), |s| s.landing.clone());
                        let views = s.map(|s| s.views).unwrap_or_default();
                        view! {
                            <Brand href=landing />
                            <ul class="flex gap-1 overflow-x-auto px-2 pb-2 md:flex-col md:pb-0" data-testid="nav">
                                {views
                                    .into_iter()
                                    .map(|(href, label)| view! {
                                        <li><A href=href exact=true attr:class=NAV_LINK>{label}</A></li>
                                    })
                                    .collect_view()}
                            </ul>
                        }
                    })}
                </Suspense>
            </nav>
            <div class="flex min-w-0 flex-1 flex-col">
                <TopBar session />
                <main class="mx-auto w-full max-w-6xl flex-1 px-4 py-5 md:px-6">{children()}</main>
            </div>
        </div>
    }
}

/// The product's name, linking to where this user's work starts.
#[component]
fn Brand(href: String) -> impl IntoView {
    view! {
        <div class="px-4 py-3 text-base font-semibold tracking-tight">
            <a href=href>"Naïve"</a>
            <span class="ml-1 text-xs font-normal text-zinc-500 dark:text-zinc-400">"governance"</span>
        </div>
    }
}

#[component]
fn TopBar(
    session: Resource<Result<Option<crate::api::session::SessionSummary>, ServerFnError>>,
) -> impl IntoView {
    view! {
        <header class="flex items-center justify-between gap-4 border-b border-zinc-200 bg-white px-4 py-2 text-sm md:px-6 dark:border-zinc-800 dark:bg-zinc-900">
            <ConnectionIndicator />
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match session.await {
                        Ok(Some(s)) => view! {
                            <div class="flex min-w-0 items-center gap-3 whitespace-nowrap" data-testid="session">
                                <span class="text-zinc-500 max-sm:hidden dark:text-zinc-400">
                                    "credit " <span class="tabular-nums">{s.tenant_credit.to_string()}</span>
                                </span>
                                <span class="truncate font-medium max-sm:hidden">{s.tenant_name}</span>
                                <a href="/account" data-testid="account-link" title="Your account and personal API tokens" class="rounded bg-zinc-100 px-2 py-0.5 hover:underline dark:bg-zinc-800">{s.username}</a>
                                <form method="post" action="/logout">
                                    <button type="submit" data-testid="sign-out" class="whitespace-nowrap text-zinc-500 underline-offset-2 hover:underline dark:text-zinc-400">"Sign out"</button>
                                </form>
                            </div>
                        }.into_any(),
                        Ok(None) => view! { <a href="/login" class="text-zinc-600 underline dark:text-zinc-300">"Sign in"</a> }.into_any(),
                        Err(e) => view! { <span class="text-red-600">{e.to_string()}</span> }.into_any(),
                    }
                })}
            </Suspense>
        </header>
    }
}
