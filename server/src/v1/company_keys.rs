//! Company keys over HTTP (company key): list, issue, rotate with an optional grace period,
//! revoke. A secret appears in a response exactly once, when its key is issued or rotated;
//! a tenant always keeps one active company key.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::KeyId;
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::dto::{CompanyKeyList, IssuedCompanyKey};
use crate::v1::reply::{ACTOR, json_body, secret_bearing};

const WHAT: &str = "managing company keys";

fn key_id(s: &str) -> Result<KeyId, Problem> {
    KeyId::parse(s).ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "not_found", "no such company key"))
}

#[utoipa::path(get, path = "/v1/company-keys", tag = "company",
    responses((status = 200, description = "The tenant's company keys, never their secrets.", body = CompanyKeyList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(CompanyKeyList { items: state.gateway.company_keys(&tenant).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/company-keys", tag = "company",
    responses((status = 201, description = "A new company key; its secret is shown here once.", body = IssuedCompanyKey)))]
pub async fn create(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let (key, issued) = state.gateway.issue_company_key(&tenant, None, ACTOR).await?;
    let body = IssuedCompanyKey { key, secret: Some(issued.token), secret_withheld: None };
    Ok(secret_bearing((StatusCode::CREATED, Json(body)).into_response()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateCompanyKey {
    /// How long the old key keeps working, 0 to 604800 seconds; 0 or none stops it at once.
    #[schema(minimum = 0, maximum = 604800)]
    #[serde(default, deserialize_with = "crate::v1::profiles::whole_seconds")]
    grace_secs: Option<i64>,
}

#[utoipa::path(post, path = "/v1/company-keys/{id}/rotate", tag = "company",
    params(("id" = String, Path, description = "A company key id.")),
    request_body(content = RotateCompanyKey, description = "How long the old key keeps working."),
    responses((status = 200, description = "The replacement; its secret is shown here once.", body = IssuedCompanyKey)))]
pub async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let req: RotateCompanyKey = json_body(&body, r#"{"grace_secs": 3600}"#)?;
    let old = key_id(&id)?;
    let (key, issued) = state.gateway.issue_company_key(&tenant, Some((&old, req.grace_secs)), ACTOR).await?;
    let body = IssuedCompanyKey { key, secret: Some(issued.token), secret_withheld: None };
    Ok(secret_bearing(Json(body).into_response()))
}

#[utoipa::path(delete, path = "/v1/company-keys/{id}", tag = "company",
    params(("id" = String, Path, description = "A company key id.")),
    responses((status = 200, description = "Revoked; it stops at once, and its open streams close.", body = gateway::domain::tenants::CompanyKeyInfo)))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.revoke_company_key(&tenant, &key_id(&id)?, ACTOR).await?).into_response())
}
