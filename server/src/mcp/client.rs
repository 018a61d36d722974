//! A minimal MCP client over streamable HTTP, for the gateway's own callers: the demo agent
//! and the `mcp-load` benchmark. It speaks both generations: a session (spec 2025-11-25:
//! `initialize`, `notifications/initialized`, then requests with `Mcp-Session-Id`) or
//! stateless requests (spec 2026-07-28: each carries its protocol version, client info and
//! capabilities in `_meta`, and `Mcp-Method` / `Mcp-Name` headers). Tests use the official
//! Python SDK instead; this is not a general client.

use serde_json::{Value, json};

/// Which protocol generation a [`McpClient`] speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Session,
    Stateless,
}

impl Mode {
    fn version(self) -> &'static str {
        match self {
            Mode::Session => "2025-11-25",
            Mode::Stateless => "2026-07-28",
        }
    }
}

pub struct McpClient {
    http: reqwest::Client,
    url: String,
    key: Option<String>,
    mode: Mode,
    session: Option<String>,
    next_id: u64,
}

/// The JSON-RPC message in a response body: the `data:` lines of an event stream, or plain
/// JSON.
fn message(body: &str, stream: bool) -> Option<Value> {
    if !stream {
        return serde_json::from_str::<Value>(body).ok();
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
}

impl McpClient {
    pub fn new(http: reqwest::Client, url: impl Into<String>, key: Option<String>, mode: Mode) -> McpClient {
        McpClient { http, url: url.into(), key, mode, session: None, next_id: 0 }
    }

    fn post(&self, method: &str, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", self.mode.version())
            .json(body);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        if self.mode == Mode::Stateless {
            req = req.header("Mcp-Method", method);
            if let Some(name) = body["params"]["name"].as_str() {
                req = req.header("Mcp-Name", name);
            }
        }
        req
    }

    /// Sends one request; its `result`, or what came back instead.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let mut body = json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params });
        if self.mode == Mode::Stateless {
            body["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.mode.version(),
                "io.modelcontextprotocol/clientInfo": { "name": "naive-gateway", "version": env!("CARGO_PKG_VERSION") },
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let res = self.post(method, &body).send().await.map_err(|e| e.to_string())?;
        if let Some(s) = res.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.session = Some(s.to_string());
        }
        let status = res.status();
        let stream = res
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let text = res.text().await.map_err(|e| e.to_string())?;
        match message(&text, stream).and_then(|mut m| m.get_mut("result").map(Value::take)) {
            Some(result) => Ok(result),
            None => Err(format!("{status}: {text}")),
        }
    }

    /// Opens the session (a stateless client has none to open).
    pub async fn open(&mut self) -> Result<(), String> {
        if self.mode == Mode::Stateless {
            return Ok(());
        }
        let info = json!({ "name": "naive-gateway", "version": env!("CARGO_PKG_VERSION") });
        let params =
            json!({ "protocolVersion": self.mode.version(), "capabilities": {}, "clientInfo": info });
        self.request("initialize", params).await?;
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let res = self.post("notifications/initialized", &note).send().await.map_err(|e| e.to_string())?;
        if !res.status().is_success() {
            return Err(format!("notifications/initialized: {}", res.status()));
        }
        Ok(())
    }

    /// Ends the session, if there is one (`DELETE` with its id), so its place is free at once.
    pub async fn close(&mut self) {
        let Some(session) = self.session.take() else { return };
        let mut req = self.http.delete(&self.url).header("Mcp-Session-Id", session);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        let _ = req.send().await;
    }

    /// Calls `tool` with `args`: the tool's result (`isError` says whether it refused).
    pub async fn call_tool(&mut self, tool: &str, args: &Value) -> Result<Value, String> {
        self.request("tools/call", json!({ "name": tool, "arguments": args })).await
    }
}
