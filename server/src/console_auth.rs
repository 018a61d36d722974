//! Console sign-in, sign-out and the guards around the console (SPEC §3, issue #6).
//!
//! - `POST /login` checks the password (argon2id) and starts a server-side session: the
//!   browser gets a random token in an HttpOnly, SameSite=Strict cookie (Secure unless the
//!   server listens on loopback, which is local development). Failed attempts are limited per
//!   username; past the limit the answer is 429 with `Retry-After`, right password or not.
//! - `POST /logout` ends the session and clears the cookie.
//! - [`require_sign_in`]: a console page requested without a live session redirects to
//!   `/login?next=…`. Which views a user's roles open is checked on the server by the server
//!   functions (`app::api::console::VIEW_ROLES`), which answer a 403 page.
//! - [`same_origin_writes`]: a state-changing request to anything but `/v1` (the console's
//!   server functions, sign-in, sign-out) must come from this origin: a `Sec-Fetch-Site` other
//!   than `same-origin`/`none`, or an `Origin` for another host, is refused with 403. `/v1`
//!   authenticates with bearer keys, never cookies, so it is not exposed to CSRF.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use app::api::console::{SESSION_COOKIE, encode_query_value, session_token};
use axum::Form;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::problem::Problem;
use crate::startup::AppState;

/// Failed sign-ins allowed per username within [`LOGIN_WINDOW`].
pub const MAX_FAILED_LOGINS: u32 = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(5 * 60);

/// Failed sign-in attempts by username, in a sliding window.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<String, (u32, Instant)>>,
}

impl LoginLimiter {
    /// Seconds to wait, when `username` has used up its attempts.
    fn blocked(&self, username: &str) -> Option<u64> {
        let map = self.failures.lock().expect("limiter lock");
        let (n, since) = map.get(username)?;
        let left = LOGIN_WINDOW.checked_sub(since.elapsed())?;
        (*n >= MAX_FAILED_LOGINS).then(|| left.as_secs().max(1))
    }

    fn failed(&self, username: &str) {
        let mut map = self.failures.lock().expect("limiter lock");
        if map.len() > 100_000 {
            map.retain(|_, (_, since)| since.elapsed() < LOGIN_WINDOW);
        }
        let e = map.entry(username.to_string()).or_insert((0, Instant::now()));
        if e.1.elapsed() >= LOGIN_WINDOW {
            *e = (0, Instant::now());
        }
        e.0 += 1;
    }

    fn succeeded(&self, username: &str) {
        self.failures.lock().expect("limiter lock").remove(username);
    }
}

#[derive(Deserialize)]
pub struct LoginForm {
    username: String,
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// Only paths on this site, never `//host` or a scheme.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n.to_string(),
        _ => "/".to_string(),
    }
}

fn login_url(error: &str, next: &str) -> String {
    format!("/login?error={error}&next={}", encode_query_value(next))
}

fn cookie(state: &AppState, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .expect("cookie is ASCII")
}

/// `POST /login`.
pub async fn login(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Result<Response, Problem> {
    let username = form.username.trim().to_lowercase();
    let next = safe_next(form.next.as_deref());
    if let Some(wait) = state.login_limiter.blocked(&username) {
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
        Some(user) => {
            state.login_limiter.succeeded(&username);
            let token = state.gateway.start_session(&user).await?;
            let max_age = gateway::sessions::SESSION_HOURS * 3600;
            let mut res = Redirect::to(&next).into_response();
            res.headers_mut().insert(header::SET_COOKIE, cookie(&state, &token, max_age));
            Ok(res)
        }
        None => {
            state.login_limiter.failed(&username);
            Ok(Redirect::to(&login_url("invalid", &next)).into_response())
        }
    }
}

/// The console user signed in with this request's session cookie, if any.
pub async fn session_user(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<gateway::ConsoleUser>, Problem> {
    match headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).and_then(session_token) {
        Some(token) => Ok(state.gateway.session_user(token).await?),
        None => Ok(None),
    }
}

/// `POST /logout`.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Problem> {
    if let Some(token) = headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).and_then(session_token) {
        state.gateway.end_session(token).await?;
    }
    let mut res = Redirect::to("/login?error=signed_out").into_response();
    res.headers_mut().insert(header::SET_COOKIE, cookie(&state, "", 0));
    Ok(res)
}

/// The console's pages: anything else (`/v1`, `/pkg`, `/api`, `/login`, files) passes.
fn is_console_page(path: &str) -> bool {
    matches!(path, "/" | "/proposals" | "/kits" | "/spend" | "/activity" | "/profiles" | "/users")
        || path.starts_with("/proposals/")
        || path.starts_with("/profiles/")
        || path.starts_with("/kits/")
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
    if !writes || req.uri().path().starts_with("/v1/") {
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
