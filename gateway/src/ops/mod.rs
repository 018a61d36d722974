//! The operations transports call: the `impl Gateway` façade, one file per family, named like
//! the `/v1` routes and the console's server functions that call them. An operation checks
//! who may do it, runs its jobs through `Gateway::write` and composes several domains in one
//! job where a rule spans them; the tables are written by their domain owners. What every
//! family reads (the clock, the caches, the change signals, the secret opener, lookups by id)
//! is in [`base`], below them. Every `impl Gateway` outside `lib.rs` is here.

mod actions;
mod activity;
pub mod approvals;
pub mod archive;
mod base;
mod brain;
mod connected_apps;
mod connectors;
mod credentials;
pub mod demo;
mod groups;
mod handovers;
pub mod health;
mod idempotency;
mod keys;
mod kits;
mod ledger;
mod logins;
pub mod oauth;
mod outbox;
mod profiles;
mod proposals;
pub mod replay;
mod resend;
pub mod revoke;
mod runtime;
pub mod scim;
mod sessions;
mod slack;
pub mod sso;
mod streams;
mod tenants;
mod tokens;
pub(crate) mod upgrades;
mod users;
mod vault;
mod webhooks;
