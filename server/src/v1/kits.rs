//! AccountKits over HTTP (company key), versioned with optimistic concurrency.
//!
//! `GET /v1/kits` (current versions), `GET /v1/kits/{name}` (current, with `ETag` = version),
//! `GET /v1/kits/{name}/versions`, `GET /v1/kits/{name}/versions/{v}`,
//! `PUT /v1/kits/{name}` with `If-Match: <version>` (409 when someone saved in between; no
//! `If-Match` creates a new kit), and `GET /v1/kits/{name}/diff?from=&to=` in words.

use axum::Json;
use axum::extract::State;

use crate::http::problem::{Path, Query};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gateway::{KitRecord, TenantId};
use policy::{Kit, KitDiff, KitVersion};
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;

fn with_etag(r: KitRecord) -> Response {
    let etag = format!("\"{}\"", r.kit.version.0);
    let mut res = Json(r).into_response();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

/// A request body as the text of a kit: UTF-8, or a 400 `invalid_kit`.
pub(crate) fn kit_text(body: &[u8]) -> Result<&str, Problem> {
    std::str::from_utf8(body).map_err(|_| {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_kit", "the kit must be JSON text (UTF-8)")
    })
}

/// A kit document from JSON text, with each error's path on a 400 `invalid_kit`.
pub(crate) fn parse_kit(text: &str) -> Result<Kit, Problem> {
    Kit::from_json(text).map_err(|e| {
        let each: Vec<String> = e.0.iter().map(ToString::to_string).collect();
        Problem::new(StatusCode::BAD_REQUEST, "invalid_kit", each.join("; "))
    })
}

/// [`parse_kit`], for the kit the path names: another name is a 400 `kit_name_mismatch`.
pub(crate) fn named_kit(text: &str, name: &str) -> Result<Kit, Problem> {
    let kit = parse_kit(text)?;
    if kit.name != name {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "kit_name_mismatch",
            format!("the body's name \"{}\" is not \"{name}\"", kit.name),
        ));
    }
    Ok(kit)
}

#[utoipa::path(get, path = "/v1/kits", tag = "kits",
    responses((status = 200, description = "The current version of every kit.", body = crate::v1::dto::KitList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company("managing kits")?;
    Ok(Json(crate::v1::dto::KitList { items: state.gateway.kits(&tenant).await? }).into_response())
}

#[utoipa::path(get, path = "/v1/kits/{name}", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    responses((status = 200, description = "The current version.", body = gateway::KitRecord,
        headers(("ETag" = String, description = "The version, for If-Match.")))))]
pub async fn current(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing kits")?;
    Ok(with_etag(state.gateway.current_kit(&tenant, &name).await?))
}

#[utoipa::path(get, path = "/v1/kits/{name}/versions", tag = "kits",
    params(("name" = String, Path, description = "The kit's name.")),
    responses((status = 200, description = "Every version with its author and diff.", body = crate::v1::dto::KitList)))]
pub async fn versions(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing kits")?;
    let items = state.gateway.kit_versions(&tenant, &name).await?;
    if items.is_empty() {
        return Err(Problem::new(StatusCode::NOT_FOUND, "not_found", format!("no kit named \"{name}\"")));
    }
    Ok(Json(crate::v1::dto::KitList { items }).into_response())
}

async fn version_of(state: &AppState, tenant: &TenantId, name: &str, v: u32) -> Result<KitRecord, Problem> {
    state
        .gateway
        .kit_versions(tenant, name)
        .await?
        .into_iter()
        .find(|r| r.kit.version == KitVersion(v))
        .ok_or_else(|| {
            Problem::new(StatusCode::NOT_FOUND, "not_found", format!("kit \"{name}\" has no version {v}"))
        })
}

#[utoipa::path(get, path = "/v1/kits/{name}/versions/{version}", tag = "kits",
    params(("name" = String, Path, description = "The kit's name."), ("version" = u32, Path, description = "A version number.")),
    responses((status = 200, description = "That version.", body = gateway::KitRecord)))]
pub async fn version(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, v)): Path<(String, u32)>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing kits")?;
    Ok(with_etag(version_of(&state, &tenant, &name, v).await?))
}

#[utoipa::path(put, path = "/v1/kits/{name}", tag = "kits",
    params(("name" = String, Path, description = "The kit's name."),
        ("If-Match" = Option<String>, Header, description = "The version edited, such as \"3\"; without it the kit is created.")),
    request_body = policy::Kit,
    responses((status = 200, description = "Saved as the next version.", body = gateway::KitRecord),
        (status = 201, description = "Created.", body = gateway::KitRecord)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let body = kit_text(&body)?;
    let tenant = caller.company("managing kits")?;
    let expected = match headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(v) => Some(KitVersion(v.trim().trim_matches('"').parse().map_err(|_| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid_if_match",
                "If-Match carries the kit version you edited, such as \"3\"",
            )
        })?)),
    };
    let kit = named_kit(body, &name)?;
    let saved = state.gateway.save_kit(&tenant, kit, expected, crate::v1::reply::ACTOR).await?;
    let status = if expected.is_none() { StatusCode::CREATED } else { StatusCode::OK };
    let mut res = with_etag(saved);
    *res.status_mut() = status;
    Ok(res)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DiffQuery {
    from: u32,
    to: u32,
}

#[utoipa::path(get, path = "/v1/kits/{name}/diff", tag = "kits",
    params(("name" = String, Path, description = "The kit's name."), DiffQuery),
    responses((status = 200, description = "What `to` widens and narrows against `from`.", body = policy::KitDiff)))]
pub async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(q): Query<DiffQuery>,
) -> Result<Response, Problem> {
    let tenant = caller.company("managing kits")?;
    let from = version_of(&state, &tenant, &name, q.from).await?;
    let to = version_of(&state, &tenant, &name, q.to).await?;
    Ok(Json(KitDiff::between(&from.kit, &to.kit)).into_response())
}
