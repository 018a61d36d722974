//! `server`: the binary's parts. Configuration ([`config`]), the router and startup
//! ([`startup`]) the HTTP routes outside the console ([`routes`]) and
//! the MCP transport ([`mcp`]). Tests build the same
//! [`startup::Application`] that `main` runs.

pub mod auth;
pub mod config;
pub mod console_auth;
pub mod demo_agent;
pub mod demo_upstream;
pub mod idempotency;
pub mod master_key;
pub mod mcp;
pub mod openapi;
pub mod problem;
pub mod routes;
pub mod serve;
pub mod startup;
pub mod team_runtime;
pub mod upstream;
pub mod upstream_tracker;
pub mod webhook_receiver;
