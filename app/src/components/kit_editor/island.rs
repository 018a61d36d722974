//! The editor's island: a controller over the server-rendered form and the panel beside it
//! (its children). It holds no state of its own: on every input it reads the form (`dom`, the
//! browser side, built for the wasm only), shows the draft's problems as typed, and asks the
//! server for the diff and the verdicts.

use leptos::prelude::*;

/// The editor's island: wires the form's events to [`super::dom`].
#[island]
pub(super) fn KitEditorIsland(children: Children) -> impl IntoView {
    let root = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get() {
            super::dom::start(&root);
        }
    });
    #[allow(unused_variables)]
    let on_input = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::read(&root);
        }
    };
    #[allow(unused_variables)]
    let on_click = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::click(&ev, &root);
        }
    };
    #[allow(unused_variables)]
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::submit(&ev, &root);
        }
    };
    view! {
        <div node_ref=root class="grid gap-6 lg:grid-cols-5" data-testid="kit-editor" data-hydrated="false"
            on:input=on_input on:change=on_input on:click=on_click on:submit=on_submit>
            {children()}
        </div>
    }
}
