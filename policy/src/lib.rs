//! `policy`: the one place where governance rules live.
//!
//! Pure and synchronous: no IO, no async, no database. The gateway, every transport and the
//! console's server functions call it, and the kit editor runs it in the browser compiled to
//! wasm. It takes the facts it needs as arguments and returns decisions.
//!
//! - [`activity`]: the activity log's kinds, verdicts, transports and actors, shared by the
//!   gateway, `/v1` and the console.
//! - [`money`]: exact amounts in $0.0001 units (docs/architecture.md#money-and-the-ledger).
//! - [`approval`]: approval rules: who must approve a parked call, within what window.
//! - [`kit`]: the AccountKit and its strict validation (docs/architecture.md#accountkits).
//! - [`derive`](mod@derive): sub-agent narrowing (docs/architecture.md#accountkits).
//! - [`diff`]: what a kit edit widens and narrows (docs/architecture.md#accountkits).
//! - [`catalog`]: tools with primitive, effect and price (docs/architecture.md#the-decision-pipeline).
//! - [`args`]: each action's declared arguments, checked before anything is decided.
//! - [`engine`]: the decision pipeline, steps 2–8 (docs/architecture.md#the-decision-pipeline).
//! - [`verdict`]: the three vocabularies and their mappings
//!   (docs/architecture.md#verdicts-and-the-refusal-envelope).
//! - [`envelope`]: the refusal envelope (docs/architecture.md#verdicts-and-the-refusal-envelope).

pub mod activity;
pub mod approval;
pub mod args;
pub mod catalog;
pub mod derive;
pub mod diff;
pub mod engine;
pub mod envelope;
pub mod kit;
pub mod money;
pub mod pattern;
pub mod primitive;
pub mod verdict;

pub use approval::{ApprovalRule, Escalation, Window, governing_rule};
pub use args::{ArgError, ArgsDecl, CheckedArgs};
pub use catalog::{Catalog, Effect, ToolDecl, ToolSpec};
pub use derive::derive_child;
pub use diff::{Direction, KitChange, KitDiff};
pub use engine::{
    ActionRequest, BudgetView, Decision, DecisionInput, Explanation, PeriodView, RateView, Refusal, Step,
    SubjectStatus, evaluate, explain,
};
pub use envelope::{ApprovalHandle, Envelope, Layer, RecoveryStep};
pub use kit::{
    CanRule, Kit, KitError, KitErrors, KitVersion, Period, PeriodLimit, RateLimit, RateUnit, RuleEffect,
    Weekday,
};
pub use money::{Money, MoneyError};
pub use primitive::{Primitive, PrimitiveSet};
pub use verdict::{EngineVerdict, EnvelopeVerdict, ExplainVerdict};
