//! Connected apps: a tenant's upstream MCP servers, each registered under a toolkit name
//! (`tracker`, `github`). The gateway is their MCP client (the official SDK's, `rmcp`): their
//! tools are the toolkit's tools, listed by `connections.tools` and called by
//! `connections.execute`, the `connections` primitive's two actions, through the same
//! pipeline as every other action.
//!
//! Guarantees:
//! - Each upstream tool's effect comes from its annotations as the MCP schema defines them
//!   ([`declared_effect`]): `readOnlyHint: true` is a read, `destructiveHint: false` a write,
//!   and anything else destructive (the schema's defaults are `readOnlyHint: false`,
//!   `destructiveHint: true`); a tool without annotations is destructive. A kit can pin a
//!   tool's effect ([`policy::kit::Toolkits::effect`]): the pin is then the effect, and
//!   annotations can only raise it.
//! - Answers are bounded: at most [`MAX_ANSWER_BYTES`] per answer (error bodies at most
//!   [`MAX_ERROR_BYTES`]) and [`MAX_TOOLS`] tools per list; past a bound the call fails with
//!   a code that says which (`connected_app_answer_too_large`, `connected_app_too_many_tools`).
//! - An app whose settings cannot be used (its credential does not open or cannot travel in a
//!   header) fails only the calls that use it: `unavailable` with a step naming the human
//!   act, and the listing names it under `unavailable`.
//! - A listing shows only what the caller's kit permits (the toolkit rule the pipeline applies
//!   to a call) and says how many tools it withheld; an app that does not answer is named in
//!   the listing, not an error.
//! - The credential comes from the tenant's vault, travels only to the app, and is never in
//!   an answer, entry or error.
//! - A tool list is read from the app at most [`TOOLS_MAX_AGE`] ago; registering or removing
//!   an app takes effect at once on this instance.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use policy::{Effect, Kit};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde::Serialize;
use serde_json::{Value, json};

use super::app_http::{Watched, chain_text};
use super::{Call, Connector, ConnectorKind, Done, Failure};

/// A session with a connected app.
type Session = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// The action that lists connected-app tools.
pub const LISTING: &str = "connections.tools";
/// How old a tool list read from an app may be.
pub const TOOLS_MAX_AGE: Duration = Duration::from_secs(60);
/// Seconds an agent is told to wait after an app did not answer.
const RETRY_AFTER_SECS: u32 = 5;
/// The largest answer read from an app (a tool list page, a tool's result).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The most of an app's error body read.
pub const MAX_ERROR_BYTES: usize = 4 << 10;
/// The most tools one app may list.
pub const MAX_TOOLS: usize = 1_000;
/// The most pages of a tool list read.
const MAX_TOOL_PAGES: usize = 50;

/// One tool of a connected app, as a listing shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppTool {
    pub toolkit: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `read`, `write` or `destructive`: how a call is gated, its annotations (or, without
    /// any, `destructive`) under the kit's pin when there is one.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub effect: Effect,
    /// What the tool's annotations declare, if it has any.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub declared: Option<Effect>,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: Value,
}

/// The effect an upstream tool's annotations declare, read as the MCP schema defines them:
/// read-only only when it says so, not destructive only when it says so; `None` for a tool
/// that has no effect hint at all.
pub fn declared_effect(tool: &Tool) -> Option<Effect> {
    let a =
        tool.annotations.as_ref().filter(|a| a.read_only_hint.is_some() || a.destructive_hint.is_some())?;
    let declared = if a.read_only_hint == Some(true) {
        "read"
    } else if a.destructive_hint == Some(false) {
        "write"
    } else {
        "destructive"
    };
    Some(Effect::classify(Some(declared)))
}

/// The client of one connected app: where it is, its credential, and its last tool list.
pub(crate) struct AppClient {
    toolkit: String,
    url: url::Url,
    egress: crate::delivery::egress::Egress,
    timeout: Duration,
    /// The credential as a header: `Authorization: Bearer …`, `Basic …`, or a named one.
    credential: Option<(HeaderName, HeaderValue)>,
    tools: Mutex<Option<(Instant, Arc<Vec<AppTool>>)>>,
}

impl AppClient {
    pub(crate) fn new(
        toolkit: String,
        url: url::Url,
        egress: crate::delivery::egress::Egress,
        timeout: Duration,
        credential: Option<(HeaderName, HeaderValue)>,
    ) -> AppClient {
        AppClient { toolkit, url, egress, timeout, credential, tools: Mutex::default() }
    }

    /// A session with the app, over streamable HTTP with the credential on every request,
    /// through the guarded client, its answers bounded.
    async fn connect(&self) -> Result<(Session, Watched), Failure> {
        self.egress
            .check_url(&self.url)
            .map_err(|_| Failure::new(crate::delivery::egress::EGRESS_REFUSED, RETRY_AFTER_SECS))?;
        let mut headers = HashMap::new();
        if let Some((name, value)) = &self.credential {
            headers.insert(name.clone(), value.clone());
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
            .custom_headers(headers)
            .max_sse_event_size(MAX_ANSWER_BYTES);
        config.max_json_response_size = MAX_ANSWER_BYTES;
        config.max_error_response_size = MAX_ERROR_BYTES;
        let watched = Watched::new(self.egress.client().clone());
        let transport = StreamableHttpClientTransport::with_client(watched.clone(), config);
        match ().serve(transport).await {
            Ok(session) => Ok((session, watched)),
            Err(e) => Err(self.failure("did not open a session", &e, &watched)),
        }
    }

    /// The stable code of what went wrong talking to the app, logged with the error and the
    /// HTTP failure under it, if the session saw one.
    fn failure(&self, what: &str, e: &(dyn std::error::Error + 'static), watched: &Watched) -> Failure {
        let under = watched.last_failure().unwrap_or_default();
        tracing::warn!(toolkit = %self.toolkit, error = %e, http = %under, "a connected app {what}");
        let text = format!("{}: {under}", chain_text(e));
        let code = if crate::delivery::egress::refusal(e).is_some() || text.contains("egress refused") {
            crate::delivery::egress::EGRESS_REFUSED
        } else if text.contains("too large") || text.contains("exceed") {
            "connected_app_answer_too_large"
        } else if what.starts_with("did not open") {
            "connected_app_unreachable"
        } else {
            "connected_app_bad_response"
        };
        Failure::new(code, RETRY_AFTER_SECS)
    }

    /// The app's tools, read at most [`TOOLS_MAX_AGE`] ago.
    pub(crate) async fn tools(&self) -> Result<Arc<Vec<AppTool>>, Failure> {
        if let Some((at, tools)) = &*self.tools.lock().expect("tools lock")
            && at.elapsed() < TOOLS_MAX_AGE
        {
            return Ok(tools.clone());
        }
        let read = tokio::time::timeout(self.timeout, async {
            let (session, watched) = self.connect().await?;
            let listed = self.list(&session, &watched).await;
            let _ = session.cancel().await;
            listed
        })
        .await
        .map_err(|_| Failure::new("connected_app_timeout", RETRY_AFTER_SECS))??;
        let tools: Arc<Vec<AppTool>> = Arc::new(read.iter().map(|t| self.describe(t)).collect());
        *self.tools.lock().expect("tools lock") = Some((Instant::now(), tools.clone()));
        Ok(tools)
    }

    /// Every page of the app's tool list, up to [`MAX_TOOLS`] tools.
    async fn list(&self, session: &Session, watched: &Watched) -> Result<Vec<Tool>, Failure> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
            let page = session
                .list_tools(Some(params))
                .await
                .map_err(|e| self.failure("did not list its tools", &e, watched))?;
            tools.extend(page.tools);
            if tools.len() > MAX_TOOLS {
                return Err(Failure::new("connected_app_too_many_tools", RETRY_AFTER_SECS));
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(Failure::new("connected_app_too_many_tools", RETRY_AFTER_SECS))
    }

    fn describe(&self, t: &Tool) -> AppTool {
        AppTool {
            toolkit: self.toolkit.clone(),
            name: t.name.to_string(),
            description: t.description.as_ref().map(|d| d.to_string()),
            effect: declared_effect(t).unwrap_or(Effect::Destructive),
            declared: declared_effect(t),
            input_schema: Value::Object((*t.input_schema).clone()),
        }
    }

    /// Calls `tool` with `arguments`; the app's result (its structured content, else its
    /// content blocks), with `is_error` when the tool itself reported a failure.
    async fn call(&self, tool: &str, arguments: Option<&Value>) -> Result<Value, Failure> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(Value::Object(args)) = arguments {
            params = params.with_arguments(args.clone());
        }
        let result = tokio::time::timeout(self.timeout, async {
            let (session, watched) = self.connect().await?;
            let called = session.call_tool(params).await;
            let _ = session.cancel().await;
            called.map_err(|e| self.failure("failed a tool call", &e, &watched))
        })
        .await
        .map_err(|_| Failure::new("connected_app_timeout", RETRY_AFTER_SECS))??;
        let content = match result.structured_content {
            Some(v) => v,
            None => serde_json::to_value(&result.content).unwrap_or(Value::Null),
        };
        Ok(
            json!({ "toolkit": self.toolkit, "tool": tool, "is_error": result.is_error.unwrap_or(false), "content": content }),
        )
    }
}

/// One registered app as the tenant's calls reach it: ready, or broken by its settings.
pub(crate) enum AppEntry {
    Ready(Arc<AppClient>),
    /// Its settings cannot be used (`code` says why): every call to it is `unavailable`.
    Broken(&'static str),
}

impl AppEntry {
    fn client(&self) -> Result<&AppClient, Failure> {
        match self {
            AppEntry::Ready(c) => Ok(c),
            AppEntry::Broken(code) => Err(super::misconfigured(code)),
        }
    }
}

/// A tenant's connected apps by toolkit: the connector of the `connections` primitive.
#[derive(Default)]
pub(crate) struct Apps {
    pub(crate) by_toolkit: BTreeMap<String, AppEntry>,
}

impl Apps {
    /// Every tool of every app (or of `only`), and the toolkits that did not answer.
    async fn listing(&self, only: Option<&str>) -> Value {
        let mut tools = Vec::new();
        let mut unavailable = Vec::new();
        for (name, app) in self.by_toolkit.iter().filter(|(n, _)| only.is_none_or(|o| o == n.as_str())) {
            let listed = match app.client() {
                Ok(c) => c.tools().await,
                Err(f) => Err(f),
            };
            match listed {
                Ok(t) => tools.extend(t.iter().cloned()),
                Err(f) => unavailable.push(json!({ "toolkit": name, "reason": f.detail })),
            }
        }
        json!({ "tools": tools, "unavailable": unavailable })
    }

    /// `tool` of `toolkit` as the app lists it: `Ok(None)` when no app is registered under
    /// the toolkit, or the app has no such tool.
    pub(crate) async fn tool(&self, toolkit: &str, tool: &str) -> Result<Option<AppTool>, Failure> {
        let Some(app) = self.by_toolkit.get(toolkit) else { return Ok(None) };
        let tools = app.client()?.tools().await?;
        Ok(tools.iter().find(|t| t.name == tool).cloned())
    }

    /// Why the app under `toolkit` cannot be used, if it cannot.
    pub(crate) fn problem(&self, toolkit: &str) -> Option<&'static str> {
        match self.by_toolkit.get(toolkit) {
            Some(AppEntry::Broken(code)) => Some(code),
            _ => None,
        }
    }
}

impl Connector for Apps {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>> {
        Box::pin(async move {
            let result = match call.action.as_str() {
                LISTING => self.listing(call.args["toolkit"].as_str()).await,
                _ => {
                    let toolkit = call.args["toolkit"].as_str().unwrap_or_default();
                    let app = self
                        .by_toolkit
                        .get(toolkit)
                        .ok_or_else(|| Failure::new("connected_app_removed", RETRY_AFTER_SECS))?
                        .client()?;
                    app.call(call.args["tool"].as_str().unwrap_or_default(), call.args.get("arguments"))
                        .await?
                }
            };
            Ok(Done { result, cost: call.price })
        })
    }

    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Mcp
    }
}

/// Removes from a `connections.tools` result the tools `kit` does not permit, counts them in
/// `withheld_by_policy`, and shows each remaining tool's effect as a call is gated: its
/// annotation raised to the kit's pin.
pub fn filter_listing(kit: &Kit, result: &mut Value) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else { return };
    let before = tools.len();
    tools.retain_mut(|t| {
        let (toolkit, name) =
            (t["toolkit"].as_str().unwrap_or_default(), t["name"].as_str().unwrap_or_default());
        if !kit.toolkits.permits(toolkit, name) {
            return false;
        }
        let declared = serde_json::from_value(t["declared"].clone()).unwrap_or(None);
        let effect = kit.toolkits.effect(toolkit, name, declared);
        t["effect"] = json!(effect);
        true
    });
    let withheld = before - tools.len();
    result["withheld_by_policy"] = json!(withheld);
}

/// A stored connected app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppRecord {
    pub toolkit: String,
    pub app: super::HttpSpec,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
    /// Why its settings cannot be used now (`secret_unavailable`, `invalid_secret_value`), if
    /// they cannot: its calls are `unavailable` until an admin fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}
