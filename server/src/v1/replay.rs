//! Replay and shadow of kits over HTTP (docs/architecture.md#replay-and-shadow).
//!
//! `POST /v1/kits/{name}/replay`: a draft (or a saved version) decided again over the kit's
//! recorded calls in a bounded range; with a company key, every profile's calls; with an
//! agent's key, only its own, and only of its own kit. `PUT`, `GET`, `DELETE
//! /v1/kits/{name}/shadow` and `POST /v1/kits/{name}/shadow/promote` (company key).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use gateway::ops::replay::{ReplayRequest, ShadowView};
use policy::KitVersion;
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    /// The draft kit to decide under; without it, `version` (or the current version).
    #[schema(value_type = Option<Object>)]
    draft: Option<serde_json::Value>,
    /// A saved version to replay instead of a draft.
    #[schema(minimum = 1)]
    version: Option<u32>,
    /// The range's start; a week before `to` unless given. At most 31 days before `to`. The
    /// replay reads the calls recorded in the range only, and whose chain has the kit: its
    /// own profiles' and their sub-agents'.
    from: Option<DateTime<Utc>>,
    /// The range's end (exclusive); now unless given. Never in the future.
    to: Option<DateTime<Utc>>,
    /// List the changed calls after this entry: the previous answer's `next`.
    after: Option<i64>,
    /// How many changed calls to list, 1 to 500 (100 unless given).
    #[schema(minimum = 1, maximum = 500)]
    limit: Option<usize>,
}

#[utoipa::path(post, path = "/v1/kits/{name}/replay", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    request_body(content = ReplayBody, example = json!({"draft": {"name": "default", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "100.00"}}}, "from": "2026-11-28T00:00:00Z"})),
    responses((status = 200, description = "What the draft would have decided otherwise: counts and money by transition, and the changed calls, keyset-paged. Nothing is reserved or written.", body = gateway::ops::replay::ReplayReport),
        (status = 400, description = "`invalid_kit` (each error with its path), `kit_name_mismatch`, `range_too_long`, `range_in_future`, `invalid_range`.", body = Problem),
        (status = 404, description = "No such kit (or version).", body = Problem),
        (status = 429, description = "`replay_rate_limited`: replays are metered (per tenant at most 2 at once and 30 a minute; each agent 6 a minute); ask again after `Retry-After`.", body = Problem,
            headers(("Retry-After" = u32, description = "Seconds until a replay may run.")))))]
pub async fn replay(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let b: ReplayBody = crate::v1::reply::json_body(&body, r#"{"draft": {…}, "from": "…", "to": "…"}"#)?;
    let draft = b.draft.as_ref().map(|d| crate::v1::kits::parse_kit(&d.to_string())).transpose()?;
    let mut req = ReplayRequest {
        draft,
        version: b.version,
        from: b.from,
        to: b.to,
        days: None,
        after: b.after,
        limit: b.limit.unwrap_or(100),
        profile: None,
    };
    let report = match caller {
        Caller::Company(tenant) => state.gateway.replay(&tenant, &name, req).await?,
        Caller::Agent(subject) => {
            req.profile = Some(subject.profile.clone());
            state.gateway.replay_own(&subject, &name, req).await?
        }
    };
    Ok(Json(report).into_response())
}

#[utoipa::path(put, path = "/v1/kits/{name}/shadow", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    request_body = policy::Kit,
    responses((status = 201, description = "The draft now decides every live call of the kit's profiles beside the live kit, without effect.", body = gateway::domain::shadow::Shadow),
        (status = 400, description = "`invalid_kit` (each error with its path), `kit_name_mismatch`.", body = Problem),
        (status = 409, description = "`shadow_exists`: promote or discard the running one first.", body = Problem)))]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company("running a shadow kit")?;
    let body = crate::v1::kits::kit_text(&body)?;
    let kit = crate::v1::kits::named_kit(body, &name)?;
    let s = state.gateway.start_shadow(&tenant, kit, crate::v1::reply::ACTOR).await?;
    Ok((StatusCode::CREATED, Json(s)).into_response())
}

#[utoipa::path(get, path = "/v1/kits/{name}/shadow", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    responses((status = 200, description = "The running shadow, its totals since it started and its diff against the live version.", body = ShadowView,
            headers(("ETag" = String, description = "The live version and the shadow's mark, such as \"3.41\": promote with it as If-Match."))),
        (status = 404, description = "No such kit, or it has no shadow.", body = Problem)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("running a shadow kit")?;
    let view = state.gateway.shadow(&tenant, &name).await?;
    let tag = format!("\"{}.{}\"", view.live_version, view.shadow.after_seq);
    let mut res = Json(view).into_response();
    res.headers_mut().insert(header::ETAG, header::HeaderValue::from_str(&tag).expect("digits and a dot"));
    Ok(res)
}

#[utoipa::path(delete, path = "/v1/kits/{name}/shadow", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    responses((status = 204, description = "Discarded; the live kit is unchanged."),
        (status = 404, description = "The kit has no shadow.", body = Problem)))]
pub async fn discard(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("running a shadow kit")?;
    state.gateway.discard_shadow(&tenant, &name, crate::v1::reply::ACTOR).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The header a promotion names the live version it replaces in.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct PromoteHeaders {
    /// The shadow's `ETag` as GET answered it: the live version it replaces and the shadow's
    /// own mark, such as "3.41".
    #[serde(rename = "If-Match")]
    #[param(pattern = r#"^"?[1-9][0-9]{0,8}\.[0-9]{1,18}"?$"#)]
    if_match: String,
}

#[utoipa::path(post, path = "/v1/kits/{name}/shadow/promote", tag = "kits",
    params(("name" = String, Path, description = "The kit's name."), PromoteHeaders),
    responses((status = 200, description = "The shadow is saved as the kit's next version and ends.", body = gateway::KitRecord),
        (status = 400, description = "`if_match_required`, `invalid_if_match`.", body = Problem),
        (status = 404, description = "The kit has no shadow.", body = Problem),
        (status = 409, description = "`kit_version_conflict`: the live kit changed since you looked; `shadow_changed`: the shadow was discarded and another started since you looked.", body = Problem)))]
pub async fn promote(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let tenant = caller.company("running a shadow kit")?;
    let tag = if_match(&headers)?;
    let saved = state.gateway.promote_shadow(&tenant, &name, tag, crate::v1::reply::ACTOR).await?;
    Ok(Json(saved).into_response())
}

/// What a promotion names in `If-Match`, the shadow's `ETag`: the live version it replaces
/// and the shadow's mark (the entry that started it). Required.
fn if_match(headers: &HeaderMap) -> Result<(KitVersion, i64), Problem> {
    let Some(v) =
        headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()).filter(|v| !v.trim().is_empty())
    else {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "if_match_required",
            "send If-Match with the shadow's ETag (GET /v1/kits/{name}/shadow), such as \"3.41\"",
        ));
    };
    let bad = || {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_if_match",
            "If-Match carries the shadow's ETag as GET /v1/kits/{name}/shadow answered it, such as \"3.41\"",
        )
    };
    let (live, shadow) = v.trim().trim_matches('"').split_once('.').ok_or_else(bad)?;
    Ok((KitVersion(live.parse().map_err(|_| bad())?), shadow.parse().map_err(|_| bad())?))
}

/// Refuses a promotion without a usable `If-Match` before anything else looks at it (the
/// idempotency layer included): the header is what makes it a save from a known version.
pub async fn require_if_match(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match if_match(req.headers()) {
        Ok(_) => next.run(req).await,
        Err(p) => p.into_response(),
    }
}
