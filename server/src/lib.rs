//! `server`: the transports and the binary, in layers that depend downwards only:
//!
//! - [`state`]: what every handler reaches (a leaf); [`config`], [`error`] and [`master_key`]
//!   beside it;
//! - [`http`]: the machinery every surface shares (authentication, idempotency, the problem
//!   body, limits, the connection loop);
//! - [`v1`] (the JSON API and its OpenAPI document) and [`mcp`]: the surfaces;
//! - [`startup`]: the router and the application that `main` runs and the tests build;
//! - [`reference`](mod@reference): the reference programs the gateway talks to, each its own process.

pub mod config;
pub mod error;
pub mod http;
pub mod master_key;
pub mod mcp;
pub mod reference;
pub mod scim;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod v1;

/// A client for the server's own outbound HTTP (the reference programs, the load generator,
/// the tests): reqwest on rustls with the ring provider, which this installs first, as the
/// build names no default one (`gateway::delivery::egress::install_tls_provider`).
pub fn http_client() -> reqwest::Client {
    http_client_builder().build().expect("an HTTP client")
}

/// [`http_client`]'s builder, for a client with its own settings.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    gateway::delivery::egress::install_tls_provider();
    reqwest::Client::builder()
}
