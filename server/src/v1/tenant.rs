//! The tenant's own settings over HTTP (company key): its time zone, in which budget periods
//! are counted, and its rate limit on all of its agents' calls together
//! (docs/architecture.md#periods-and-rate-limits).
//!
//! `GET /v1/tenant/settings`; `PUT /v1/tenant/settings` with `{"time_zone": "Europe/Berlin",
//! "rate_limit": {"calls": 600, "per": "minute"}}` (`rate_limit` null or left out removes
//! it). A new zone takes effect at the current zone's next midnight, which the answer names
//! (`time_zone_changes_at`); a bad zone or rate is a `400` naming the field, and nothing is
//! saved.
//!
//! `GET /v1/tenant/retention`; `PUT /v1/tenant/retention` with `{"log_days": 90}` (null keeps
//! every entry): how long archived log entries stay in the database (docs/archive.md).
//! `GET /v1/tenant/archive`: how far the log is archived, and deleted under the retention.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use gateway::domain::tenants::{Retention, SettingsInput, TenantSettings};

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::ACTOR;

#[utoipa::path(get, path = "/v1/tenant/settings", tag = "tenant",
    responses((status = 200, description = "The time zone (and a change not yet in effect) and the tenant's rate limit.", body = TenantSettings)))]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<Json<TenantSettings>, Problem> {
    let tenant = caller.company("reading the tenant's settings")?;
    Ok(Json(state.gateway.tenant_settings(&tenant).await?))
}

#[utoipa::path(put, path = "/v1/tenant/settings", tag = "tenant", request_body = SettingsInput,
    responses((status = 200, description = "Saved; a new zone takes effect at `time_zone_changes_at`.", body = TenantSettings),
        (status = 400, description = "An unknown time zone, or a rate limit out of bounds: the message names the field.", body = Problem)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Json<TenantSettings>, Problem> {
    let tenant = caller.company("changing the tenant's settings")?;
    let hint = r#"send {"time_zone": "Europe/Berlin", "rate_limit": {"calls": 600, "per": "minute"}} (per is second, minute or hour)"#;
    let input: SettingsInput = parse(&body, "invalid_settings", hint)?;
    Ok(Json(state.gateway.set_tenant_settings(&tenant, input, ACTOR).await?))
}

/// The body, or a `400 code` that names the JSON path of what is wrong and ends with `hint`.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], code: &'static str, hint: &str) -> Result<T, Problem> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        Problem::new(StatusCode::BAD_REQUEST, code, format!("{path}: {}; {hint}", e.into_inner()))
    })
}

#[utoipa::path(get, path = "/v1/tenant/retention", tag = "tenant",
    responses((status = 200, description = "How many days archived log entries stay in the database; null keeps them all.", body = Retention)))]
pub async fn get_retention(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Retention>, Problem> {
    let tenant = caller.company("reading the tenant's retention")?;
    Ok(Json(state.gateway.log_retention(&tenant).await?))
}

#[utoipa::path(put, path = "/v1/tenant/retention", tag = "tenant", request_body = Retention,
    responses((status = 200, description = "Saved; the archiver deletes what it allows on its next round.", body = Retention),
        (status = 400, description = "Days out of bounds, or a body that is not `{\"log_days\": N}`.", body = Problem)))]
pub async fn put_retention(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Json<Retention>, Problem> {
    let tenant = caller.company("changing the tenant's retention")?;
    let hint = r#"send {"log_days": 90}, or null to keep every entry"#;
    let input: Retention = parse(&body, "invalid_retention", hint)?;
    Ok(Json(state.gateway.set_log_retention(&tenant, input, ACTOR).await?))
}

#[utoipa::path(get, path = "/v1/tenant/archive", tag = "tenant",
    responses((status = 200, description = "How far the tenant's log is archived, and deleted from the database under its retention.", body = gateway::ops::archive::ArchiveStatus)))]
pub async fn get_archive(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<gateway::ops::archive::ArchiveStatus>, Problem> {
    let tenant = caller.company("reading the tenant's archive")?;
    Ok(Json(state.gateway.archive_status(&tenant).await?))
}
