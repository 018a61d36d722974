//! The editor's island: its state, computed in one place from the form, and what it renders
//! beside the form: the problems, the diff in words, the save state and the simulated
//! verdicts of the draft and the saved version.

use leptos::prelude::*;
use policy::{Direction, Kit, KitDiff, KitError};

use super::simulate::SimOutcome;

/// What one save returned, as the island shows it. (The server only renders `Idle`.)
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq)]
pub(super) enum SaveState {
    Idle,
    Saving,
    Saved(u32),
    Failed(String),
}

/// The island's state, all of it computed in one place ([`dom::read`]) from the form: `None`
/// until the island has read the form after hydrating (and on the server, which renders the
/// placeholders the browser starts from).
#[derive(Clone, Copy)]
pub(super) struct Editor {
    pub(super) hydrated: RwSignal<bool>,
    pub(super) saved: RwSignal<Option<Kit>>,
    pub(super) draft: RwSignal<Option<Result<Kit, Vec<KitError>>>>,
    pub(super) diff: RwSignal<Option<KitDiff>>,
    pub(super) sim_draft: RwSignal<Option<Result<SimOutcome, String>>>,
    pub(super) sim_saved: RwSignal<Option<Result<SimOutcome, String>>>,
    pub(super) save_state: RwSignal<SaveState>,
}

/// The editor's island: reads the server-rendered form (its children) on every input, and
/// renders the problems, the diff, the save state and the simulator's verdicts beside it.
#[island]
pub(super) fn KitEditorIsland(children: Children) -> impl IntoView {
    let s = Editor {
        hydrated: RwSignal::new(false),
        saved: RwSignal::new(None),
        draft: RwSignal::new(None),
        diff: RwSignal::new(None),
        sim_draft: RwSignal::new(None),
        sim_saved: RwSignal::new(None),
        save_state: RwSignal::new(SaveState::Idle),
    };
    let root = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get() {
            super::dom::start(&root, s);
        }
    });
    #[allow(unused_variables)]
    let on_input = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::read(&root, s);
        }
    };
    #[allow(unused_variables)]
    let on_click = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::click(&ev, &root, s);
        }
    };
    #[allow(unused_variables)]
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            super::dom::submit(&ev, &root, s);
        }
    };
    view! {
        <div node_ref=root class="grid gap-6 lg:grid-cols-5" data-testid="kit-editor" data-hydrated=move || s.hydrated.get().to_string()
            on:input=on_input on:change=on_input on:click=on_click on:submit=on_submit>
            {children()}
            <aside class="space-y-4 lg:col-span-2">
                <div role="alert" data-testid="kit-errors">
                    {move || s.draft.get().and_then(Result::err).map(|errs| view! {
                        <ul class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">
                            {errs.into_iter().map(|e| view! { <li><code class="text-xs">{e.path}</code>": "{e.message}</li> }).collect_view()}
                        </ul>
                    })}
                </div>
                <section data-testid="kit-diff">
                    <h3 class="text-sm font-semibold">"What this edit changes"</h3>
                    {move || match s.diff.get() {
                        None => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Shown as you edit, once the page's script has loaded."</p> }.into_any(),
                        Some(d) if d.is_empty() => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Nothing yet: the draft is the saved version."</p> }.into_any(),
                        Some(d) => view! { <DiffList diff=d /> }.into_any(),
                    }}
                </section>
                <p data-testid="save-state" class="text-sm" role="status">
                    {move || match s.save_state.get() {
                        SaveState::Idle => view! { <span></span> }.into_any(),
                        SaveState::Saving => view! { <span class="text-zinc-500 dark:text-zinc-400">"Saving…"</span> }.into_any(),
                        SaveState::Saved(v) => view! { <span class="text-emerald-700 dark:text-emerald-400">{format!("Saved as v{v}. Agents get it on their next call.")}</span> }.into_any(),
                        SaveState::Failed(e) => view! { <span class="text-red-700 dark:text-red-400" role="alert">{e}</span> }.into_any(),
                    }}
                </p>
                <section class="space-y-2 rounded-lg border border-zinc-200 p-4 dark:border-zinc-800">
                    <h3 class="text-sm font-semibold">"Simulated verdict"</h3>
                    <div class="grid grid-cols-2 gap-2 text-sm">
                        <div>
                            <p class="text-xs text-zinc-500 dark:text-zinc-400">"Draft"</p>
                            <SimVerdict outcome=s.sim_draft testid="sim-verdict" />
                        </div>
                        <div>
                            <p class="text-xs text-zinc-500 dark:text-zinc-400">{move || s.saved.with(|k| k.as_ref().map(|k| format!("Saved ({})", k.version)).unwrap_or_else(|| "Saved".into()))}</p>
                            <SimVerdict outcome=s.sim_saved testid="sim-verdict-saved" />
                        </div>
                    </div>
                    <pre class="max-h-80 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800" data-testid="sim-envelope">
                        {move || match s.sim_draft.get() { Some(Ok(o)) => o.envelope, Some(Err(e)) => e, None => String::new() }}
                    </pre>
                </section>
            </aside>
        </div>
    }
}

#[component]
fn SimVerdict(outcome: RwSignal<Option<Result<SimOutcome, String>>>, testid: &'static str) -> impl IntoView {
    move || match outcome.get() {
        Some(Ok(o)) => {
            let colour = match o.verdict.as_str() {
                "allow" => "text-emerald-700 dark:text-emerald-400",
                "park" => "text-amber-700 dark:text-amber-400",
                _ => "text-red-700 dark:text-red-400",
            };
            view! {
                <p>
                    <span class=format!("font-semibold {colour}") data-testid=testid>{o.verdict}</span>
                    {o.reason.map(|r| view! { <span class="ml-1 font-mono text-xs">{r}</span> })}
                </p>
                <p class="text-xs text-zinc-500 dark:text-zinc-400">{format!("cost {}", o.cost)}</p>
                {o.who.map(|w| view! { <p class="text-xs" data-testid=format!("{testid}-who")>{format!("needs {w}")}</p> })}
            }
            .into_any()
        }
        Some(Err(e)) => {
            view! { <p class="text-xs text-zinc-500 dark:text-zinc-400" data-testid=testid>{e}</p> }
                .into_any()
        }
        None => view! { <p class="text-xs text-zinc-500 dark:text-zinc-400" data-testid=testid>"—"</p> }
            .into_any(),
    }
}

/// A `KitDiff` in words: what widens, then what narrows.
#[component]
pub fn DiffList(diff: KitDiff) -> impl IntoView {
    view! {
        <ul class="text-sm">
            {diff.changes.into_iter().map(|c| {
                let (mark, class) = match c.direction {
                    Direction::Widens => ("▲ widens", "text-amber-700 dark:text-amber-400"),
                    Direction::Narrows => ("▼ narrows", "text-emerald-700 dark:text-emerald-400"),
                    Direction::Neutral => ("•", "text-zinc-500 dark:text-zinc-400"),
                };
                view! { <li><span class=format!("mr-1 {class}")>{mark}</span>{c.text}</li> }
            }).collect_view()}
        </ul>
    }
}
