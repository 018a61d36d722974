//! The 404 page, inside the console frame so the navigation still works, with a way back to
//! where the user's work starts.

use leptos::prelude::*;

use crate::api::session::session_info;

#[component]
pub fn NotFound() -> impl IntoView {
    let session = Resource::new(|| (), |_| session_info());
    view! {
        <div class="py-16 text-center" data-testid="not-found">
            <p class="text-5xl font-semibold text-zinc-500 dark:text-zinc-400">"404"</p>
            <h1 class="mt-2 text-lg font-semibold">"There is no page here"</h1>
            <p class="mt-1 text-sm text-zinc-500 dark:text-zinc-400">"Check the address, or pick a view from the navigation."</p>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let (href, label) = match session.await.ok().flatten() {
                        Some(s) => (s.landing, "Go to your start page"),
                        None => ("/login".to_string(), "Sign in"),
                    };
                    view! {
                        <a href=href class="mt-4 inline-block rounded bg-zinc-900 px-3 py-1.5 text-sm text-white dark:bg-zinc-100 dark:text-zinc-900">{label}</a>
                    }
                })}
            </Suspense>
        </div>
    }
}
