//! A secret shown once, with a copy button. Server-rendered as selectable text, so it can be
//! copied by hand without JavaScript; the island adds the button and copies the text it was
//! given as children, so the secret never travels as an island prop.

use leptos::prelude::*;

#[component]
pub fn SecretOnce(token: String) -> impl IntoView {
    view! {
        <CopySecret>
            <code data-testid="new-secret" class="select-all break-all rounded bg-zinc-900 px-2 py-1 font-mono text-sm text-emerald-300">{token}</code>
        </CopySecret>
    }
}

#[island]
fn CopySecret(children: Children) -> impl IntoView {
    let copied = RwSignal::new(false);
    // Server-rendered disabled: a click before the island is live would copy nothing, and
    // a disabled button says so. Effects run only once hydrated.
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    let root = NodeRef::<leptos::html::Div>::new();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        if let (Some(w), Some(root)) = (web_sys::window(), root.get_untracked()) {
            let text =
                crate::components::browser::first::<web_sys::Element>(&root, "[data-testid=new-secret]")
                    .and_then(|c| c.text_content());
            let _ = w.navigator().clipboard().write_text(&text.unwrap_or_default());
            copied.set(true);
        }
    };
    view! {
        <div node_ref=root class="flex flex-wrap items-center gap-2">
            {children()}
            <button type="button" data-testid="copy-secret" on:click=copy
                disabled=move || !live.get()
                class="rounded border border-zinc-300 px-2 py-1 text-xs dark:border-zinc-700 disabled:opacity-50">
                {move || if copied.get() { "Copied" } else { "Copy" }}
            </button>
        </div>
    }
}
