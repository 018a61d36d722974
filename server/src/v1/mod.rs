//! The `/v1` API's routes, one module per area (and nothing else: the probes, the scrape and
//! the console's feeds live in [`crate::http`]). Each handler is a thin caller
//! of `gateway`.

pub mod actions;
pub mod approvals;
pub mod brain;
pub mod company_keys;
pub mod connected_apps;
pub mod connectors;
pub mod dto;
pub mod events;
pub mod groups;
pub mod kits;
pub mod ledger;
pub mod openapi;
pub mod profiles;
pub mod replay;
pub mod reply;
pub mod runtime;
pub mod scim_token;
pub mod slack;
pub mod sso;
pub mod streams;
pub mod tenant;
pub mod vault;
pub mod webhooks;

use axum::Router;
use axum::routing::{MethodRouter, get, post};

use crate::state::AppState;

/// Wraps a route's methods in the `Idempotency-Key` layer. A method the route does not have
/// never reaches it, so it answers 405 whatever the header says.
fn idem(state: &AppState, m: MethodRouter<AppState>) -> MethodRouter<AppState> {
    m.route_layer(axum::middleware::from_fn_with_state(state.clone(), crate::http::idempotency::layer))
}

/// The `/v1` API.
pub fn v1(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/v1/users/{user_id}/{primitive}/{verb}", idem(state, post(actions::governed)))
        .route("/v1/policy/explain", idem(state, post(actions::explain)))
        .route("/v1/users/{user_id}/budget", idem(state, get(ledger::budget)))
        .route("/v1/users/{user_id}/logs", idem(state, get(ledger::logs)))
        .route("/v1/users/{user_id}/ledger", idem(state, get(ledger::ledger)))
        .route("/v1/logs", idem(state, get(ledger::all_logs)))
        .route("/v1/logs/verify", idem(state, get(ledger::verify)))
        .route("/v1/brain/writebacks", idem(state, get(brain::writebacks).post(brain::submit)))
        .route("/v1/brain/writebacks/{id}", idem(state, get(brain::writeback)))
        .route("/v1/brain/proposals", idem(state, get(brain::proposals)))
        .route("/v1/brain/beliefs", idem(state, get(brain::beliefs)))
        .route("/v1/brain/proposals/{id}", idem(state, get(brain::proposal)))
        .route("/v1/brain/proposals/{id}/decision", idem(state, post(brain::decide)))
        .route("/v1/events", idem(state, get(events::stream)))
        .route("/v1/tenant/settings", idem(state, get(tenant::get).put(tenant::put)))
        .route("/v1/tenant/retention", idem(state, get(tenant::get_retention).put(tenant::put_retention)))
        .route("/v1/tenant/archive", idem(state, get(tenant::get_archive)))
        .route("/v1/agent-profiles", idem(state, get(profiles::list).post(profiles::create)))
        .route("/v1/agent-profiles/{id}", idem(state, get(profiles::get)))
        .route("/v1/agent-profiles/{id}/revoke", idem(state, post(profiles::revoke)))
        .route("/v1/agent-profiles/{id}/revoke-preview", idem(state, get(profiles::revoke_preview)))
        .route("/v1/agent-profiles/{id}/keys", idem(state, get(profiles::keys).post(profiles::create_key)))
        .route("/v1/agent-profiles/{id}/keys/{key_id}/rotate", idem(state, post(profiles::rotate_key)))
        .route(
            "/v1/agent-profiles/{id}/keys/{key_id}",
            idem(state, axum::routing::delete(profiles::revoke_key)),
        )
        .route("/v1/company-keys", idem(state, get(company_keys::list).post(company_keys::create)))
        .route("/v1/company-keys/{id}/rotate", idem(state, post(company_keys::rotate)))
        .route("/v1/company-keys/{id}", idem(state, axum::routing::delete(company_keys::revoke)))
        .route("/v1/vault/secrets", idem(state, get(vault::list)))
        .route("/v1/vault/secrets/{name}", idem(state, get(vault::get).put(vault::put).delete(vault::delete)))
        .route("/v1/connectors", idem(state, get(connectors::list)))
        .route("/v1/connectors/{target}", idem(state, axum::routing::put(connectors::put)))
        .route("/v1/connectors/{target}/test", idem(state, post(connectors::test)))
        .route("/v1/connected-apps", idem(state, get(connected_apps::list)))
        .route(
            "/v1/connected-apps/{toolkit}",
            idem(state, axum::routing::put(connected_apps::put).delete(connected_apps::delete)),
        )
        .route("/v1/connected-apps/{toolkit}/test", idem(state, post(connected_apps::test)))
        .route("/v1/sso/oidc", idem(state, get(sso::get).put(sso::put).delete(sso::delete)))
        .route("/v1/sso/oidc/test", idem(state, post(sso::test)))
        .route("/v1/slack", idem(state, get(slack::get).put(slack::put).delete(slack::delete)))
        .route("/v1/slack/deliveries", idem(state, get(slack::deliveries)))
        .route("/v1/slack/deliveries/{message_id}/retry", idem(state, post(slack::retry)))
        .route("/v1/slack/links", idem(state, get(slack::links)))
        .route("/v1/slack/links/{slack_user_id}", idem(state, axum::routing::delete(slack::unlink)))
        .route("/v1/scim/token", idem(state, post(scim_token::create)))
        .route("/v1/runtime", idem(state, get(runtime::get).put(runtime::put).delete(runtime::delete)))
        .route("/v1/runtime/commands", idem(state, get(runtime::commands)))
        .route("/v1/runtime/commands/{command_id}", idem(state, get(runtime::command)))
        .route("/v1/runtime/commands/purge", idem(state, post(runtime::purge)))
        .route("/v1/runtime/commands/{command_id}/retry", idem(state, post(runtime::retry)))
        .route("/v1/outbox", idem(state, get(runtime::queues)))
        .merge(outbound_routes(state))
        .merge(kit_routes(state))
        .merge(approval_routes(state))
        .route("/v1/openapi.json", get(crate::v1::openapi::openapi_json))
}

/// What the tenant sends out: webhook endpoints and their deliveries, log streams and their
/// dead letters.
fn outbound_routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/v1/webhooks", idem(state, get(webhooks::list).post(webhooks::create)))
        .route("/v1/webhooks/deliveries", idem(state, get(webhooks::deliveries)))
        .route("/v1/webhooks/deliveries/{message_id}/retry", idem(state, post(webhooks::retry)))
        .route("/v1/webhooks/{id}", idem(state, axum::routing::delete(webhooks::delete)))
        .route("/v1/webhooks/{id}/test", idem(state, post(webhooks::test)))
        .route("/v1/webhooks/{id}/purge", idem(state, post(webhooks::purge)))
        .route("/v1/streams", idem(state, get(streams::list).post(streams::create)))
        .route("/v1/streams/{id}", idem(state, get(streams::get).delete(streams::delete)))
        .route("/v1/streams/{id}/dead-letters", idem(state, get(streams::dead_letters)))
        .route("/v1/streams/{id}/dead-letters/{seq}/retry", idem(state, post(streams::retry_dead_letter)))
}

/// Kits: versions, diffs, replay and shadow.
fn kit_routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/v1/kits", idem(state, get(kits::list)))
        .route("/v1/kits/{name}", idem(state, get(kits::current).put(kits::put)))
        .route("/v1/kits/{name}/versions", idem(state, get(kits::versions)))
        .route("/v1/kits/{name}/versions/{version}", idem(state, get(kits::version)))
        .route("/v1/kits/{name}/diff", idem(state, get(kits::diff)))
        .route("/v1/kits/{name}/replay", idem(state, post(replay::replay)))
        .route(
            "/v1/kits/{name}/shadow",
            idem(state, get(replay::get).put(replay::start).delete(replay::discard)),
        )
        .route(
            "/v1/kits/{name}/shadow/promote",
            idem(state, post(replay::promote))
                .route_layer(axum::middleware::from_fn(replay::require_if_match)),
        )
}

/// Approvals, their bulk decisions and the groups approval rules name.
fn approval_routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/v1/approvals", idem(state, get(approvals::list)))
        .route("/v1/approvals/decide", idem(state, post(approvals::decide_many)))
        .route("/v1/approvals/{id}", idem(state, get(approvals::get)))
        .route("/v1/approvals/{id}/approve", idem(state, post(approvals::approve)))
        .route("/v1/approvals/{id}/deny", idem(state, post(approvals::deny)))
        .route("/v1/groups", idem(state, get(groups::list).post(groups::create)))
        .route("/v1/groups/{name}", idem(state, axum::routing::delete(groups::delete)))
        .route(
            "/v1/groups/{name}/members/{user_id}",
            idem(state, axum::routing::put(groups::add).delete(groups::remove)),
        )
}
