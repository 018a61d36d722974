//! Console sign-in, sign-out and the guards around the console (docs/architecture.md#identities-and-roles).
//!
//! - `POST /login` checks the password (argon2id) and starts a server-side session: the
//!   browser gets a random token in an HttpOnly, SameSite=Strict cookie, Secure and named
//!   `__Host-naive_session` when `--secure-cookies` says so (by default unless the server
//!   listens on loopback, which is local development). Attempts are counted per username
//!   before the password is checked; past the limit the answer is 429 with `Retry-After`,
//!   right password or not. At most a few argon2 checks run at once (`gateway`). Without a
//!   page to return to, the user lands on their roles' work (`app::api::session::landing`).
//!   A tenant that requires single sign-on refuses the password of everyone but its
//!   break-glass admin (`sso_required`); single sign-on itself is [`crate::http::sso`].
//! - `POST /logout` ends the session and clears the cookie.
//! - [`require_sign_in`]: a console page requested without a live session redirects to
//!   `/login?next=…`. Which views a user's roles open is checked on the server by the server
//!   functions (`app::api::session::VIEWS`), which answer a 403 page.
//! - [`same_origin_writes`]: a state-changing request that a cookie may authenticate (the
//!   console's server functions, sign-in, sign-out, and `/v1` without a bearer key) must come
//!   from this origin: a `Sec-Fetch-Site` other than `same-origin`/`none`, or an `Origin` for
//!   another host, is refused with 403. A `/v1` request with a bearer key carries its own
//!   credential, which no other site can send, so it is not exposed to CSRF.

use app::api::session::{encode_query_value, session_token};
use axum::Form;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::http::problem::Problem;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct LoginForm {
    username: String,
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// Where to send the browser after sign-in: `next` resolved the way a browser resolves it
/// (the URL standard strips tabs and newlines, reads `\` as `/`), kept only if it stays on
/// this site, as its path, query and fragment; otherwise the inbox.
pub(crate) fn safe_next(next: Option<&str>) -> String {
    let base = url::Url::parse("http://console.invalid/").expect("a valid base URL");
    match next.and_then(|n| base.join(n).ok()) {
        Some(u) if u.origin() == base.origin() => u[url::Position::BeforePath..].to_string(),
        _ => "/".to_string(),
    }
}

fn login_url(error: &str, next: &str) -> String {
    format!("/login?error={error}&next={}", encode_query_value(next))
}

/// The session cookie, as sign-in sets it and sign-out clears it.
pub(crate) fn session_cookie(state: &AppState, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.cookies.secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}",
        state.cookies.name()
    ))
    .expect("cookie is ASCII")
}

/// The session token in the request's cookies, if any.
pub fn token<'a>(state: &AppState, headers: &'a HeaderMap) -> Option<&'a str> {
    headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).and_then(|c| session_token(c, state.cookies))
}

/// `POST /login`.
pub async fn login(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Result<Response, Problem> {
    let username = form.username.trim().to_lowercase();
    let next = safe_next(form.next.as_deref());
    if let Err(wait) = state.gateway.count_login_attempt(&username).await? {
        let page = format!(
            "<!DOCTYPE html><html lang=\"en\"><meta charset=\"utf-8\"><title>Too many attempts</title>\
             <p>Too many failed sign-ins for this user. Wait {} minutes, then <a href=\"{}\">try again</a>.</p></html>",
            wait.div_ceil(60),
            login_url("rate_limited", &next)
        );
        let mut res = (StatusCode::TOO_MANY_REQUESTS, axum::response::Html(page)).into_response();
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return Ok(res);
    }
    match state.gateway.verify_login(&username, &form.password).await? {
        Some(user) if state.gateway.password_sign_in_refused(&user).await? => {
            state.gateway.record_refused_sign_in(&user, "sso_required").await?;
            Ok(Redirect::to(&login_url("sso_required", &next)).into_response())
        }
        Some(user) => {
            state.gateway.login_succeeded(&username).await?;
            let token = state.gateway.start_session(&user).await?;
            let max_age = gateway::domain::sessions::SESSION_HOURS * 3600;
            // Without a page to return to, each user starts at their own work.
            let roles: Vec<&str> = user.roles.iter().map(|r| r.as_str()).collect();
            let next = if next == "/" { app::api::session::landing(&roles).to_string() } else { next };
            let mut res = Redirect::to(&next).into_response();
            res.headers_mut().insert(header::SET_COOKIE, session_cookie(&state, &token, max_age));
            Ok(res)
        }
        None => Ok(Redirect::to(&login_url("invalid", &next)).into_response()),
    }
}

/// The console user signed in with this request's session cookie, if any.
pub async fn session_user(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<gateway::ConsoleUser>, Problem> {
    match token(state, headers) {
        Some(token) => Ok(state.gateway.session_user(token).await?),
        None => Ok(None),
    }
}

/// `POST /logout`.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Problem> {
    if let Some(token) = token(&state, &headers) {
        state.gateway.end_session(token).await?;
    }
    let mut res = Redirect::to("/login?error=signed_out").into_response();
    res.headers_mut().insert(header::SET_COOKIE, session_cookie(&state, "", 0));
    Ok(res)
}

/// The views with a page per item (`/kits/Default`).
const DETAIL_PAGES: [&str; 3] = ["/proposals/", "/profiles/", "/kits/"];

/// The console's pages: every view of the navigation (the one list, `app::api::session::VIEWS`),
/// the detail pages and the account page. Anything else (`/v1`, `/pkg`, `/api`, `/login`,
/// exports such as `/spend/export.csv`, files) passes.
fn is_console_page(path: &str) -> bool {
    path == "/account"
        || path == "/connect"
        || path == "/slack/link"
        || app::api::session::VIEWS.iter().any(|v| v.href == path)
        || DETAIL_PAGES.iter().any(|p| path.starts_with(p))
}

/// Redirects a console page request without a live session to the sign-in page.
pub async fn require_sign_in(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET || !is_console_page(req.uri().path()) {
        return next.run(req).await;
    }
    let signed_in = matches!(session_user(&state, req.headers()).await, Ok(Some(_)));
    if signed_in {
        return next.run(req).await;
    }
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    Redirect::to(&format!("/login?next={}", encode_query_value(&target))).into_response()
}

/// Refuses cross-site state-changing requests to the console (see the module doc).
pub async fn same_origin_writes(req: Request, next: Next) -> Response {
    let writes = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    let path = req.uri().path();
    let api =
        path.starts_with("/v1/") || path == "/mcp" || path.starts_with("/mcp/") || path.starts_with("/scim/");
    // The token and registration endpoints take no cookie: a client's code or refresh token
    // is its credential, and registering grants nothing by itself.
    // Slack's interaction requests carry no cookie either: Slack's signature is their credential.
    if path == "/oauth/token" || path == "/oauth/register" || path.starts_with("/slack/interactions/") {
        return next.run(req).await;
    }
    // `/mcp` validates `Origin` itself, against its own allow list.
    let bearer = api && req.headers().contains_key(header::AUTHORIZATION);
    if !writes || bearer {
        return next.run(req).await;
    }
    let h = req.headers();
    let site = h.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let cross_site = match site {
        Some(s) => !matches!(s, "same-origin" | "none"),
        None => match (
            h.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
            h.get(header::HOST).and_then(|v| v.to_str().ok()),
        ) {
            (Some(origin), Some(host)) => origin.split_once("://").map(|(_, rest)| rest) != Some(host),
            (Some(_), None) => true,
            (None, _) => false,
        },
    };
    if cross_site {
        return Problem::new(
            StatusCode::FORBIDDEN,
            "cross_site_request",
            "the console accepts changes only from its own pages; reload the console and try again",
        )
        .into_response();
    }
    next.run(req).await
}
