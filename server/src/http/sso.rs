//! Single sign-on in the browser (docs/sso.md).
//!
//! - `GET /login/sso?email=…` (the sign-in page's form) sends the browser to the provider of
//!   the tenant whose sign-in the email's domain leads to, with a page that opens it (the
//!   console's `form-action 'self'` refuses a form's redirect to another origin);
//!   `GET /login/sso/{tenant_id}` (the tenant's login address) redirects to that tenant's. Each starts a sign-in ([`gateway::Gateway::begin_sso`]) and binds it to
//!   this browser with a short-lived HttpOnly cookie, `SameSite=Lax` so the provider's
//!   redirect back carries it.
//! - `GET /login/sso/callback` finishes it: the state is taken once, the code exchanged, the
//!   ID token checked, the person signed in. The session cookie is set on a page that then
//!   opens the console: the console's cookie is `SameSite=Strict`, which a browser leaves off
//!   a redirect chain that began at the provider's site, so the next page is opened from here.
//! - Every refusal is a page that says what happened and links back to the sign-in page;
//!   nothing is written for one.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use gateway::ids::TenantId;
use serde::Deserialize;

use crate::http::console_auth::{safe_next, session_cookie};
use crate::state::AppState;

/// The cookie that binds a sign-in in flight to the browser that started it.
const FLIGHT_COOKIE: &str = "naive_sso";

#[derive(Deserialize)]
pub struct Start {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

#[derive(Deserialize)]
pub struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    /// The issuer the answer comes from (RFC 9207), when the provider says.
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// `GET /login/sso?email=…`: the tenant by the email's domain.
pub async fn by_email(State(state): State<AppState>, Query(q): Query<Start>) -> Response {
    let email = q.email.unwrap_or_default();
    match state.gateway.sso_tenant_for_email(&email).await {
        Ok(Some(tenant)) => start(&state, &tenant, q.next.as_deref(), By::Page).await,
        Ok(None) => Redirect::to("/login?error=sso_unknown_domain").into_response(),
        Err(e) => page(StatusCode::SERVICE_UNAVAILABLE, "Sign-in is unavailable", &e.to_string()),
    }
}

/// `GET /login/sso/{tenant_id}`: the tenant's login address.
pub async fn by_tenant(
    State(state): State<AppState>,
    Path(tenant): Path<String>,
    Query(q): Query<Start>,
) -> Response {
    match TenantId::parse(&tenant) {
        Some(tenant) => start(&state, &tenant, q.next.as_deref(), By::Redirect).await,
        None => no_connection(),
    }
}

fn no_connection() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "No single sign-on here",
        "This address has no single sign-on connection. Sign in with your username and password, or ask an admin for your sign-in address.",
    )
}

/// How the browser is sent on to the provider.
enum By {
    /// A redirect: for a link or a bookmark.
    Redirect,
    /// A page that opens it: for the sign-in page's form, whose `form-action 'self'` policy
    /// refuses a redirect to another origin.
    Page,
}

async fn start(state: &AppState, tenant: &TenantId, next: Option<&str>, by: By) -> Response {
    let next = safe_next(next);
    match state.gateway.begin_sso(tenant, &next).await {
        Ok(s) => {
            let mut res = match by {
                By::Redirect => Redirect::to(&s.redirect).into_response(),
                By::Page => continue_page(&s.redirect, "Continuing to your identity provider"),
            };
            let minutes = gateway::domain::sso::LOGIN_MINUTES * 60;
            res.headers_mut().insert(header::SET_COOKIE, flight_cookie(state, &s.browser_token, minutes));
            res
        }
        Err(gateway::Error::NotFound { .. }) => no_connection(),
        Err(e) => refusal(&e),
    }
}

/// `GET /login/sso/callback`.
pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    if let Some(error) = q.error {
        let why = q.error_description.unwrap_or_default();
        return page(
            StatusCode::FORBIDDEN,
            "Sign-in was not completed",
            &format!("The identity provider answered `{error}`. {why}"),
        );
    }
    let (Some(code), Some(st)) = (q.code, q.state) else {
        return page(StatusCode::BAD_REQUEST, "Sign-in failed", "The provider sent no code or state back.");
    };
    let flight = browser_token(&headers);
    match state.gateway.finish_sso((&st, &code, q.iss.as_deref()), flight.as_deref()).await {
        Ok(done) => {
            let roles: Vec<&str> = done.user.roles.iter().map(|r| r.as_str()).collect();
            let next =
                if done.next == "/" { app::api::session::landing(&roles).to_string() } else { done.next };
            let max_age = gateway::domain::sessions::SESSION_HOURS * 3600;
            let mut res = continue_page(&next, "Signed in");
            let h = res.headers_mut();
            h.append(header::SET_COOKIE, session_cookie(&state, &done.session_token, max_age));
            h.append(header::SET_COOKIE, flight_cookie(&state, "", 0));
            res
        }
        Err(e) => refusal(&e),
    }
}

fn refusal(e: &gateway::Error) -> Response {
    let status = match e {
        gateway::Error::Forbidden { .. } => StatusCode::FORBIDDEN,
        gateway::Error::Unavailable { .. } => StatusCode::BAD_GATEWAY,
        gateway::Error::Invalid { .. } | gateway::Error::NotFound { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(error = %e, "single sign-on failed");
    }
    page(status, "Sign-in failed", &e.to_string())
}

fn browser_token(headers: &HeaderMap) -> Option<String> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    cookies
        .split(';')
        .find_map(|c| c.trim().strip_prefix(FLIGHT_COOKIE)?.strip_prefix('='))
        .map(str::to_string)
}

fn flight_cookie(state: &AppState, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.cookies.secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{FLIGHT_COOKIE}={value}; Path=/login/sso; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    ))
    .expect("cookie is ASCII")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A refusal as a page: what happened, and the way back.
pub(crate) fn page(status: StatusCode, title: &str, message: &str) -> Response {
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><main style=\"font-family:system-ui;max-width:32rem;margin:3rem auto\">\
         <h1>{t}</h1><p role=\"alert\" data-testid=\"sso-error\">{m}</p>\
         <p><a href=\"/login\">Back to sign-in</a></p></main></html>",
        t = escape(title),
        m = escape(message)
    );
    let mut res = (status, Html(body)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// A page that opens `to` at once: the console once the session cookie is set, or the
/// provider from the sign-in form (see the module doc).
pub(crate) fn continue_page(to: &str, title: &str) -> Response {
    let to = escape(to);
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={to}\">\
         <title>{title}</title><p>{title}. <a href=\"{to}\">Continue</a>.</p></html>"
    );
    let mut res = (StatusCode::OK, Html(body)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
