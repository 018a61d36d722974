//! The tenant's connectors over HTTP (company key): where each primitive's (or action's)
//! calls are carried out, and a test probe that shows what the upstream answers. What is not
//! configured runs on the built-in sandbox.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::connectors::ConnectorSpec;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing connectors";
const EXAMPLE: &str = r#"{"kind": "http", "url": "https://processor.example.com/charge", "timeout_ms": 10000, "auth": {"kind": "bearer", "secret": "card-processor"}}"#;

/// The configured connectors; every primitive and action not listed runs on the sandbox.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ConnectorList {
    pub items: Vec<gateway::delivery::connectors::ConnectorRecord>,
}

#[utoipa::path(get, path = "/v1/connectors", tag = "connectors", operation_id = "list_connectors",
    responses((status = 200, description = "The configured connectors; the rest run on the sandbox.", body = ConnectorList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(ConnectorList { items: state.gateway.connectors_checked(&tenant).await? }).into_response())
}

#[utoipa::path(put, path = "/v1/connectors/{target}", tag = "connectors", operation_id = "put_connector",
    params(("target" = String, Path, description = "A primitive (`cards`) or an action (`cards.charge`); the action's connector wins.")),
    request_body = gateway::delivery::connectors::ConnectorSpec,
    responses((status = 200, description = "Saved; the next call of the target runs on it. The whole list.", body = ConnectorList)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(target): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let spec: ConnectorSpec = json_body(&body, EXAMPLE)?;
    state.gateway.set_connector(&tenant, &target, spec, ACTOR, Transport::Http).await?;
    Ok(Json(ConnectorList { items: state.gateway.connectors_checked(&tenant).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/connectors/{target}/test", tag = "connectors", operation_id = "test_connector",
    params(("target" = String, Path, description = "A primitive or an action.")),
    responses((status = 200, description = "What the upstream answered a test probe (the sandbox always answers).", body = gateway::delivery::connectors::http::Probe)))]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(target): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.test_connector(&tenant, &target).await?).into_response())
}
