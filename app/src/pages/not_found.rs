//! The 404 page, inside the console frame so the navigation still works.

use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <div class="py-16 text-center" data-testid="not-found">
            <p class="text-5xl font-semibold text-zinc-300 dark:text-zinc-700">"404"</p>
            <h1 class="mt-2 text-lg font-semibold">"There is no page here"</h1>
            <p class="mt-1 text-sm text-zinc-500">"Check the address, or pick a view from the navigation."</p>
            <a href="/" class="mt-4 inline-block rounded bg-zinc-900 px-3 py-1.5 text-sm text-white dark:bg-zinc-100 dark:text-zinc-900">"Go to the inbox"</a>
        </div>
    }
}
