//! SSE fan-out benchmark (issue #5): `subscribers` clients hold `GET /v1/events` open on one
//! tenant while an agent's actions flow at a fixed rate; each client measures, for every
//! action event it receives, the time from the entry's commit (its `at`, stamped inside the
//! writer's transaction) to delivery. Prints delivery-latency percentiles, how many events
//! arrived and were lost, and the server's memory as subscribers join. With
//! `--subscribe-base` the subscribers hold their streams on another instance than the one the
//! actions go to (`--base`), on the same database: delivery then crosses instances, and
//! `--server-pid` should name the subscribers' instance. `bench/sse.sh` starts the release
//! servers and runs this against them.
//!
//! cargo run --release -p server --example sse_fanout -- --base URL --company-key KEY \
//!     --agent-key KEY --profile ID [--subscribe-base URL] [--subscribers 1000] [--rate 50]
//!     [--seconds 10] [--server-pid PID]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Mutex;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn rss_mb(pid: Option<&str>) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let kb: f64 =
        status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[tokio::main]
async fn main() {
    let base = arg("--base").expect("--base URL");
    let company = arg("--company-key").expect("--company-key");
    let agent = arg("--agent-key").expect("--agent-key");
    let profile = arg("--profile").expect("--profile");
    let subscribers: usize = arg("--subscribers").map_or(1000, |v| v.parse().expect("a number"));
    let rate: u64 = arg("--rate").map_or(50, |v| v.parse().expect("a number"));
    let seconds: u64 = arg("--seconds").map_or(10, |v| v.parse().expect("a number"));
    let pid = arg("--server-pid");
    let subscribe_base = arg("--subscribe-base").unwrap_or_else(|| base.clone());

    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let received = Arc::new(AtomicU64::new(0));
    let lagged = Arc::new(AtomicU64::new(0));
    let connected = Arc::new(AtomicU64::new(0));
    let idle = rss_mb(pid.as_deref()).unwrap_or(f64::NAN);
    println!("server RSS with no subscribers: {idle:.1} MB");
    let mut quarter = None;
    let mut tasks = Vec::new();
    for i in 0..subscribers {
        let (client, base, company) = (client.clone(), subscribe_base.clone(), company.clone());
        let (latencies, received, lagged, joined) =
            (latencies.clone(), received.clone(), lagged.clone(), connected.clone());
        tasks.push(tokio::spawn(async move {
            // Each subscriber has its own connection, as separate consoles would.
            let res = client
                .get(format!("{base}/v1/events"))
                .bearer_auth(&company)
                .send()
                .await
                .unwrap_or_else(|e| panic!("subscriber {i}: {e}"));
            assert_eq!(res.status().as_u16(), 200, "subscriber {i}");
            joined.fetch_add(1, Ordering::Relaxed);
            let mut res = res;
            let mut buf = String::new();
            while let Ok(Some(chunk)) = res.chunk().await {
                let now = chrono::Utc::now();
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    if event.contains("event: lagged") {
                        lagged.fetch_add(1, Ordering::Relaxed);
                    }
                    if !event.contains("event: action") {
                        continue;
                    }
                    // Only the commit time is needed, so read just that field, not the whole JSON:
                    // the client shares the machine with the server.
                    let Some(at) = event
                        .split_once("\"at\":\"")
                        .and_then(|(_, rest)| rest.split_once('"'))
                        .and_then(|(at, _)| chrono::DateTime::parse_from_rfc3339(at).ok())
                    else {
                        continue;
                    };
                    received.fetch_add(1, Ordering::Relaxed);
                    let took = (now - at.with_timezone(&chrono::Utc)).to_std().unwrap_or_default();
                    latencies.lock().expect("latencies").push(took);
                }
            }
        }));
        if (i + 1) % 250 == 0 {
            while connected.load(Ordering::Relaxed) < (i + 1) as u64 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let rss = rss_mb(pid.as_deref()).unwrap_or(f64::NAN);
            println!("server RSS with {:>4} subscribers: {rss:.1} MB", i + 1);
            quarter.get_or_insert((i + 1, rss));
        }
    }
    // Per subscriber: the average over all of them, and the cost of each one after the
    // first 250 (the one-time growth of the runtime and allocator is in the first).
    let all = rss_mb(pid.as_deref()).unwrap_or(f64::NAN);
    let kb = |mb: f64, n: usize| mb * 1024.0 / n.max(1) as f64;
    print!("memory per subscriber: {:.1} KB on average", kb(all - idle, subscribers));
    match quarter.filter(|(n, _)| *n < subscribers) {
        Some((n, at)) => println!(", {:.1} KB each beyond the first {n}", kb(all - at, subscribers - n)),
        None => println!(),
    }
    while connected.load(Ordering::Relaxed) < subscribers as u64 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Actions at a fixed rate, from one agent.
    let total = rate * seconds;
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    let mut sent = Vec::new();
    for n in 0..total {
        tick.tick().await;
        let (client, base, agent, profile) = (client.clone(), base.clone(), agent.clone(), profile.clone());
        sent.push(tokio::spawn(async move {
            client
                .post(format!("{base}/v1/users/{profile}/web/read"))
                .bearer_auth(&agent)
                .json(&serde_json::json!({"url": format!("https://fanout.example.test/{n}")}))
                .send()
                .await
                .map(|r| r.status().as_u16() == 200)
                .unwrap_or(false)
        }));
    }
    let mut ok = 0;
    for s in sent {
        ok += u64::from(s.await.unwrap_or(false));
    }
    let elapsed = started.elapsed();
    // Let the last events arrive, then close every stream by ending the process's clients.
    let want = ok * subscribers as u64;
    let deadline = Instant::now() + Duration::from_secs(10);
    while received.load(Ordering::Relaxed) < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "server RSS with {subscribers} subscribers while actions flowed: {:.1} MB",
        rss_mb(pid.as_deref()).unwrap_or(f64::NAN)
    );
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    let mut lat = std::mem::take(&mut *latencies.lock().expect("latencies"));
    let got = received.load(Ordering::Relaxed);
    lat.sort();
    println!(
        "{ok} actions in {:.1} s ({:.0}/s) to {subscribers} subscribers: {got} of {want} deliveries, {} lagged",
        elapsed.as_secs_f64(),
        ok as f64 / elapsed.as_secs_f64(),
        lagged.load(Ordering::Relaxed)
    );
    if !lat.is_empty() {
        let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
        println!(
            "commit to delivery: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
            pct(0.5),
            pct(0.99),
            pct(1.0),
            lat.len()
        );
    }
}
