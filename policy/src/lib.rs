//! `policy`: the one place where governance rules live.
//!
//! Pure and synchronous: no IO, no async, no database. The gateway, every transport and the
//! console's server functions call it, and the kit editor runs it in the browser compiled to
//! wasm. It takes the facts it needs as arguments and returns decisions.
//!
//! - [`money`]: exact amounts in $0.0001 units (SPEC §6).
//! - [`kit`]: the AccountKit and its strict validation (SPEC §4).
//! - [`derive`]: sub-agent narrowing (SPEC §4).
//! - [`diff`]: what a kit edit widens and narrows (SPEC §4, §13).
//! - [`catalog`]: tools with primitive, effect and price (SPEC §5).
//! - [`args`]: each action's declared arguments, checked before anything is decided.
//! - [`engine`]: the decision pipeline, steps 2–8 (SPEC §5).
//! - [`verdict`]: the three vocabularies and their mappings (SPEC §8).
//! - [`envelope`]: the refusal envelope (SPEC §8).

pub mod args;
pub mod catalog;
pub mod derive;
pub mod diff;
pub mod engine;
pub mod envelope;
pub mod kit;
pub mod money;
pub mod primitive;
pub mod verdict;

pub use args::{ArgError, ArgsDecl, CheckedArgs};
pub use catalog::{Catalog, Effect, ToolDecl, ToolSpec};
pub use derive::derive_child;
pub use diff::{Direction, KitChange, KitDiff};
pub use engine::{
    ActionRequest, BudgetView, Decision, DecisionInput, Explanation, Refusal, Step, SubjectStatus, evaluate,
    explain,
};
pub use envelope::{ApprovalHandle, Envelope, Layer, RecoveryStep};
pub use kit::{CanRule, Kit, KitError, KitErrors, KitVersion, RuleEffect};
pub use money::{Money, MoneyError};
pub use primitive::{Primitive, PrimitiveSet};
pub use verdict::{EngineVerdict, EnvelopeVerdict, ExplainVerdict};
