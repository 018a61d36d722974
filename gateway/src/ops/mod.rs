//! The operations transports call: `impl Gateway` blocks that compose several domains in one
//! job. Most operations still live beside their domain module; they move here one family at
//! a time (see `docs/architecture.md`).

mod actions;
mod activity;
pub mod approvals;
mod brain;
pub mod demo;
mod recovery;
pub mod revoke;
pub(crate) mod upgrades;
