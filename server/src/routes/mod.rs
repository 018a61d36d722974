//! HTTP routes outside the console pages, one module per area. Each handler is a thin caller
//! of `gateway`.

pub mod actions;
pub mod approvals;
pub mod health;
pub mod ledger;

use axum::Router;
use axum::routing::{get, post};

use crate::startup::AppState;

/// The `/v1` API.
pub fn v1() -> Router<AppState> {
    Router::new()
        .route("/v1/users/{user_id}/{primitive}/{verb}", post(actions::governed))
        .route("/v1/policy/explain", post(actions::explain))
        .route("/v1/users/{user_id}/budget", get(ledger::budget))
        .route("/v1/users/{user_id}/logs", get(ledger::logs))
        .route("/v1/logs/verify", get(ledger::verify))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/{id}", get(approvals::get))
        .route("/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/v1/approvals/{id}/deny", post(approvals::deny))
}
