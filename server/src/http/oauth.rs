//! OAuth 2.1 for hosted MCP clients over HTTP (docs/mcp.md#connecting-with-oauth): this binary
//! is both `/mcp`'s protected resource and its authorization server.
//!
//! - `GET /.well-known/oauth-protected-resource/mcp` (RFC 9728) names `/mcp`, this server as
//!   its authorization server, and the scope; `GET /.well-known/oauth-authorization-server`
//!   (RFC 8414) the endpoints, PKCE S256, and client ID metadata documents. Every URL in
//!   them comes from the configured public URL, never from the request's `Host`.
//! - `GET /oauth/authorize` checks the request ([`gateway::Gateway::oauth_check`]): a client
//!   or redirect URI that cannot be trusted is a page here, any other error goes back to the
//!   client; a good request continues to the console's consent page (`/connect`) through a
//!   page of this origin, so the `SameSite=Strict` session cookie is sent with it.
//! - `POST /oauth/authorize` is the consent form: signed in, from this origin
//!   (`same_origin_writes`), it makes the connection and sends the browser to the client
//!   with the code (a page again: the console's `form-action 'self'`).
//! - `POST /oauth/token` exchanges a code or a refresh token; errors are RFC 6749 §5.2's,
//!   answers are never cached.
//! - `POST /oauth/register` registers a public client (RFC 7591), bounded per minute; a tenant
//!   lets its people connect such a client only once an admin turned that on.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use gateway::domain::oauth::OAuthError;
use gateway::ids::ProfileId;
use gateway::ops::oauth::{AuthorizeRequest, ProfileChoice, Refusal, Registration, TokenRequest};
use serde::Deserialize;
use serde_json::json;

use crate::http::sso::{continue_page, page};
use crate::state::AppState;

/// Where `/mcp`'s protected resource metadata is (RFC 9728 §3.1: the resource's path after
/// the well-known name).
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The metadata documents and the authorization server's endpoints.
pub fn routes() -> axum::Router<AppState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route("/oauth/authorize", get(authorize).post(consent))
        .route("/oauth/token", post(token))
        .route("/oauth/register", post(register))
}

/// The `WWW-Authenticate` challenge of a `/mcp` 401: where its metadata is, and the scope.
pub fn challenge(gateway: &gateway::Gateway, error: Option<&str>) -> HeaderValue {
    let base = gateway.oauth_issuer();
    let error = error.map(|e| format!(", error=\"{e}\"")).unwrap_or_default();
    let value = format!("Bearer resource_metadata=\"{base}{RESOURCE_METADATA_PATH}\", scope=\"mcp\"{error}");
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn resource_metadata(State(state): State<AppState>) -> Response {
    let gw = &state.gateway;
    let doc = json!({
        "resource": gw.mcp_resource(),
        "authorization_servers": [gw.oauth_issuer()],
        "scopes_supported": [gateway::domain::oauth::SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "Naïve governance gateway (MCP)",
    });
    public_json(doc)
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn server_metadata(State(state): State<AppState>) -> Response {
    let issuer = state.gateway.oauth_issuer();
    let doc = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [gateway::domain::oauth::SCOPE],
        "client_id_metadata_document_supported": true,
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "authorization_response_iss_parameter_supported": true,
    });
    public_json(doc)
}

fn public_json(doc: serde_json::Value) -> Response {
    let mut res = Json(doc).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    res.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    res
}

/// `GET /oauth/authorize`: checks the request, then opens the consent page.
pub async fn authorize(State(state): State<AppState>, Query(req): Query<AuthorizeRequest>) -> Response {
    match state.gateway.oauth_check(&req).await {
        Ok(_) => {
            let query = serde_urlencoded::to_string(&req).unwrap_or_default();
            continue_page(&format!("/connect?{query}"), "Continuing to the console to connect the client")
        }
        Err(refusal) => refused(refusal),
    }
}

fn refused(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Redirect(url) => Redirect::to(&url).into_response(),
        Refusal::Show(e) => page(StatusCode::BAD_REQUEST, "This client cannot connect", &e.to_string()),
    }
}

/// The consent form: the request again, and the person's choice.
#[derive(Deserialize)]
pub struct Consent {
    #[serde(flatten)]
    request: AuthorizeRequest,
    /// `allow` or `deny`.
    decision: String,
    /// `profile` (an existing one) or `new` (a sub-agent).
    #[serde(default)]
    act_as: String,
    #[serde(default)]
    profile_id: String,
    #[serde(default)]
    parent_id: String,
    #[serde(default)]
    new_name: String,
}

/// `POST /oauth/authorize`: the person's decision.
pub async fn consent(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<Consent>,
) -> Response {
    let user = match crate::http::console_auth::session_user(&state, &headers).await {
        Ok(Some(u)) => u,
        Ok(None) => return Redirect::to("/login?error=signed_out").into_response(),
        Err(p) => return p.into_response(),
    };
    let gw = &state.gateway;
    if form.decision != "allow" {
        if let Err(refusal) = gw.oauth_check(&form.request).await {
            return refused(refusal);
        }
        let denied = OAuthError::new("access_denied", "the person declined to connect");
        let url = gw.back_to_client(&form.request.redirect_uri, form.request.state.as_deref(), Err(denied));
        return continue_page(&url, "Returning to the client");
    }
    let Some(choice) = choice(&form) else {
        return back_to_consent(
            &form.request,
            "choose an agent profile, or name a new sub-agent and its parent",
        );
    };
    match gw.oauth_consent(&user, &form.request, choice).await {
        Ok(url) => continue_page(&url, "Returning to the client"),
        Err(e) => back_to_consent(&form.request, &format!("{}: {e}", e.code())),
    }
}

fn choice(form: &Consent) -> Option<ProfileChoice> {
    match form.act_as.as_str() {
        "new" => Some(ProfileChoice::NewSubAgent {
            parent: ProfileId::parse(&form.parent_id)?,
            name: form.new_name.clone(),
        }),
        _ => ProfileId::parse(&form.profile_id).map(ProfileChoice::Existing),
    }
}

/// The consent page again, saying what went wrong.
fn back_to_consent(req: &AuthorizeRequest, error: &str) -> Response {
    let query = serde_urlencoded::to_string(req).unwrap_or_default();
    let error = app::api::session::encode_query_value(error);
    Redirect::to(&format!("/connect?{query}&error={error}")).into_response()
}

/// `POST /oauth/register` (RFC 7591): a public client registers itself; only tenants that
/// accept such clients will let a person connect it.
pub async fn register(State(state): State<AppState>, body: axum::body::Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Registration>(&body) else {
        let e =
            OAuthError::new("invalid_client_metadata", "the body must be a JSON object of client metadata");
        return (StatusCode::BAD_REQUEST, Json(e)).into_response();
    };
    let mut res = match state.gateway.register_oauth_client(req).await {
        Ok(Ok(client)) => (StatusCode::CREATED, Json(client)).into_response(),
        Ok(Err(e)) => (StatusCode::BAD_REQUEST, Json(e)).into_response(),
        Err(e) => crate::http::problem::Problem::from(e).into_response(),
    };
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// `POST /oauth/token`.
pub async fn token(State(state): State<AppState>, Form(form): Form<TokenRequest>) -> Response {
    let mut res = match state.gateway.oauth_token(form).await {
        Ok(Ok(tokens)) => Json(tokens).into_response(),
        Ok(Err(e)) => (StatusCode::BAD_REQUEST, Json(e)).into_response(),
        Err(e) => crate::http::problem::Problem::from(e).into_response(),
    };
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    res
}
