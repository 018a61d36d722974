//! A secret shown once, with a copy button. Server-rendered as selectable text, so it can be
//! copied by hand without JavaScript; the island adds the button.

use leptos::prelude::*;

#[island]
pub fn SecretOnce(token: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let for_copy = token.clone();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(w) = web_sys::window() {
            let _ = w.navigator().clipboard().write_text(&for_copy);
            copied.set(true);
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &for_copy;
    };
    view! {
        <div class="flex flex-wrap items-center gap-2">
            <code data-testid="new-secret" class="select-all break-all rounded bg-zinc-900 px-2 py-1 font-mono text-sm text-emerald-300">{token}</code>
            <button type="button" data-testid="copy-secret" on:click=copy
                class="rounded border border-zinc-300 px-2 py-1 text-xs dark:border-zinc-700">
                {move || if copied.get() { "Copied" } else { "Copy" }}
            </button>
        </div>
    }
}
