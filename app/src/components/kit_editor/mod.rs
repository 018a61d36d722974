//! The AccountKit editor: forms for primitives, toolkits, can rules and limits that validate
//! as you type, the `KitDiff` of the draft against the saved version in words, a simulator,
//! and save with an optimistic-concurrency check.
//!
//! What must answer at once is checked in the browser: the draft's problems, with
//! [`KitText::from_fields`] and [`policy::Kit::validate`] compiled to wasm. What takes the
//! engine is decided on the server, on the same fields: the island posts the form as it is
//! typed ([`crate::api::kits::kit_preview`]), and the server answers with the diff in words
//! ([`policy::KitDiff::between`]), the simulated verdicts of the draft and the saved version
//! ([`simulate`](mod@simulate), `policy::evaluate` on the period and rate views the gateway would use) and
//! the draft's JSON, rendered as markup the island swaps in ([`preview`]). Saving posts the same
//! fields; the server validates again and refuses a stale version with `kit_version_conflict`.
//! Without JavaScript the same form posts the kit as JSON from its text area.
//!
//! How it ships: the form, the simulator's inputs and the panel beside them are
//! server-rendered HTML, passed to the [`island::KitEditorIsland`] as children, so their
//! markup never becomes wasm; the island keeps no state of its own and takes no props.
//!
//! The parts: [`fields`] turns the form's fields into a kit and back (`limits_text` writes and
//! reads period and rate limits as lines), [`simulate`](mod@simulate) decides a sample action under a kit,
//! [`preview`] renders the diff and the verdicts, [`form`] renders the form and the simulator's
//! inputs, and [`island`] (with `dom`, its browser side) brings them to life.

mod fields;
mod form;
mod island;
mod limits_text;
mod preview;
mod simulate;

#[cfg(feature = "hydrate")]
mod dom;

pub use fields::{FilterText, KitText, RuleText};
pub use form::KitEditor;
pub use preview::{DiffList, Preview, PreviewPanel};
pub use simulate::{SimAction, SimOutcome, SimProfile, needs_server, simulate};

/// The kit the editor's unit tests start from.
#[cfg(test)]
fn sample_kit() -> policy::Kit {
    policy::Kit::from_json(
        r#"{"name":"Buyers","primitives":["cards","email"],"can":[{"action":"cards.charge","effect":"allow","max_amount":"100","merchants":["globex-parts"]}],
            "limits":{"budget":{"hard_cap":"500","soft_cap":"400"},"approve":{"above":"50"}}}"#,
    )
    .unwrap()
}
