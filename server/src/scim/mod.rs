//! SCIM 2.0 at `/scim/v2` (RFC 7643/7644; docs/sso.md#provisioning): the directory's
//! bearer token (one per tenant, issued by an admin), discovery, and Users and Groups with
//! create, read, replace, PATCH, delete, filters and pagination.
//!
//! Every answer is `application/scim+json`; every refusal is the RFC's Error body with its
//! `status`, a `scimType` where the RFC names one, and a `detail` that says what to do.

mod discovery;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gateway::domain::scim::{self, GROUP_SCHEMA, Stored, Table, USER_SCHEMA};
use gateway::ops::scim::ScimCaller;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::AppState;

const CONTENT_TYPE: &str = "application/scim+json";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

/// The `/scim/v2` routes.
pub fn routes(state: &AppState) -> Router<AppState> {
    let _ = state;
    Router::new()
        .route("/scim/v2/ServiceProviderConfig", get(discovery::service_provider_config))
        .route("/scim/v2/ResourceTypes", get(discovery::resource_types))
        .route("/scim/v2/ResourceTypes/{name}", get(discovery::resource_type))
        .route("/scim/v2/Schemas", get(discovery::schemas))
        .route("/scim/v2/Schemas/{urn}", get(discovery::schema))
        .route("/scim/v2/Users", get(list_users).post(create_users))
        .route("/scim/v2/Users/{id}", get(get_user).put(put_user).patch(patch_user).delete(delete_user))
        .route("/scim/v2/Groups", get(list_groups).post(create_groups))
        .route("/scim/v2/Groups/{id}", get(get_group).put(put_group).patch(patch_group).delete(delete_group))
        .route("/scim/v2/Users/.search", axum::routing::post(search_users))
        .route("/scim/v2/Groups/.search", axum::routing::post(search_groups))
        .route("/scim/v2/.search", axum::routing::post(search_everything))
        .route("/scim/v2/{*rest}", axum::routing::any(unknown))
}

/// `POST /.search` over every resource type at once, which this server does not do (RFC
/// 7644 §3.12: 501); `/Users/.search` and `/Groups/.search` search one type.
async fn search_everything() -> Response {
    scim_error(
        StatusCode::NOT_IMPLEMENTED,
        None,
        "search one resource type at a time: POST /Users/.search or /Groups/.search",
    )
}

/// Anything else under `/scim/v2`: the RFC's 404.
async fn unknown() -> Response {
    scim_error(
        StatusCode::NOT_FOUND,
        None,
        "no such SCIM endpoint: /Users, /Groups, /ServiceProviderConfig, /ResourceTypes, /Schemas",
    )
}

/// Which attributes an answer carries (RFC 7644 §3.4.2.5): `attributes` keeps only those
/// (with `id`, `schemas` and `meta`, which are always returned), `excludedAttributes` drops
/// those. Names compare case-insensitively; `name.givenName` selects its top attribute.
#[derive(Default)]
struct Projection {
    only: Vec<String>,
    except: Vec<String>,
}

impl Projection {
    fn from(attributes: Option<&str>, excluded: Option<&str>) -> Projection {
        let names = |s: Option<&str>| -> Vec<String> {
            s.unwrap_or_default()
                .split(',')
                .map(|a| a.trim())
                .filter(|a| !a.is_empty())
                .map(|a| {
                    let short = if a.to_ascii_lowercase().starts_with("urn:") {
                        a.rsplit(':').next().unwrap_or(a)
                    } else {
                        a
                    };
                    short.split('.').next().unwrap_or(short).to_ascii_lowercase()
                })
                .collect()
        };
        Projection { only: names(attributes), except: names(excluded) }
    }

    fn apply(&self, mut doc: Value) -> Value {
        const ALWAYS: [&str; 3] = ["id", "schemas", "meta"];
        if let Some(o) = doc.as_object_mut() {
            o.retain(|k, _| {
                let k = k.to_ascii_lowercase();
                ALWAYS.contains(&k.as_str())
                    || ((self.only.is_empty() || self.only.contains(&k)) && !self.except.contains(&k))
            });
        }
        doc
    }
}

/// A SCIM answer: `status` and a JSON body as `application/scim+json`.
pub(crate) fn scim_json(status: StatusCode, body: Value) -> Response {
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    res
}

/// The RFC's Error body.
pub(crate) fn scim_error(status: StatusCode, scim_type: Option<&str>, detail: &str) -> Response {
    let mut body =
        json!({ "schemas": [ERROR_SCHEMA], "status": status.as_u16().to_string(), "detail": detail });
    if let Some(t) = scim_type {
        body["scimType"] = json!(t);
    }
    scim_json(status, body)
}

fn from_gateway(e: gateway::Error) -> Response {
    use gateway::Error as E;
    let code = e.code();
    let message = e.to_string();
    match &e {
        E::NotFound { .. } => {
            scim_error(StatusCode::NOT_FOUND, None, &format!("{message}: no such resource for this token"))
        }
        E::Invalid { .. } if code == "scim_uniqueness" => {
            scim_error(StatusCode::CONFLICT, Some("uniqueness"), &message)
        }
        E::Invalid { .. } => scim_error(
            StatusCode::BAD_REQUEST,
            Some(scim::scim_type_of(code).unwrap_or("invalidValue")),
            &message,
        ),
        E::Conflict { .. } => scim_error(StatusCode::CONFLICT, Some("uniqueness"), &message),
        E::Forbidden { .. } => scim_error(StatusCode::FORBIDDEN, None, &message),
        E::Unavailable { .. } | E::Store(_) => scim_error(StatusCode::SERVICE_UNAVAILABLE, None, &message),
        _ => {
            tracing::error!(error = %e, "a SCIM request failed");
            scim_error(StatusCode::INTERNAL_SERVER_ERROR, None, "the gateway failed and rolled back; retry")
        }
    }
}

/// The caller a request's bearer token is, or the 401 to answer.
async fn caller(state: &AppState, headers: &HeaderMap) -> Result<ScimCaller, Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    let unauthorized = || {
        let mut r = scim_error(
            StatusCode::UNAUTHORIZED,
            None,
            "send the tenant's SCIM token as `Authorization: Bearer nvs_…`; an admin issues it on the users page",
        );
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"scim\""));
        r
    };
    let Some(token) = token else { return Err(unauthorized()) };
    match state.gateway.scim_caller(token).await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(unauthorized()),
        Err(e) => Err(from_gateway(e)),
    }
}

/// The resource as SCIM shows it: its document with `id`, `schemas` and `meta`.
fn resource(state: &AppState, table: Table, s: &Stored) -> Value {
    let (schema, kind, path) = match table {
        Table::Users => (USER_SCHEMA, "User", "Users"),
        Table::Groups => (GROUP_SCHEMA, "Group", "Groups"),
    };
    let base = state.gateway.config().public_url.trim_end_matches('/').to_string();
    let mut doc = s.doc.clone();
    let o = doc.as_object_mut().expect("a stored document is an object");
    o.insert("schemas".into(), json!([schema]));
    o.insert("id".into(), json!(s.id));
    o.insert(
        "meta".into(),
        json!({
            "resourceType": kind,
            "created": s.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "lastModified": s.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "location": format!("{base}/scim/v2/{path}/{}", s.id),
            "version": format!("W/\"{}\"", s.version),
        }),
    );
    doc
}

#[derive(Deserialize, Default)]
struct ListQuery {
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    attributes: Option<String>,
    #[serde(default, rename = "excludedAttributes")]
    excluded_attributes: Option<String>,
    #[serde(default, rename = "startIndex")]
    start_index: Option<i64>,
    #[serde(default)]
    count: Option<i64>,
}

async fn list(state: AppState, headers: HeaderMap, q: ListQuery, table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let start = q.start_index.unwrap_or(1).max(1) as usize;
    let count = q.count.unwrap_or(100).clamp(0, scim::MAX_PAGE as i64) as usize;
    let shown = Projection::from(q.attributes.as_deref(), q.excluded_attributes.as_deref());
    match state.gateway.scim_list(&who, table, q.filter.as_deref(), (start, count)).await {
        Ok(page) => scim_json(
            StatusCode::OK,
            json!({
                "schemas": [LIST_SCHEMA],
                "totalResults": page.total,
                "startIndex": start,
                "itemsPerPage": page.items.len(),
                "Resources": page.items.iter().map(|s| shown.apply(resource(&state, table, s))).collect::<Vec<_>>(),
            }),
        ),
        Err(e) => from_gateway(e),
    }
}

/// The body as JSON, or what is wrong with it.
fn body_json(body: &Bytes) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))
}

fn syntax_error(detail: &str) -> Response {
    scim_error(StatusCode::BAD_REQUEST, Some("invalidSyntax"), detail)
}

async fn create(state: AppState, headers: HeaderMap, body: Bytes, table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let doc = match body_json(&body) {
        Ok(d) => d,
        Err(why) => return syntax_error(&why),
    };
    match state.gateway.scim_create(&who, table, doc).await {
        Ok(s) => {
            let body = resource(&state, table, &s);
            let mut res = scim_json(StatusCode::CREATED, body.clone());
            if let Some(loc) = body["meta"]["location"].as_str().and_then(|l| HeaderValue::from_str(l).ok()) {
                res.headers_mut().insert(header::LOCATION, loc);
            }
            res
        }
        Err(e) => from_gateway(e),
    }
}

async fn one(state: AppState, headers: HeaderMap, (id, q): (String, ListQuery), table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let shown = Projection::from(q.attributes.as_deref(), q.excluded_attributes.as_deref());
    match state.gateway.scim_get(&who, table, &id).await {
        Ok(s) => scim_json(StatusCode::OK, shown.apply(resource(&state, table, &s))),
        Err(e) => from_gateway(e),
    }
}

async fn replace(state: AppState, headers: HeaderMap, id: String, body: Bytes, table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let doc = match body_json(&body) {
        Ok(d) => d,
        Err(why) => return syntax_error(&why),
    };
    match state.gateway.scim_replace(&who, table, &id, doc).await {
        Ok(s) => scim_json(StatusCode::OK, resource(&state, table, &s)),
        Err(e) => from_gateway(e),
    }
}

#[derive(Deserialize)]
struct PatchBody {
    #[serde(default)]
    schemas: Vec<String>,
    #[serde(rename = "Operations", alias = "operations")]
    operations: Vec<gateway::domain::scim::patch::Operation>,
}

async fn patch(state: AppState, headers: HeaderMap, id: String, body: Bytes, table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let p: PatchBody = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => {
            let detail =
                format!("a PatchOp is {{\"schemas\": [\"{PATCH_SCHEMA}\"], \"Operations\": [...]}}: {e}");
            return scim_error(StatusCode::BAD_REQUEST, Some("invalidSyntax"), &detail);
        }
    };
    if !p.schemas.iter().any(|s| s == PATCH_SCHEMA) {
        return scim_error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            &format!("a PatchOp names the schema {PATCH_SCHEMA}"),
        );
    }
    match state.gateway.scim_patch(&who, table, &id, p.operations).await {
        Ok(s) => scim_json(StatusCode::OK, resource(&state, table, &s)),
        Err(e) => from_gateway(e),
    }
}

async fn delete(state: AppState, headers: HeaderMap, id: String, table: Table) -> Response {
    let who = match caller(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    match state.gateway.scim_delete(&who, table, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => from_gateway(e),
    }
}

/// `POST …/.search` (RFC 7644 §3.4.3): a list whose query travels in the body.
#[derive(Deserialize)]
struct SearchBody {
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    attributes: Option<Vec<String>>,
    #[serde(default, rename = "excludedAttributes")]
    excluded_attributes: Option<Vec<String>>,
    #[serde(default, rename = "startIndex")]
    start_index: Option<i64>,
    #[serde(default)]
    count: Option<i64>,
}

async fn search(state: AppState, headers: HeaderMap, body: Bytes, table: Table) -> Response {
    let b: SearchBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return scim_error(
                StatusCode::BAD_REQUEST,
                Some("invalidSyntax"),
                &format!("a SearchRequest: {e}"),
            );
        }
    };
    let q = ListQuery {
        filter: b.filter,
        attributes: b.attributes.map(|a| a.join(",")),
        excluded_attributes: b.excluded_attributes.map(|a| a.join(",")),
        start_index: b.start_index,
        count: b.count,
    };
    list(state, headers, q, table).await
}

async fn search_users(State(s): State<AppState>, h: HeaderMap, b: Bytes) -> Response {
    search(s, h, b, Table::Users).await
}

async fn search_groups(State(s): State<AppState>, h: HeaderMap, b: Bytes) -> Response {
    search(s, h, b, Table::Groups).await
}

macro_rules! handlers {
    ($table:expr, $list:ident, $create:ident, $get:ident, $put:ident, $patch:ident, $delete:ident) => {
        async fn $list(State(s): State<AppState>, h: HeaderMap, Query(q): Query<ListQuery>) -> Response {
            list(s, h, q, $table).await
        }
        async fn $create(State(s): State<AppState>, h: HeaderMap, b: Bytes) -> Response {
            create(s, h, b, $table).await
        }
        async fn $get(
            State(s): State<AppState>,
            h: HeaderMap,
            Path(id): Path<String>,
            Query(q): Query<ListQuery>,
        ) -> Response {
            one(s, h, (id, q), $table).await
        }
        async fn $put(State(s): State<AppState>, h: HeaderMap, Path(id): Path<String>, b: Bytes) -> Response {
            replace(s, h, id, b, $table).await
        }
        async fn $patch(
            State(s): State<AppState>,
            h: HeaderMap,
            Path(id): Path<String>,
            b: Bytes,
        ) -> Response {
            patch(s, h, id, b, $table).await
        }
        async fn $delete(State(s): State<AppState>, h: HeaderMap, Path(id): Path<String>) -> Response {
            delete(s, h, id, $table).await
        }
    };
}

handlers!(Table::Users, list_users, create_users, get_user, put_user, patch_user, delete_user);
handlers!(Table::Groups, list_groups, create_groups, get_group, put_group, patch_group, delete_group);
