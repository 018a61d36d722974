//! The rules and their SQL: each module owns its tables (`gateway/tests/tidy.rs` lists the
//! owner of each) and every other module writes them through it.
//!
//! Rule: a domain module calls the audit log and the store, never delivery or the operations
//! above it, and holds no `impl Gateway` (`gateway/tests/tidy.rs` refuses an upward path).

pub mod approvals;
pub mod archive;
pub mod brain;
pub mod calls;
pub mod chain;
pub mod connector;
pub mod credentials;
pub mod decision;
pub mod groups;
pub mod handovers;
pub mod idempotency;
pub mod in_flight;
pub mod keys;
pub mod kits;
pub mod ledger;
pub mod logins;
pub mod oauth;
pub mod periods;
pub mod principal;
pub mod profiles;
pub mod replay;
pub mod reserve;
pub mod revoke;
pub mod scim;
pub mod sessions;
pub mod shadow;
pub mod slack_links;
pub mod sso;
pub(crate) mod sweep;
pub mod tenants;
pub mod tokens;
pub mod trail;
pub mod users;
pub mod vault;
