//! The HTTP machinery every surface shares: who is calling ([`auth`], [`console_auth`]),
//! `Idempotency-Key` ([`idempotency`]), the problem body ([`problem`]), request limits
//! ([`limits`]), the console's static assets and compression ([`assets`]) and the connection
//! loop ([`serve`]); and the routes that are neither `/v1` nor a console page: the probes
//! ([`health`]), the scrape ([`metrics`]), the console's feeds and exports ([`console`]) and single
//! sign-on ([`sso`]), and OAuth for MCP clients ([`oauth`]).

pub mod assets;
pub mod auth;
pub mod console;
pub mod console_auth;
pub mod health;
pub mod idempotency;
pub mod limits;
pub mod metrics;
pub mod oauth;
pub mod problem;
pub mod serve;
pub mod slack;
pub mod sso;
