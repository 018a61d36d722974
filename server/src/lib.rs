//! `server`: the binary's parts. Configuration ([`config`]), the router and startup
//! ([`startup`]) and the HTTP routes outside the console ([`routes`]). Tests build the same
//! [`startup::Application`] that `main` runs.

pub mod config;
pub mod routes;
pub mod startup;
