//! `GET /metrics`: the Prometheus text exposition of [`gateway::audit::metrics`], with the
//! gauges read across every tenant at the moment of the scrape.
//!
//! Closed by default. On the main listener it takes the operator key as a bearer token
//! (like the other read across tenants, `GET /v1/logs`); with `--metrics-addr` it is served
//! on that separate address instead (a port the operator's network reaches and the public
//! does not), without a key, and the main listener answers 404 for it.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::auth::Operator;
use crate::http::problem::Problem;
use crate::state::AppState;

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

async fn exposition(gateway: &gateway::Gateway) -> Result<Response, Problem> {
    let text = gateway.scrape().await?;
    let mut res = (StatusCode::OK, text).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// `/metrics` on the main listener, for the operator key.
pub async fn with_operator_key(_: Operator, State(state): State<AppState>) -> Result<Response, Problem> {
    exposition(&state.gateway).await
}

/// The router of the separate metrics listener (`--metrics-addr`): `/metrics` only.
pub fn separate(gateway: gateway::Gateway) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let gateway = gateway.clone();
            async move { exposition(&gateway).await }
        }),
    )
}
