//! What the editor shows beside its form, rendered on the server: the diff of the draft
//! against the saved version in words, and the simulated verdicts of both with the draft's
//! envelope. The island posts the form's fields as they are typed
//! ([`crate::api::kits::kit_preview`]) and swaps this markup in, so neither the diff's wording
//! nor the engine and its envelopes ship as wasm; the page renders [`Preview::waiting`] first.

use leptos::prelude::*;
use policy::{Direction, KitDiff};

use super::simulate::SimOutcome;

/// The diff and the two simulated verdicts, as the editor shows them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preview {
    /// `None` while the draft has problems (they are shown beside it, as typed).
    pub diff: Option<KitDiff>,
    /// The draft's verdict, or why there is none.
    pub draft: Option<Result<SimOutcome, String>>,
    /// The saved version's, with its version.
    pub saved: Option<(u32, Result<SimOutcome, String>)>,
}

impl Preview {
    /// What the page shows before the island's first answer.
    pub fn waiting() -> Preview {
        Preview::default()
    }
}

/// The diff section and the simulator's verdicts, from a [`Preview`].
#[component]
pub fn PreviewPanel(preview: Preview) -> impl IntoView {
    let Preview { diff, draft, saved } = preview;
    let envelope = match &draft {
        Some(Ok(o)) => o.envelope.clone(),
        Some(Err(e)) => e.clone(),
        None => String::new(),
    };
    let saved_label = saved.as_ref().map_or_else(|| "Saved".to_string(), |(v, _)| format!("Saved (v{v})"));
    view! {
        <section data-testid="kit-diff">
            <h3 class="text-sm font-semibold">"What this edit changes"</h3>
            {match diff {
                None => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Shown as you edit, once the page's script has loaded and the draft has no problems."</p> }.into_any(),
                Some(d) if d.is_empty() => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Nothing yet: the draft is the saved version."</p> }.into_any(),
                Some(d) => view! { <DiffList diff=d /> }.into_any(),
            }}
        </section>
        <section class="space-y-2 rounded-lg border border-zinc-200 p-4 dark:border-zinc-800">
            <h3 class="text-sm font-semibold">"Simulated verdict"</h3>
            <div class="grid grid-cols-2 gap-2 text-sm">
                <div>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400">"Draft"</p>
                    <SimVerdict outcome=draft testid="sim-verdict" />
                </div>
                <div>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400">{saved_label}</p>
                    <SimVerdict outcome=saved.map(|(_, o)| o) testid="sim-verdict-saved" />
                </div>
            </div>
            <pre class="max-h-80 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800" data-testid="sim-envelope">{envelope}</pre>
        </section>
    }
}

#[component]
fn SimVerdict(outcome: Option<Result<SimOutcome, String>>, testid: &'static str) -> impl IntoView {
    match outcome {
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
