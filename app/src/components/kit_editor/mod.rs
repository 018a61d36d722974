//! The AccountKit editor: forms for primitives, toolkits, can rules and limits that validate
//! as you type, the `KitDiff` of the draft against the saved version in words, a simulator,
//! and save with an optimistic-concurrency check.
//!
//! Everything it decides, it decides with `policy` compiled to wasm: the draft is a [`Kit`]
//! checked by [`Kit::validate`], the diff is [`KitDiff::between`], and the simulator runs
//! [`policy::evaluate`] and builds the [`Envelope`] the gateway would return, with no round
//! trip. Only saving calls the server, which validates again and refuses a stale version with
//! `kit_version_conflict`. Without JavaScript the same form posts the kit as JSON from its
//! text area.
//!
//! How it ships: the form and the simulator's inputs are server-rendered HTML, passed to the
//! [`KitEditorIsland`] as children, so their markup never becomes wasm. The island reads the
//! fields through the DOM on every input (the saved version from the fields' defaults, the
//! draft from their values), parses them with [`KitText::from_fields`], the same function the
//! unit tests drive, and renders only what changes: the problems, the diff, the save state and
//! the simulator's verdicts. It takes no serialized props, so no JSON deserializer ships.
//!
//! Period and rate limits depend on the tenant's time zone and on spend per day, which the
//! browser does not have (and a time-zone database would not fit the wasm budget): for a kit
//! with either, the simulator asks the server for the same [`policy::PeriodView`]s and
//! [`policy::RateView`]s the gateway would decide on at the chosen moment, and the server
//! answers with [`simulate`]'s outcome.
//!
//! The parts: [`fields`] turns the form's fields into a kit and back (`limits_text` writes and
//! reads period and rate limits as lines), [`simulate`] decides a sample action under a kit, [`form`] renders the form and the simulator's inputs on the
//! server, and [`island`] (with `dom`, its browser side) brings them to life.

mod fields;
mod form;
mod island;
mod limits_text;
mod simulate;

#[cfg(feature = "hydrate")]
mod dom;

pub use fields::{FilterText, KitText, RuleText};
pub use form::KitEditor;
pub use island::DiffList;
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
