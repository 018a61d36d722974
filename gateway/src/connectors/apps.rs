//! Connected apps: a tenant's upstream MCP servers, each registered under a toolkit name
//! (`tracker`, `github`). The gateway is their MCP client (the official SDK's, `rmcp`): their
//! tools are the toolkit's tools, listed by `connections.tools` and called by
//! `connections.execute`, the `connections` primitive's two actions, through the same
//! pipeline as every other action.
//!
//! Guarantees:
//! - Each upstream tool's effect comes from its annotations through the one classifier
//!   ([`policy::Effect::classify`]): `readOnlyHint` is a read, `destructiveHint` is
//!   destructive, and a tool that declares neither is a write and is gated as one.
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

use super::{Call, Connector, ConnectorKind, Done, Failure};

/// The action that lists connected-app tools.
pub const LISTING: &str = "connections.tools";
/// How old a tool list read from an app may be.
pub const TOOLS_MAX_AGE: Duration = Duration::from_secs(60);
/// Seconds an agent is told to wait after an app did not answer.
const RETRY_AFTER_SECS: u32 = 5;

/// One tool of a connected app, as a listing shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppTool {
    pub toolkit: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `read`, `write` or `destructive`, from the tool's annotations.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub effect: Effect,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: Value,
}

/// The effect of an upstream tool: its annotations through the one classifier.
pub fn effect_of(tool: &Tool) -> Effect {
    let a = tool.annotations.as_ref();
    let declared = if a.and_then(|a| a.read_only_hint) == Some(true) {
        Some("read")
    } else if a.and_then(|a| a.destructive_hint) == Some(true) {
        Some("destructive")
    } else {
        None
    };
    Effect::classify(declared)
}

/// The client of one connected app: where it is, its credential, and its last tool list.
pub(crate) struct AppClient {
    toolkit: String,
    url: String,
    timeout: Duration,
    /// The credential as a header: `Authorization: Bearer …`, `Basic …`, or a named one.
    credential: Option<(HeaderName, HeaderValue)>,
    tools: Mutex<Option<(Instant, Arc<Vec<AppTool>>)>>,
}

impl AppClient {
    pub(crate) fn new(
        toolkit: String,
        url: String,
        timeout: Duration,
        credential: Option<(HeaderName, HeaderValue)>,
    ) -> AppClient {
        AppClient { toolkit, url, timeout, credential, tools: Mutex::default() }
    }

    /// A session with the app, over streamable HTTP with the credential on every request.
    async fn connect(&self) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, Failure> {
        // reqwest 0.13 (rmcp's) uses rustls on whichever provider the process installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = HashMap::new();
        if let Some((name, value)) = &self.credential {
            headers.insert(name.clone(), value.clone());
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).custom_headers(headers);
        let transport = StreamableHttpClientTransport::from_config(config);
        ().serve(transport).await.map_err(|e| {
            tracing::warn!(toolkit = %self.toolkit, error = %e, "a connected app did not open a session");
            Failure::new("connected_app_unreachable", RETRY_AFTER_SECS)
        })
    }

    /// The app's tools, read at most [`TOOLS_MAX_AGE`] ago.
    pub(crate) async fn tools(&self) -> Result<Arc<Vec<AppTool>>, Failure> {
        if let Some((at, tools)) = &*self.tools.lock().expect("tools lock")
            && at.elapsed() < TOOLS_MAX_AGE
        {
            return Ok(tools.clone());
        }
        let read = tokio::time::timeout(self.timeout, async {
            let session = self.connect().await?;
            let listed = session.list_all_tools().await;
            let _ = session.cancel().await;
            listed.map_err(|_| Failure::new("connected_app_bad_response", RETRY_AFTER_SECS))
        })
        .await
        .map_err(|_| Failure::new("connected_app_timeout", RETRY_AFTER_SECS))??;
        let tools: Arc<Vec<AppTool>> = Arc::new(read.iter().map(|t| self.describe(t)).collect());
        *self.tools.lock().expect("tools lock") = Some((Instant::now(), tools.clone()));
        Ok(tools)
    }

    fn describe(&self, t: &Tool) -> AppTool {
        AppTool {
            toolkit: self.toolkit.clone(),
            name: t.name.to_string(),
            description: t.description.as_ref().map(|d| d.to_string()),
            effect: effect_of(t),
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
            let session = self.connect().await?;
            let called = session.call_tool(params).await;
            let _ = session.cancel().await;
            called.map_err(|e| {
                tracing::warn!(toolkit = %self.toolkit, tool, error = %e, "a connected app's tool call failed");
                Failure::new("connected_app_bad_response", RETRY_AFTER_SECS)
            })
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

/// A tenant's connected apps by toolkit: the connector of the `connections` primitive.
#[derive(Default)]
pub(crate) struct Apps {
    pub(crate) by_toolkit: BTreeMap<String, Arc<AppClient>>,
}

impl Apps {
    /// Every tool of every app (or of `only`), and the toolkits that did not answer.
    async fn listing(&self, only: Option<&str>) -> Value {
        let mut tools = Vec::new();
        let mut unavailable = Vec::new();
        for (name, app) in self.by_toolkit.iter().filter(|(n, _)| only.is_none_or(|o| o == n.as_str())) {
            match app.tools().await {
                Ok(t) => tools.extend(t.iter().cloned()),
                Err(f) => unavailable.push(json!({ "toolkit": name, "reason": f.detail })),
            }
        }
        json!({ "tools": tools, "unavailable": unavailable })
    }

    /// The effect of `tool` in `toolkit`: `Ok(None)` when no app is registered under it.
    pub(crate) async fn effect(&self, toolkit: &str, tool: &str) -> Result<Option<Effect>, Failure> {
        let Some(app) = self.by_toolkit.get(toolkit) else { return Ok(None) };
        let tools = app.tools().await?;
        Ok(tools.iter().find(|t| t.name == tool).map(|t| t.effect))
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
                        .ok_or_else(|| Failure::new("connected_app_removed", RETRY_AFTER_SECS))?;
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

/// Removes from a `connections.tools` result the tools `kit` does not permit, and counts them
/// in `withheld_by_policy`.
pub fn filter_listing(kit: &Kit, result: &mut Value) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else { return };
    let before = tools.len();
    tools.retain(|t| {
        kit.toolkits
            .permits(t["toolkit"].as_str().unwrap_or_default(), t["name"].as_str().unwrap_or_default())
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
}
