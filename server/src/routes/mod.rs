//! HTTP routes outside the console pages, one module per area. Each handler is a thin caller
//! of `gateway`.

pub mod actions;
pub mod approvals;
pub mod brain;
pub mod company_keys;
pub mod console;
pub mod events;
pub mod health;
pub mod kits;
pub mod ledger;
pub mod profiles;

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
        .route("/v1/users/{user_id}/ledger", get(ledger::ledger))
        .route("/v1/logs", get(ledger::all_logs))
        .route("/v1/logs/verify", get(ledger::verify))
        .route("/v1/brain/writebacks", get(brain::writebacks).post(brain::submit))
        .route("/v1/brain/writebacks/{id}", get(brain::writeback))
        .route("/v1/brain/proposals", get(brain::proposals))
        .route("/v1/brain/proposals/{id}", get(brain::proposal))
        .route("/v1/brain/proposals/{id}/decision", post(brain::decide))
        .route("/v1/events", get(events::stream))
        .route("/v1/kits", get(kits::list))
        .route("/v1/kits/{name}", get(kits::current).put(kits::put))
        .route("/v1/kits/{name}/versions", get(kits::versions))
        .route("/v1/kits/{name}/versions/{version}", get(kits::version))
        .route("/v1/kits/{name}/diff", get(kits::diff))
        .route("/v1/agent-profiles", get(profiles::list).post(profiles::create))
        .route("/v1/agent-profiles/{id}", get(profiles::get))
        .route("/v1/agent-profiles/{id}/revoke", post(profiles::revoke))
        .route("/v1/agent-profiles/{id}/revoke-preview", get(profiles::revoke_preview))
        .route("/v1/agent-profiles/{id}/keys", get(profiles::keys).post(profiles::create_key))
        .route("/v1/agent-profiles/{id}/keys/{key_id}/rotate", post(profiles::rotate_key))
        .route("/v1/agent-profiles/{id}/keys/{key_id}", axum::routing::delete(profiles::revoke_key))
        .route("/v1/company-keys", get(company_keys::list).post(company_keys::create))
        .route("/v1/company-keys/{id}/rotate", post(company_keys::rotate))
        .route("/v1/company-keys/{id}", axum::routing::delete(company_keys::revoke))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/{id}", get(approvals::get))
        .route("/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/v1/approvals/{id}/deny", post(approvals::deny))
        .route("/v1/openapi.json", get(crate::openapi::openapi_json))
}
