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
//! mcp-load … --rate 2000   # a fixed 2,000 calls/s across the clients, latency from when each was due
//! mcp-load … --timeline     # also, on stderr, the slowest call of every 100 ms: where a tail clusters
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server::mcp::client::{McpClient, Mode};

struct Options {
    url: String,
    key: Option<String>,
    tool: String,
    args: Value,
    mode: String,
    clients: usize,
    seconds: f64,
    /// Calls per second across all clients; none is as fast as answers come.
    rate: Option<f64>,
    /// Print the slowest call of every 100 ms window to stderr.
    timeline: bool,
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
        rate: None,
        timeline: false,
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
            "--rate" => o.rate = Some(value().parse().expect("--rate is calls per second")),
            "--timeline" => o.timeline = true,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!o.url.is_empty(), "--url is required");
    o
}

/// One client: its own connection, and its MCP session when it has one.
enum Caller {
    Mcp(McpClient, &'static str),
    V1(reqwest::Client),
}

impl Caller {
    fn new(o: &Options) -> Caller {
        let http = server::http_client_builder()
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .build()
            .expect("a client");
        let mode = if o.mode == "stateless" { Mode::Stateless } else { Mode::Session };
        match o.mode.as_str() {
            "v1" => Caller::V1(http),
            "list" => Caller::Mcp(McpClient::new(http, &o.url, o.key.clone(), mode), "tools/list"),
            _ => Caller::Mcp(McpClient::new(http, &o.url, o.key.clone(), mode), "tools/call"),
        }
    }

    /// One call; `Err` when the answer was not a success.
    async fn call(&mut self, o: &Options) -> Result<(), String> {
        match self {
            Caller::V1(http) => {
                let mut req = http.post(&o.url).json(&o.args);
                if let Some(k) = &o.key {
                    req = req.bearer_auth(k);
                }
                let res = req.send().await.map_err(|e| e.to_string())?;
                let status = res.status();
                let text = res.text().await.map_err(|e| e.to_string())?;
                // Read like an MCP answer is read: parsed, and checked.
                let body: Value =
                    serde_json::from_str(&text).map_err(|e| format!("{status}: {e}: {text}"))?;
                if status.is_success() && body["ok"] == json!(true) {
                    Ok(())
                } else {
                    Err(format!("{status}: {text}"))
                }
            }
            Caller::Mcp(c, "tools/list") => c.request("tools/list", json!({})).await.map(|_| ()),
            Caller::Mcp(c, _) => {
                let r = c.call_tool(&o.tool, &o.args).await?;
                if r["isError"] == json!(true) { Err(r.to_string()) } else { Ok(()) }
            }
        }
    }
}

async fn client(
    o: Arc<Options>,
    index: usize,
    stop: Arc<AtomicBool>,
) -> Result<Vec<(Instant, Duration)>, String> {
    let mut c = Caller::new(&o);
    if let Caller::Mcp(m, _) = &mut c {
        m.open().await?;
    }
    let mut lat = Vec::new();
    // At a fixed rate, each call's latency counts from when it was due, not from when it was
    // sent, so a slow answer that delays the next call is not hidden (coordinated omission).
    let every = o.rate.map(|r| Duration::from_secs_f64(o.clients as f64 / r));
    // Spread over the period, so the clients do not all call at the same instant.
    let mut due = Instant::now() + every.map_or(Duration::ZERO, |e| e * index as u32 / o.clients as u32);
    while !stop.load(Ordering::Relaxed) {
        if every.is_some() {
            tokio::time::sleep_until(due.into()).await;
        } else {
            due = Instant::now();
        }
        c.call(&o).await?;
        lat.push((due, due.elapsed()));
        if let Some(every) = every {
            due += every;
        }
    }
    // A key holds a bounded number of sessions: the next run's clients need these places.
    if let Caller::Mcp(m, _) = &mut c {
        m.close().await;
    }
    Ok(lat)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let o = Arc::new(options());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..o.clients).map(|i| tokio::spawn(client(o.clone(), i, stop.clone()))).collect();
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
    if o.timeline {
        print_timeline(started, &lat);
    }
    let mut lat: Vec<Duration> = lat.into_iter().map(|(_, l)| l).collect();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{} calls/s  p50 {:.2} ms  p99 {:.2} ms  ({} calls, {} clients, {:.1} s, mode {}{})",
        (lat.len() as f64 / secs).round(),
        pct(0.50),
        pct(0.99),
        lat.len(),
        o.clients,
        secs,
        o.mode,
        o.rate.map(|r| format!(", fixed rate {r}/s")).unwrap_or_default()
    );
    std::process::ExitCode::SUCCESS
}

/// The slowest call due in each 100 ms window, on stderr: a tail from a periodic pause shows
/// as a few tall windows, one from steady contention as all of them raised.
fn print_timeline(started: Instant, calls: &[(Instant, Duration)]) {
    let mut windows: Vec<(usize, Duration)> = Vec::new();
    for (due, lat) in calls {
        let w = (due.saturating_duration_since(started).as_millis() / 100) as usize;
        if windows.len() <= w {
            windows.resize(w + 1, (0, Duration::ZERO));
        }
        windows[w].0 += 1;
        windows[w].1 = windows[w].1.max(*lat);
    }
    for (i, (n, max)) in windows.iter().enumerate() {
        eprintln!("{:>6} ms  {n:>5} calls  slowest {:>7.2} ms", i * 100, max.as_secs_f64() * 1e3);
    }
}
