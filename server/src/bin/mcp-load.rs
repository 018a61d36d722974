//! `mcp-load`: one load generator for a tool call over `/mcp`, over `/v1`, and over any other
//! MCP server, so the figures of `make bench-mcp` come from the same client.
//!
//! `N` clients on loopback, each its own connection, each with its own MCP session (spec
//! 2025-11-25: `initialize`, then `tools/call` with `Mcp-Session-Id`) or stateless (spec
//! 2026-07-28: each call on its own), call as fast as answers come for `--seconds`. Prints
//! calls/s and latency percentiles; exits non-zero if any answer was not a success.
//!
//! ```text
//! mcp-load --url http://127.0.0.1:3000/mcp --key nv_… --tool naive_web_read --args '{"url":"…"}' --mode session
//! mcp-load --url http://127.0.0.1:3000/v1/users/prf_…/web/read --key nv_… --args '{"url":"…"}' --mode v1
//! mcp-load --url http://127.0.0.1:3000/mcp --key nv_… --mode list   # tools/list latency
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Options {
    url: String,
    key: Option<String>,
    tool: String,
    args: Value,
    mode: String,
    clients: usize,
    seconds: f64,
}

fn options() -> Options {
    let mut o = Options {
        url: String::new(),
        key: None,
        tool: String::new(),
        args: json!({}),
        mode: "session".into(),
        clients: 64,
        seconds: 10.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => o.url = value(),
            "--key" => o.key = Some(value()),
            "--tool" => o.tool = value(),
            "--args" => o.args = serde_json::from_str(&value()).expect("--args is JSON"),
            "--mode" => o.mode = value(),
            "--clients" => o.clients = value().parse().expect("--clients is a number"),
            "--seconds" => o.seconds = value().parse().expect("--seconds is a number"),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!o.url.is_empty(), "--url is required");
    o
}

/// One client: its connection, and its session once initialized.
struct Caller {
    http: reqwest::Client,
    o: Arc<Options>,
    session: Option<String>,
    protocol: &'static str,
    next_id: u64,
}

/// The JSON-RPC answer in a response body, plain JSON or the `data:` lines of an SSE stream.
fn message(body: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return Some(v);
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
}

impl Caller {
    fn new(o: Arc<Options>) -> Caller {
        let http = reqwest::Client::builder().pool_max_idle_per_host(1).build().expect("a client");
        let protocol = if o.mode == "stateless" { "2026-07-28" } else { "2025-11-25" };
        Caller { http, o, session: None, protocol, next_id: 0 }
    }

    async fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let mut body = json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": &params });
        if self.protocol == "2026-07-28" {
            body["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.protocol,
                "io.modelcontextprotocol/clientInfo": { "name": "mcp-load", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let mut req = self
            .http
            .post(&self.o.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", self.protocol)
            .json(&body);
        if let Some(k) = &self.o.key {
            req = req.bearer_auth(k);
        }
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        if self.protocol == "2026-07-28" {
            req = req.header("Mcp-Method", method);
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                req = req.header("Mcp-Name", name);
            }
        }
        let res = req.send().await.map_err(|e| e.to_string())?;
        if let Some(s) = res.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap_or_default().to_string());
        }
        let status = res.status();
        let text = res.text().await.map_err(|e| e.to_string())?;
        let answer = message(&text).ok_or_else(|| format!("{status}: {text}"))?;
        match answer.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("{status}: {text}")),
        }
    }

    async fn open(&mut self) -> Result<(), String> {
        if self.o.mode != "session" && self.o.mode != "list" {
            return Ok(());
        }
        let params = json!({
            "protocolVersion": self.protocol,
            "capabilities": {},
            "clientInfo": { "name": "mcp-load", "version": "1" },
        });
        self.rpc("initialize", params).await?;
        let mut req = self
            .http
            .post(&self.o.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", self.protocol)
            .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        if let Some(k) = &self.o.key {
            req = req.bearer_auth(k);
        }
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        req.send().await.map_err(|e| e.to_string())?;
        Ok(())
    }

    /// One call; `Err` when the answer was not a success.
    async fn call(&mut self) -> Result<(), String> {
        match self.o.mode.as_str() {
            "v1" => {
                let mut req = self.http.post(&self.o.url).json(&self.o.args);
                if let Some(k) = &self.o.key {
                    req = req.bearer_auth(k);
                }
                let res = req.send().await.map_err(|e| e.to_string())?;
                let status = res.status();
                let text = res.text().await.map_err(|e| e.to_string())?;
                if status.is_success() { Ok(()) } else { Err(format!("{status}: {text}")) }
            }
            "list" => self.rpc("tools/list", json!({})).await.map(|_| ()),
            _ => {
                let params = json!({ "name": self.o.tool, "arguments": self.o.args });
                let r = self.rpc("tools/call", params).await?;
                if r["isError"] == json!(true) { Err(r.to_string()) } else { Ok(()) }
            }
        }
    }
}

async fn client(o: Arc<Options>, stop: Arc<AtomicBool>) -> Result<Vec<Duration>, String> {
    let mut c = Caller::new(o);
    c.open().await?;
    let mut lat = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        c.call().await?;
        lat.push(t.elapsed());
    }
    Ok(lat)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let o = Arc::new(options());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..o.clients).map(|_| tokio::spawn(client(o.clone(), stop.clone()))).collect();
    tokio::time::sleep(Duration::from_secs_f64(o.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut lat = Vec::new();
    for t in tasks {
        match t.await.expect("a client task") {
            Ok(l) => lat.extend(l),
            Err(e) => {
                eprintln!("a call failed: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{} calls/s  p50 {:.2} ms  p99 {:.2} ms  ({} calls, {} clients, {:.1} s, mode {})",
        (lat.len() as f64 / secs).round(),
        pct(0.50),
        pct(0.99),
        lat.len(),
        o.clients,
        secs,
        o.mode
    );
    std::process::ExitCode::SUCCESS
}
