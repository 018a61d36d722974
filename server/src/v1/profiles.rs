//! Agent profiles and their scoped keys over HTTP, for tenant administration (company key).
//!
//! Profiles: list as a tree, create (optionally as a sub-agent), get, preview and perform a
//! revoke (which reports its cascade). Keys: list, create, rotate (optional grace period),
//! revoke. A key's secret appears in a response exactly once, when it is created or rotated.

use axum::Json;
use axum::extract::State;

use crate::http::problem::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::{KeyId, ProfileId};
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body, secret_bearing};

fn profile_id(s: &str) -> Result<ProfileId, Problem> {
    ProfileId::parse(s)
        .ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile"))
}

fn key_id(s: &str) -> Result<KeyId, Problem> {
    KeyId::parse(s).ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "not_found", "no such key"))
}

#[utoipa::path(get, path = "/v1/agent-profiles", tag = "profiles",
    responses((status = 200, description = "The profile tree, depth first.", body = crate::v1::dto::ProfileTree)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    let tree = state.gateway.profile_tree(&tenant).await?;
    Ok(Json(crate::v1::dto::ProfileTree { items: tree }).into_response())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProfile {
    #[schema(schema_with = crate::v1::dto::profile_name)]
    name: String,
    /// The kit the profile acts under (by name).
    #[schema(schema_with = crate::v1::dto::kit_name)]
    kit: String,
    /// Its parent's id, for a sub-agent.
    #[schema(pattern = "^prf_[A-Za-z0-9]{1,64}$")]
    parent: Option<String>,
    /// The console user (username) who owns the profile.
    #[schema(pattern = "^[a-z0-9._@-]{1,64}$")]
    owner: Option<String>,
}

#[utoipa::path(post, path = "/v1/agent-profiles", tag = "profiles", request_body = CreateProfile,
    responses((status = 201, description = "Created.", body = gateway::Profile)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    let req: CreateProfile =
        json_body(&body, r#"{"name": "buyer", "kit": "Default", "parent": "prf_…", "owner": "alice"}"#)?;
    let parent = req.parent.as_deref().map(profile_id).transpose()?;
    let owner = match req.owner.as_deref() {
        Some(u) => Some(state.gateway.user_named(&tenant, u).await?.id),
        None => None,
    };
    let p =
        state.gateway.create_profile(&tenant, &req.name, owner.as_ref(), parent.as_ref(), &req.kit).await?;
    Ok((StatusCode::CREATED, Json(p)).into_response())
}

#[utoipa::path(get, path = "/v1/agent-profiles/{id}", tag = "profiles",
    params(("id" = String, Path, description = "A profile id.")),
    responses((status = 200, description = "The profile.", body = gateway::Profile),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let id = profile_id(&id)?;
    if let Caller::Agent(s) = &caller
        && s.profile != id
    {
        return Err(Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile"));
    }
    Ok(Json(state.gateway.profile(caller.tenant(), &id).await?).into_response())
}

#[utoipa::path(get, path = "/v1/agent-profiles/{id}/revoke-preview", tag = "profiles",
    params(("id" = String, Path, description = "A profile id.")),
    responses((status = 200, description = "What a revoke would touch.", body = gateway::domain::revoke::RevokeReport)))]
pub async fn revoke_preview(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    Ok(Json(state.gateway.revoke_preview(&tenant, &profile_id(&id)?).await?).into_response())
}

#[utoipa::path(post, path = "/v1/agent-profiles/{id}/revoke", tag = "profiles",
    params(("id" = String, Path, description = "A profile id.")),
    responses((status = 200, description = "Revoked, with the cascade.", body = gateway::domain::revoke::RevokeReport)))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    Ok(Json(state.gateway.revoke_profile(&tenant, &profile_id(&id)?, ACTOR, None).await?).into_response())
}

#[utoipa::path(get, path = "/v1/agent-profiles/{id}/keys", tag = "profiles",
    params(("id" = String, Path, description = "A profile id.")),
    responses((status = 200, description = "The profile's keys, never their secrets.", body = crate::v1::dto::KeyList)))]
pub async fn keys(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    let items = state.gateway.keys(&tenant, &profile_id(&id)?).await?;
    Ok(Json(crate::v1::dto::KeyList { items }).into_response())
}

fn issued_body(
    key: gateway::domain::keys::KeyInfo,
    issued: gateway::IssuedKey,
) -> crate::v1::dto::IssuedKeyBody {
    crate::v1::dto::IssuedKeyBody { key, secret: Some(issued.token), secret_withheld: None }
}

#[utoipa::path(post, path = "/v1/agent-profiles/{id}/keys", tag = "profiles",
    params(("id" = String, Path, description = "A profile id.")),
    responses((status = 201, description = "A new key; the secret is shown here once.", body = crate::v1::dto::IssuedKeyBody)))]
pub async fn create_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    let (info, issued) = state.gateway.issue_key(&tenant, &profile_id(&id)?, ACTOR).await?;
    Ok(secret_bearing((StatusCode::CREATED, Json(issued_body(info, issued))).into_response()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rotate {
    /// How long the old key keeps working; none or 0 stops it at once.
    #[schema(minimum = 0, maximum = 604800)]
    #[serde(default, deserialize_with = "whole_seconds")]
    grace_secs: Option<i64>,
}

/// A number of seconds as JSON Schema's `integer` allows it: `5` or `5.0`, not `5.5`.
pub(crate) fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    let whole =
        n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15).map(|f| f as i64));
    whole.map(Some).ok_or_else(|| serde::de::Error::custom(format!("{n} is not a whole number of seconds")))
}

#[utoipa::path(post, path = "/v1/agent-profiles/{id}/keys/{key_id}/rotate", tag = "profiles",
    params(("id" = String, Path, description = "A profile id."), ("key_id" = String, Path, description = "A key id.")),
    request_body(content = Rotate, description = "How long the old key keeps working."),
    responses((status = 200, description = "The replacement; its secret is shown here once.", body = crate::v1::dto::IssuedKeyBody)))]
pub async fn rotate_key(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    let req: Rotate = json_body(&body, r#"{"grace_secs": 3600}"#)?;
    let (info, issued) =
        state.gateway.rotate_key(&tenant, &profile_id(&id)?, &key_id(&key)?, req.grace_secs, ACTOR).await?;
    Ok(secret_bearing(Json(issued_body(info, issued)).into_response()))
}

#[utoipa::path(delete, path = "/v1/agent-profiles/{id}/keys/{key_id}", tag = "profiles",
    params(("id" = String, Path, description = "A profile id."), ("key_id" = String, Path, description = "A key id.")),
    responses((status = 200, description = "Revoked.", body = gateway::domain::keys::KeyInfo)))]
pub async fn revoke_key(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing profiles and keys")?;
    Ok(Json(state.gateway.revoke_key(&tenant, &profile_id(&id)?, &key_id(&key)?, ACTOR).await?)
        .into_response())
}
