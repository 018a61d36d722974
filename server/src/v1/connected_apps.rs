//! The tenant's connected apps over HTTP (company key): upstream MCP servers registered under
//! a toolkit name, whose tools agents list and call as `connections.tools` and
//! `connections.execute`. A test lists the app's tools as the gateway's MCP client sees them.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::connectors::HttpSpec;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing connected apps";
const EXAMPLE: &str = r#"{"url": "https://tracker.example.com/mcp", "timeout_ms": 10000, "auth": {"kind": "bearer", "secret": "tracker-token"}}"#;

/// The registered connected apps.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct AppList {
    pub items: Vec<gateway::delivery::connectors::apps::AppRecord>,
}

async fn all(state: &AppState, tenant: &gateway::TenantId) -> Result<Response, Problem> {
    Ok(Json(AppList { items: state.gateway.connected_apps_checked(tenant).await? }).into_response())
}

#[utoipa::path(get, path = "/v1/connected-apps", tag = "connectors", operation_id = "list_connected_apps",
    responses((status = 200, description = "The registered connected apps.", body = AppList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    all(&state, &tenant).await
}

#[utoipa::path(put, path = "/v1/connected-apps/{toolkit}", tag = "connectors", operation_id = "put_connected_app",
    params(("toolkit" = String, Path, description = "The toolkit name its tools go by (`tracker`).")),
    request_body = gateway::delivery::connectors::HttpSpec,
    responses((status = 200, description = "Registered; its tools are listed from the next call. The whole list.", body = AppList)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(toolkit): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let spec: HttpSpec = json_body(&body, EXAMPLE)?;
    state.gateway.set_connected_app(&tenant, &toolkit, spec, ACTOR, Transport::Http).await?;
    all(&state, &tenant).await
}

#[utoipa::path(delete, path = "/v1/connected-apps/{toolkit}", tag = "connectors", operation_id = "delete_connected_app",
    params(("toolkit" = String, Path, description = "The toolkit name.")),
    responses((status = 200, description = "Removed; its tools are gone from the next listing. The whole list.", body = AppList)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(toolkit): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_connected_app(&tenant, &toolkit, ACTOR, Transport::Http).await?;
    all(&state, &tenant).await
}

#[utoipa::path(post, path = "/v1/connected-apps/{toolkit}/test", tag = "connectors", operation_id = "test_connected_app",
    params(("toolkit" = String, Path, description = "The toolkit name.")),
    responses((status = 200, description = "The app's tools as the gateway lists them now, each with its effect, or why it did not answer.", body = gateway::delivery::connectors::app_config::AppProbe)))]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(toolkit): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.test_connected_app(&tenant, &toolkit).await?).into_response())
}
