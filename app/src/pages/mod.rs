//! One module per console view (docs/architecture.md#console-views).

pub mod account;
pub mod activity;
pub mod archive;
pub mod beliefs;
pub mod connect;
pub mod connectors;
pub mod inbox;
pub mod kits;
pub mod login;
pub mod not_found;
pub mod overview;
pub mod profiles;
pub mod proposals;
pub mod replay;
pub mod runtime;
pub mod slack_link;
pub mod spend;
pub mod sso;
pub mod streams;
pub mod users;
