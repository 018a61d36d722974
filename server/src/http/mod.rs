//! The HTTP machinery every surface shares: who is calling ([`auth`], [`console_auth`]),
//! `Idempotency-Key` ([`idempotency`]), the problem body ([`problem`]), request limits
//! ([`limits`]), the console's static assets and compression ([`assets`]) and the connection
//! loop ([`serve`]).

pub mod assets;
pub mod auth;
pub mod console_auth;
pub mod idempotency;
pub mod limits;
pub mod problem;
pub mod serve;
