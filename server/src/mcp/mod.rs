//! The MCP transport at `/mcp`: the official Rust SDK (`rmcp`), streamable HTTP, in the same
//! router and process as `/v1`, over the same gateway functions.
//!
//! - **Both protocol generations.** Clients on spec 2025-06-18 / 2025-11-25 open a session
//!   (`initialize`, `Mcp-Session-Id`, DELETE ends it); clients on 2026-07-28 send each request
//!   on its own, and are served statelessly. Either way a request's answer is one JSON body
//!   (`one_message`); a session's own stream (`GET`) carries what the server sends unasked.
//! - **Authentication on every message** ([`authenticate`]): each HTTP request carries the
//!   agent's scoped key, checked before the SDK sees it, so the first message after a key
//!   revoke gets 401 with `WWW-Authenticate`, whatever session it belongs to. A session is
//!   bound to the profile that opened it: another agent's key cannot continue it.
//! - **The list comes from the kit** ([`tools`]): a session lists the snapshot taken when it
//!   opened (every call is re-gated anyway); a revoked or suspended profile lists nothing; a
//!   kit save or revoke that changes what the session may see sends it
//!   `notifications/tools/list_changed`, and a revoked key or profile ends the session.
//! - `Host` and `Origin` are validated: loopback hosts and no browser origins by default,
//!   more with `--mcp-allowed-hosts` / `--mcp-allowed-origins` (see docs/mcp.md).

pub mod client;
pub mod tools;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gateway::Credential;
use gateway::audit::trace;
use gateway::domain::principal::Subject;
use opentelemetry::trace::SpanKind;
use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::http::problem::Problem;
use crate::{http::limits::MAX_BODY_BYTES, state::AppState};

/// Who may reach `/mcp` from where.
#[derive(Clone, Debug, Default)]
pub struct McpSettings {
    /// Extra `Host` values accepted besides loopback (a proxy's public name).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted; none means any request with an `Origin` is refused.
    pub allowed_origins: Vec<String>,
}

/// The hosts a loopback deployment is reached by.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins `/mcp` accepts without being told: the server's own (the address it
/// is bound to and its public URL) and, when it listens on loopback, any loopback origin, so
/// a browser-based MCP client on the same machine (the official inspector) can connect.
/// Every other origin is refused, as DNS rebinding and cross-site requests need.
pub fn own_origins(bound: &std::net::SocketAddr, public_url: &str) -> Vec<String> {
    let mut origins = vec![format!("http://{bound}")];
    if let Ok(u) = url::Url::parse(public_url)
        && let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default())
    {
        origins.push(format!("{}://{host}:{port}", u.scheme()));
    }
    if bound.ip().is_loopback() {
        for host in ["localhost", "127.0.0.1", "[::1]"] {
            origins.push(format!("http://{host}:*"));
            origins.push(format!("https://{host}:*"));
        }
    }
    origins
}

/// `/mcp`: [`authenticate`] in front of the SDK's service, which makes one [`Session`] per MCP
/// session (or per stateless request).
pub fn endpoint(state: &AppState, settings: &McpSettings) -> axum::Router {
    let sessions = Arc::new(session_manager());
    let open = sessions.clone();
    state
        .gateway
        .metrics()
        .sample(|f| &f.mcp_sessions, move || open.sessions.try_read().ok().map(|s| s.len() as i64));
    // The SDK clones the factory, and axum the middleware's state, for each request: both
    // hold one `Arc`.
    let shared = Arc::new(Shared {
        gateway: state.gateway.clone(),
        sessions: sessions.clone(),
        open: Mutex::default(),
    });
    let factory = shared.clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut stopping = state.stopping.clone();
    let on_stop = cancel.clone();
    tokio::spawn(async move {
        let _ = stopping.wait_for(|s| *s).await;
        on_stop.cancel();
    });
    sdk_endpoint(move || Session::new(factory.clone()), sessions, settings, cancel)
        .layer(axum::middleware::from_fn_with_state(shared, authenticate))
}

/// The SDK's streamable HTTP service for the handlers `factory` makes, as `/mcp` serves it:
/// the same settings, and answers in the form [`forward`] gives them. `bench/mcp.sh` serves a
/// trivial handler through this too (`mcp-floor`), to measure the SDK alone.
pub fn sdk_endpoint<H: ServerHandler>(
    factory: impl Fn() -> H + Send + Sync + 'static,
    sessions: Arc<LocalSessionManager>,
    settings: &McpSettings,
    cancel: tokio_util::sync::CancellationToken,
) -> axum::Router {
    let service = StreamableHttpService::new(move || Ok(factory()), sessions, config(settings, cancel));
    axum::Router::new().fallback_service(service).layer(axum::middleware::from_fn(forward))
}

/// How long a session keeps a finished call's answer for a client that lost the stream and
/// reconnects with `Last-Event-ID`. The SDK's 60 s default kept every answer of the last
/// minute and scanned them all on each message: at 5,000 calls/s, 4,700 per session, a third
/// of a session-mode call's cost.
const RESUME_WINDOW: Duration = Duration::from_secs(2);

/// The SDK's in-process sessions, with a short resumption window and no priming event on a
/// call's stream: an answer follows at once, so there is no early close to resume after.
pub fn session_manager() -> LocalSessionManager {
    let mut m = LocalSessionManager::default();
    m.session_config.completed_cache_ttl = RESUME_WINDOW;
    m.session_config.sse_retry = None;
    m
}

/// The SDK's settings: the allowed hosts and origins, sessions for clients that open them,
/// JSON answers where the SDK may, the body limit, and an end when `cancel` is cancelled.
fn config(settings: &McpSettings, cancel: tokio_util::sync::CancellationToken) -> StreamableHttpServerConfig {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
    hosts.extend(settings.allowed_hosts.iter().cloned());
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(settings.allowed_origins.clone())
        .enforce_origin_validation()
        .with_legacy_session_mode(true)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_sse_retry(None)
        .with_cancellation_token(cancel)
}

/// A 401 whose challenge points at `/mcp`'s protected resource metadata, so an OAuth client
/// finds where to get a token ([`crate::http::oauth::challenge`]).
fn unauthorized(shared: &Shared, code: &'static str, message: &str, error: Option<&str>) -> Response {
    let mut res = Problem::new(StatusCode::UNAUTHORIZED, code, message).into_response();
    res.headers_mut().insert(header::WWW_AUTHENTICATE, crate::http::oauth::challenge(&shared.gateway, error));
    res
}

/// Checks the scoped key on every HTTP request to `/mcp` and hands the agent to the session.
async fn authenticate(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let Some(token) = crate::http::auth::bearer(req.headers()) else {
        return unauthorized(
            &shared,
            "missing_key",
            "send the agent's scoped key as `Authorization: Bearer nv_<prefix>_<secret>` on every request, or connect with OAuth",
            None,
        );
    };
    match shared.gateway.credential(token).await {
        Ok(Some(Credential::Agent(mut subject))) => {
            subject.via = gateway::audit::activity::Transport::Mcp;
            let req = match seat_for_initialize(&shared, &subject, req).await {
                Ok(req) => req,
                Err(refused) => return refused,
            };
            let mut req = req;
            req.extensions_mut().insert(subject);
            next.run(req).await
        }
        Ok(Some(_)) => Problem::new(
            StatusCode::FORBIDDEN,
            "agent_key_required",
            "/mcp serves agents: send an agent's scoped key, not a company key or a personal token",
        )
        .into_response(),
        Ok(None) => unauthorized(
            &shared,
            "invalid_key",
            "the key or access token is malformed, unknown, revoked or expired; ask for a new key, or refresh the token",
            Some("invalid_token"),
        ),
        Err(e) => Problem::from(e).into_response(),
    }
}

/// A request that opens a session (an `initialize` without `Mcp-Session-Id`) takes its key's
/// place among [`MAX_SESSIONS_PER_KEY`] here, before the SDK makes a session: a key past the
/// limit is answered `too_many_sessions` and no session, worker or id is made for it. The
/// place rides in the request ([`SeatSlot`]) to the session's `initialize`, which keeps it for
/// the session's life; a request the SDK refuses before that drops it with the request.
async fn seat_for_initialize(
    shared: &Arc<Shared>,
    subject: &Subject,
    req: Request,
) -> Result<Request, Response> {
    if req.method() != axum::http::Method::POST || req.headers().contains_key("mcp-session-id") {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return Err(crate::http::limits::too_large());
    };
    let mut req = Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
    let Some(id) = initialize_id(&bytes) else { return Ok(req) };
    let Some(seat) = Seat::take(shared, &subject.key) else {
        let message = format!(
            "this key already holds {MAX_SESSIONS_PER_KEY} open MCP sessions; close one (DELETE /mcp with its Mcp-Session-Id) or reuse it"
        );
        let error = serde_json::json!({ "code": -32600, "message": message, "data": { "code": "too_many_sessions" } });
        let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
        return Err((StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response());
    };
    req.extensions_mut().insert(SeatSlot(Arc::new(Mutex::new(Some(seat)))));
    Ok(req)
}

/// The id of a JSON-RPC `initialize` request in `body`, if that is what it is. Most bodies
/// are not: the full parse runs only on one that names the method.
fn initialize_id(body: &[u8]) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Message {
        method: Option<String>,
        id: Option<serde_json::Value>,
    }
    const NEEDLE: &[u8] = b"\"initialize\"";
    body.windows(NEEDLE.len()).any(|w| w == NEEDLE).then_some(())?;
    let m: Message = serde_json::from_slice(body).ok()?;
    (m.method.as_deref() == Some("initialize")).then(|| m.id.unwrap_or_default())
}

/// A JSON-RPC error answer outside any request (`id` null).
fn jsonrpc_error(code: i64, message: String) -> Response {
    let body =
        serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// Hands a request to the SDK, answering what it answers in plain text the
/// way JSON-RPC clients read it: a body that is not JSON is a parse error (-32700), JSON that
/// is not a JSON-RPC message an invalid request (-32600); a session's DELETE is 204.
async fn forward(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    if method != axum::http::Method::POST {
        let mut res = next.run(req).await;
        if method == axum::http::Method::DELETE && res.status() == StatusCode::ACCEPTED {
            *res.status_mut() = StatusCode::NO_CONTENT;
        }
        return res;
    }
    let (parts, body) = req.into_parts();
    // The router's body limit has already bounded this.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return crate::http::limits::too_large();
    };
    // `Bytes` clones share the buffer; the body is looked at again only if the SDK refused it.
    let res = next.run(Request::from_parts(parts, axum::body::Body::from(bytes.clone()))).await;
    if is_event_stream(&res) {
        return one_message(res).await;
    }
    if res.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return res;
    }
    if !bytes.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
        return jsonrpc_error(-32700, "Parse error: the body is not JSON".into());
    }
    let text = axum::body::to_bytes(res.into_body(), 4096).await.unwrap_or_default();
    jsonrpc_error(-32600, format!("Invalid Request: {}", String::from_utf8_lossy(&text)))
}

fn is_event_stream(res: &Response) -> bool {
    let ct = res.headers().get(header::CONTENT_TYPE).map(HeaderValue::as_bytes);
    res.status() == StatusCode::OK && ct.is_some_and(|v| v.starts_with(b"text/event-stream"))
}

/// A session's answer to one request, sent as one JSON body when the SDK's event stream
/// carried just that message (spec 2025-06-18 lets a server answer a request either way).
/// The stream ends with the answer, so nothing is held back; a stream of several messages is
/// passed on whole. One body is one write to the socket instead of a chunk per event and a
/// last chunk: a session-mode call cost two `writev`s where a `/v1` call costs one.
async fn one_message(res: Response) -> Response {
    use futures_util::TryStreamExt;
    let (mut parts, body) = res.into_parts();
    let Ok(events) = sse_stream::SseStream::new(body).try_collect::<Vec<_>>().await else {
        let message = "the MCP answer stream broke before it ended; send the request again";
        return Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "mcp_stream_broken", message).into_response();
    };
    let mut messages = events.iter().filter_map(|e| e.data.as_deref().filter(|d| !d.is_empty()));
    let body = match (messages.next(), messages.next()) {
        (Some(one), None) => {
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            axum::body::Body::from(one.to_owned())
        }
        _ => axum::body::Body::from_stream(futures_util::stream::iter(
            events.into_iter().map(|e| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(e))),
        )),
    };
    Response::from_parts(parts, body)
}

/// The most MCP sessions one key may hold open at once in this process. Each costs a worker,
/// a watcher and their buffers; a client that opens sessions without closing them gets
/// `too_many_sessions` past this instead of growing the process.
pub const MAX_SESSIONS_PER_KEY: usize = 32;

/// What every session shares.
struct Shared {
    gateway: gateway::Gateway,
    sessions: Arc<LocalSessionManager>,
    /// Open sessions by key.
    open: Mutex<std::collections::HashMap<gateway::KeyId, usize>>,
}

/// A place taken for the session a request opens, until its `initialize` keeps it.
#[derive(Clone)]
struct SeatSlot(Arc<Mutex<Option<Seat>>>);

/// One open session's place in its key's count, given back when the session ends.
struct Seat {
    shared: Arc<Shared>,
    key: gateway::KeyId,
}

impl Seat {
    fn take(shared: &Arc<Shared>, key: &gateway::KeyId) -> Option<Seat> {
        let mut open = shared.open.lock().expect("not poisoned");
        let n = open.entry(key.clone()).or_default();
        if *n >= MAX_SESSIONS_PER_KEY {
            return None;
        }
        *n += 1;
        Some(Seat { shared: shared.clone(), key: key.clone() })
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut open = self.shared.open.lock().expect("not poisoned");
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// One MCP session's state (in stateless mode, one request's).
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    /// The agent that opened the session; every later message must be the same profile.
    bound: Arc<OnceLock<Subject>>,
    /// The tool list as it was when the session opened.
    snapshot: Arc<Mutex<Option<Arc<Vec<Tool>>>>>,
    /// Its place in its key's count of open sessions, from `initialize` until it ends.
    seat: Arc<OnceLock<Seat>>,
}

impl Session {
    fn new(shared: Arc<Shared>) -> Session {
        Session { shared, bound: Arc::default(), snapshot: Arc::default(), seat: Arc::default() }
    }

    /// The agent of this message, which must be the session's own.
    fn subject(&self, ext: &rmcp::model::Extensions) -> Result<Subject, ErrorData> {
        let subject = ext
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Subject>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the request reached /mcp unauthenticated", None))?;
        let bound = self.bound.get_or_init(|| subject.clone());
        if bound.profile != subject.profile || bound.tenant != subject.tenant {
            return Err(ErrorData::invalid_request(
                "this session belongs to another agent profile; open a session of your own",
                None,
            ));
        }
        Ok(subject)
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("naive-gateway", env!("CARGO_PKG_VERSION")))
            .with_instructions(tools::INSTRUCTIONS)
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, ErrorData>> + Send + '_ {
        Box::pin(self.opened(request, ctx))
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        let Some(subject) = self.bound.get().cloned() else { return };
        let session = header(&ctx.extensions, "mcp-session-id").map(Arc::<str>::from);
        let listed = self.snapshot.lock().expect("not poisoned").clone().unwrap_or_default();
        let names = listed.iter().map(|t| t.name.to_string()).collect();
        let watch = Watch { shared: self.shared.clone(), session, subject };
        tokio::spawn(watch.run(ctx.peer, names));
    }

    fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + Send + '_ {
        Box::pin(self.listed(ctx))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        Box::pin(self.called(request, ctx))
    }
}

/// The handlers' work, each boxed by its trait method above: the SDK spawns a task per
/// request whose future holds the largest of them, and a governed call's future is many
/// kilobytes, which every spawn and poll of that task would copy.
impl Session {
    async fn opened(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let subject = self.subject(&ctx.extensions)?;
        let slot =
            ctx.extensions.get::<axum::http::request::Parts>().and_then(|p| p.extensions.get::<SeatSlot>());
        if let Some(seat) = slot.and_then(|s| s.0.lock().expect("not poisoned").take()) {
            let _ = self.seat.set(seat);
        }
        let listed = tools::visible(&self.shared.gateway, &subject).await.map_err(internal)?;
        *self.snapshot.lock().expect("not poisoned") = Some(Arc::new(listed));
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn listed(&self, ctx: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let subject = self.subject(&ctx.extensions)?;
        let gw = &self.shared.gateway;
        let active = gw.inactive_refusal(&subject, "tools/list").await.map_err(internal)?.is_none();
        let snapshot = self.snapshot.lock().expect("not poisoned").clone();
        let listed = match (active, snapshot) {
            (false, _) => Vec::new(),
            (true, Some(s)) => s.as_ref().clone(),
            (true, None) => tools::visible(gw, &subject).await.map_err(internal)?,
        };
        let mut result = ListToolsResult::with_all_items(listed);
        result.cache_scope = Some(CacheScope::Private);
        result.ttl_ms = Some(0);
        Ok(result)
    }

    async fn called(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let subject = self.subject(&ctx.extensions)?;
        let version = header(&ctx.extensions, "mcp-protocol-version")
            .map(str::to_string)
            .or_else(|| ctx.peer.peer_info().map(|i| i.protocol_version.to_string()));
        // W3C trace context in the request's `_meta`, else the span of the HTTP request that
        // carried it (the SDK serves the call on a task of its own).
        let remote = ctx.meta.get("traceparent").and_then(|v| v.as_str());
        let carrier = ctx.extensions.get::<axum::http::request::Parts>().and_then(|p| p.extensions.get());
        let span = trace::Span::continuing("mcp_tool_call", SpanKind::Internal, (remote, carrier), Vec::new);
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let call = tools::call(&self.shared.gateway, &subject, &request.name, args, version.as_deref());
        let result = span.wrap(call).await?;
        Ok(result.into())
    }
}

/// A header of the HTTP request that carried a message.
fn header<'a>(ext: &'a rmcp::model::Extensions, name: &str) -> Option<&'a str> {
    ext.get::<axum::http::request::Parts>()?.headers.get(name)?.to_str().ok()
}

pub(crate) fn internal(e: gateway::Error) -> ErrorData {
    let p = Problem::from(e);
    ErrorData::internal_error(p.message, Some(serde_json::json!({ "code": p.code })))
}

/// A session's watcher: tells the client when what it may see changed, and ends the session
/// when its key or profile is revoked.
struct Watch {
    shared: Arc<Shared>,
    session: Option<Arc<str>>,
    subject: Subject,
}

impl Watch {
    async fn run(self, peer: Peer<RoleServer>, mut seen: BTreeSet<String>) {
        let gw = self.shared.gateway.clone();
        let (mut credentials, mut visibility) = (gw.credential_changes(), gw.visibility_changes());
        let mut tick = tokio::time::interval(Duration::from_secs(10));
        let mut mark = gw.agent_changes(&self.subject.tenant);
        loop {
            tokio::select! {
                changed = credentials.changed() => if changed.is_err() { return },
                changed = visibility.changed() => if changed.is_err() { return },
                _ = tick.tick() => {
                    if peer.is_transport_closed() { return }
                    continue;
                }
            }
            // Another tenant's change: nothing to read.
            let now = gw.agent_changes(&self.subject.tenant);
            if now == mark {
                continue;
            }
            mark = now;
            // A revoked key ends the session; a revoked profile keeps it, so its next call
            // gets the refusal that says to stop.
            if !gw.key_is_live(&self.subject).await.unwrap_or(true) {
                return self.close().await;
            }
            let Ok(now) = tools::visible(&gw, &self.subject).await else { continue };
            let now: BTreeSet<String> = now.into_iter().map(|t| t.name.to_string()).collect();
            if now != seen {
                seen = now;
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        }
    }

    /// Ends the session of a revoked key or profile: its streams close, its id is forgotten.
    async fn close(self) {
        if let Some(id) = &self.session {
            let _ = self.shared.sessions.close_session(id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(body: &'static str) -> Response {
        let mut res = Response::new(axum::body::Body::from(body));
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        res
    }

    async fn text(res: Response) -> String {
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await.expect("a body");
        String::from_utf8(bytes.to_vec()).expect("text")
    }

    #[tokio::test]
    async fn one_message_becomes_a_json_body_and_comments_and_priming_are_dropped() {
        let res = one_message(stream(": keep-alive\n\ndata:\nid: 0\n\ndata: {\"id\":1}\nid: 1\n\n")).await;
        assert_eq!(res.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(text(res).await, r#"{"id":1}"#);
    }

    #[tokio::test]
    async fn several_messages_stay_an_event_stream_in_order() {
        let res = one_message(stream("data: {\"method\":\"p\"}\n\ndata: {\"id\":1}\n\n")).await;
        assert_eq!(res.headers()[header::CONTENT_TYPE], "text/event-stream");
        let data: Vec<String> =
            text(res).await.lines().filter_map(|l| l.strip_prefix("data: ")).map(String::from).collect();
        assert_eq!(data, [r#"{"method":"p"}"#, r#"{"id":1}"#]);
    }
}
