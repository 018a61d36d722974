//! Load for the gateway's service layer, in-process, on SQLite (WAL) or PostgreSQL.
//!
//! `gateway-load bench [--callers 64] [--tenants 1] [--actions 20000] [--max-batch 256] [--engines sqlite,postgres]
//! [--upstream URL --upstream-secret S]`
//! runs small actions that all pass (authenticate, decide, hold, execute in the sandbox,
//! settle, record, emit) from `callers` concurrent tasks and prints actions per second and
//! latency percentiles: on SQLite with group commit and with one transaction per job, so the
//! gain is visible, and on PostgreSQL with one instance and with two on one database. Each
//! caller makes a few untimed actions first, so the figures are the steady state.
//! With `--upstream` (the reference upstream, `server upstream`, at that base URL) it also
//! runs a $0.01 `cards.charge` on the sandbox and then on an HTTP connector to that upstream,
//! with its credential in the vault: reserve, the HTTP call outside any transaction, settle.
//!
//! `gateway-load seed-console --db PATH [--approvals 100000] [--ledger 1000000] [--waiting-every 100]`
//! makes a demo database with that many approvals (1 in `waiting-every` still waiting, every
//! other waiting one needing two approvers and holding one vote) and ledger entries (a hold
//! and a post per charge, over the last 60 days) on the demo's procurement-bot, indexes it,
//! and prints the admin password and the profile id for the console benchmark
//! (`bench/console.sh`).
//!
//! `gateway-load outbox --runtime URL1,URL2 --runtime-secret S [--callers 64] [--commands 20000]
//! [--rate 1000] [--backlog 100000]` measures the outbox against two fresh reference runtimes
//! (`server team-runtime --seed-tasks 64`), one for each of two databases: `teams.comment`
//! queued per second beside `web.read` and a sandbox `cards.charge` on the same callers, with
//! the delivery worker running, on a database without a backlog and on one where another
//! tenant's runtime and endpoints are down with `backlog` blocked rows, in five interleaved
//! rounds whose medians and ratios it prints; then, on each database, the worker draining a
//! backlog into the runtime, and enqueue-to-delivered latency at a steady rate while the
//! runtime is up (beside the backlog, the worker also retries the blocked rows as they fall due).
//!
//! `gateway-load bulk [--items 100] [--rounds 3]` measures a bulk approval (issue #34): on a
//! fresh SQLite file, `items` parked charges approved in one `decide_many` (what
//! `POST /v1/approvals/decide` and the inbox's bulk form call), beside the same number approved
//! one `approve` at a time, in interleaved rounds whose medians it prints.
//!
//! `gateway-load soak --db URL` drives a mixed load (allowed, parked, refused) until killed, and
//! prints `done N` as it goes; the crash test kills it with SIGKILL mid-load and checks the
//! ledger after a restart.

//! `gateway-load replay [--calls 1000000] [--profiles 100,10000]` measures replay (issue #35):
//! see [`replay_load`].
//!
//! `gateway-load archive [--per-day 50000] [--days 40] [--retention 7]`: the log's archive and
//! retention over a simulated month (issue #54); see [`archive_load`].
//!
//! `gateway-load streams --receiver URL [--entries 1000000] [--batch 500]`: a log stream's
//! catch-up (issue #54); see [`streams_load`].
//!
//! `gateway-load bench … --otlp URL` (built with `--features load-tracing`) also measures what
//! metrics and traces cost, with the reference OTLP receiver at URL: see `load/telemetry.rs`.

#[path = "load/archive.rs"]
mod archive_load;
#[path = "load/replay.rs"]
mod replay_load;
#[path = "load/streams.rs"]
mod streams_load;

#[cfg(feature = "load-tracing")]
#[path = "load/telemetry.rs"]
mod telemetry;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gateway::delivery::egress::Allowance;
use gateway::domain::calls::{ActionCall, Disposition};
use gateway::domain::vault::MasterKey;
use gateway::sql::Tx;
use gateway::{Gateway, GatewayConfig, Role};
use policy::{Kit, Money};
use serde_json::json;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

/// A tenant with a roomy kit and `agents` agents, each with a key.
async fn setup(gw: &Gateway, agents: usize, kit: &str) -> Vec<String> {
    let (t, _) = gw.create_tenant("Load", Money::dollars(1_000_000), None).await.expect("tenant");
    let owner = gw
        .create_user(
            &t.id,
            &format!("owner-{}", t.id.as_str()[4..].to_lowercase()),
            "load-password",
            &[Role::Admin],
        )
        .await
        .expect("user");
    let kit = Kit::from_json(kit).expect("kit");
    let name = kit.name.clone();
    gw.save_kit(&t.id, kit, None, "load").await.expect("kit saves");
    let mut tokens = Vec::new();
    for i in 0..agents {
        let p = gw
            .create_profile(&t.id, &format!("agent-{i}"), Some(&owner.id), None, &name)
            .await
            .expect("profile");
        tokens.push(gw.issue_key(&t.id, &p.id, "load").await.expect("key").1.token);
    }
    tokens
}

/// The tasks the benchmark's runtime must hold (`server team-runtime --seed-tasks 64`).
const RUNTIME_TASKS: usize = 64;

/// Untimed actions each caller makes first.
const WARM_UP_PER_CALLER: usize = 50;

/// What a run's actions are, and what carries them out.
#[derive(Clone, Debug)]
enum Work {
    /// `web.read` on the sandbox.
    Read,
    /// `web.read` on the sandbox under a kit with three period limits (a day, a week, a
    /// month) and a rate limit, none of them reached: what periods and rates cost.
    ReadUnderPeriods,
    /// A $0.01 `cards.charge` on the sandbox.
    Charge,
    /// A $0.01 `cards.charge` on an HTTP connector to the upstream at this base URL, with
    /// this credential.
    ChargeOverHttp { base: String, secret: String },
    /// `teams.comment`, queued in the outbox for the runtime at this base URL (registered with
    /// this secret), each caller on a task of its own.
    Comment { base: String, secret: String },
}

impl Work {
    fn kit(&self) -> &'static str {
        match self {
            Work::Read => r#"{"name":"Open","primitives":["web"]}"#,
            Work::ReadUnderPeriods => {
                r#"{"name":"Open","primitives":["web"],"limits":{"budget":{"periods":[
                  {"every":"day","hard_cap":"100000","soft_cap":"90000"},
                  {"every":"week","week_starts":"sunday","hard_cap":"300000"},
                  {"every":"month","hard_cap":"1000000"}]},
                  "rate":[{"calls":1000000,"per":"minute"}]}}"#
            }
            // The outbox bench drives reads and charges from the commenting callers too.
            Work::Comment { .. } => r#"{"name":"Open","primitives":["web","cards","tasks"]}"#,
            _ => r#"{"name":"Open","primitives":["cards"]}"#,
        }
    }

    fn call(&self, token: &str, i: usize, caller: usize) -> ActionCall {
        let (action, args) = match self {
            Work::Read | Work::ReadUnderPeriods => {
                ("web.read", json!({"url": format!("https://x.test/{i}")}))
            }
            Work::Comment { .. } => (
                "teams.comment",
                json!({"task_id": format!("T-{}", caller % RUNTIME_TASKS + 1), "body": format!("comment {i}")}),
            ),
            _ => ("cards.charge", json!({"amount": "0.01", "merchant": "acme"})),
        };
        ActionCall { token: token.to_string(), action: action.into(), args, idempotency_key: None }
    }

    /// Points each tenant's `cards` at the upstream, with its credential in the vault, or
    /// registers its runtime.
    async fn connect(&self, gw: &Gateway) {
        use gateway::audit::activity::Transport;
        if let Work::Comment { base, secret } = self {
            for t in gw.tenants().await.expect("tenants") {
                let info = gw.register_runtime(&t.id, base, Some(secret), "load", Transport::Http).await;
                assert!(
                    info.expect("the runtime registers").claimed,
                    "the runtime at {base} is claimed by another tenant: start a fresh one"
                );
            }
            return;
        }
        let Work::ChargeOverHttp { base, secret } = self else { return };
        use gateway::delivery::connectors::{AuthSpec, ConnectorSpec, HttpSpec};
        for t in gw.tenants().await.expect("tenants") {
            gw.put_secret(&t.id, "upstream", secret, "load", Transport::Http).await.expect("secret");
            let spec = ConnectorSpec::Http(HttpSpec {
                url: format!("{base}/cards/charge"),
                timeout_ms: 10_000,
                auth: AuthSpec::Bearer { secret: "upstream".into() },
            });
            gw.set_connector(&t.id, "cards", spec, "load", Transport::Http).await.expect("connector");
        }
    }
}

/// Where a run's actions go.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// One gateway on a fresh SQLite file, its writer batching up to this many jobs.
    Sqlite { max_batch: usize },
    /// This many gateways (instances, each with its own pool, caches and listener) on one
    /// fresh PostgreSQL database, the callers spread over them.
    Postgres { instances: usize },
}

async fn open(
    target: Target,
    dir: &std::path::Path,
    cluster: Option<&gateway::testing::Cluster>,
) -> Vec<Gateway> {
    match target {
        Target::Sqlite { max_batch } => vec![
            Gateway::open_with(
                &format!("sqlite://{}/bench.db", dir.display()),
                GatewayConfig {
                    max_batch,
                    master_key: Some(MasterKey::generate()),
                    egress_allow: Allowance::loopback(),
                    ..Default::default()
                },
            )
            .await
            .expect("open"),
        ],
        Target::Postgres { instances } => {
            let url = cluster.expect("a PostgreSQL cluster").fresh_database().await;
            let key = MasterKey::generate();
            let mut gws = Vec::new();
            for _ in 0..instances {
                let config = GatewayConfig {
                    master_key: Some(key.clone()),
                    egress_allow: Allowance::loopback(),
                    ..Default::default()
                };
                gws.push(Gateway::open_with(&url, config).await.expect("open"));
            }
            gws
        }
    }
}

/// What one measured phase took: wall seconds, this process's CPU seconds (every thread, the
/// callers' included), and each action's latency.
struct Phase {
    secs: f64,
    cpu: f64,
    lat: Vec<Duration>,
}

impl Phase {
    /// Microseconds of CPU per action: unlike actions/s, it does not move with CPU time the
    /// host takes from this virtual machine (steal) or with whatever else runs.
    fn cpu_us(&self) -> f64 {
        self.cpu * 1e6 / self.lat.len().max(1) as f64
    }

    fn rate(&self) -> f64 {
        self.lat.len() as f64 / self.secs
    }

    /// One line: the rate in `unit`, p50, p99 and CPU per action.
    fn report(&self, label: &str, unit: &str) {
        println!(
            "{label:<34} {:>9.0} {unit}   p50 {:>6.2} ms   p99 {:>6.2} ms   {:>4.0} µs CPU each",
            self.rate(),
            ms(pct(&self.lat, 0.5)),
            ms(pct(&self.lat, 0.99)),
            self.cpu_us()
        )
    }
}

/// CPU seconds this process has used so far, user and system.
fn cpu_secs() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut u = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Runs `actions` of `work` from one caller per token (spread over `gws`), after each
/// caller's untimed warm-up: the phase's time, CPU and every action's latency (sorted).
async fn drive(gws: &[Gateway], tokens: Vec<String>, work: Work, actions: u64) -> Phase {
    let callers = tokens.len();
    let (tokens, work) = (Arc::new(tokens), Arc::new(work));
    let next = Arc::new(AtomicU64::new(0));
    // Every caller warms up (keys and kits cached, the page cache and WAL filled) before the
    // clock starts, as criterion does; the measured phase is the steady state.
    let ready = Arc::new(tokio::sync::Barrier::new(callers + 1));
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let gw = gws[c % gws.len()].clone();
            let (tokens, next, ready, work) = (tokens.clone(), next.clone(), ready.clone(), work.clone());
            tokio::spawn(async move {
                for i in 0..WARM_UP_PER_CALLER {
                    gw.perform(work.call(&tokens[c], i, c)).await.expect("warm-up action");
                }
                ready.wait().await;
                let mut lat = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < actions {
                    let t0 = Instant::now();
                    let r = gw.perform(work.call(&tokens[c], 0, c)).await.expect("action");
                    assert_eq!(r.disposition, Disposition::Executed, "{}", r.body);
                    lat.push(t0.elapsed());
                }
                lat
            })
        })
        .collect();
    ready.wait().await;
    let (started, cpu) = (Instant::now(), cpu_secs());
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("caller"));
    }
    lat.sort();
    Phase { secs: started.elapsed().as_secs_f64(), cpu: cpu_secs() - cpu, lat }
}

/// The measured phase's PostgreSQL batches over every instance: their size, and how long a
/// batch held its tenant's lock per action in it (the serial part of one tenant's rate).
fn report_batches(
    before: &[gateway::store::postgres::Reading],
    after: &[gateway::store::postgres::Reading],
    statements: gateway::store::counts::Statements,
) {
    let mut r = gateway::store::postgres::Reading::default();
    for (b, a) in before.iter().zip(after) {
        let d = a.since(*b);
        r.transactions += d.transactions;
        r.jobs += d.jobs;
        r.keyed_jobs += d.keyed_jobs;
        r.keys_held_ns += d.keys_held_ns;
        r.conflicts += d.conflicts;
    }
    println!(
        "  {} jobs in {} transactions ({:.1} per batch), {} batches run again after a conflict; \
         a tenant's lock held {:.1} µs per action (taken to COMMIT, over the actions in its batch)",
        r.jobs,
        r.transactions,
        r.jobs as f64 / r.transactions.max(1) as f64,
        r.conflicts,
        r.held_us_per_job()
    );
    let per_action = |n: u64| n as f64 / r.jobs.max(1) as f64;
    println!(
        "  per action: {:.1} statements in its job, {:.1} outside jobs, {:.1} PostgreSQL round trips",
        per_action(statements.in_jobs),
        per_action(statements.outside_jobs),
        per_action(statements.postgres_round_trips())
    );
}

async fn bench(
    callers: usize,
    tenants: usize,
    actions: u64,
    (target, work): (Target, Work),
    cluster: Option<&gateway::testing::Cluster>,
) -> Phase {
    let dir = tempfile::tempdir().expect("tempdir");
    let gws = open(target, dir.path(), cluster).await;
    let gw = gws[0].clone();
    let mut tokens = Vec::with_capacity(callers);
    for t in 0..tenants {
        let agents = callers / tenants + usize::from(t < callers % tenants);
        tokens.extend(setup(&gw, agents, work.kit()).await);
    }
    work.connect(&gw).await;
    let runners = || gws.iter().filter_map(|g| g.store().postgres().map(|p| p.stats())).collect::<Vec<_>>();
    let (before, statements) = (runners(), gateway::store::counts::Statements::now());
    let phase = drive(&gws, tokens, work, actions).await;
    let statements = gateway::store::counts::Statements::now().since(statements);
    if let Target::Postgres { .. } = target {
        report_batches(&before, &runners(), statements);
    }
    if let Target::Sqlite { .. } = target {
        let (commits, jobs) = gw.writer_stats();
        println!(
            "  {jobs} writer jobs in {commits} commits ({:.1} per commit)",
            jobs as f64 / commits.max(1) as f64
        );
        let wal = std::fs::metadata(dir.path().join("bench.db-wal")).map(|m| m.len()).unwrap_or(0);
        println!("  WAL file after the run: {:.1} MB", wal as f64 / 1e6);
    }
    for t in gw.tenants().await.expect("tenants") {
        let report = gw.check_ledger(&t.id).await.expect("check");
        assert!(report.violations.is_empty(), "{:?}", report.violations);
    }
    println!(
        "  p99.9 {:.2} ms, max {:.2} ms, {:.0} µs of CPU per action",
        ms(pct(&phase.lat, 0.999)),
        ms(phase.lat[phase.lat.len() - 1]),
        phase.cpu_us()
    );
    for g in &gws {
        g.store().close().await;
    }
    phase
}

/// Rounds of the egress guard's comparison.
const EGRESS_ROUNDS: usize = 5;

/// The egress guard's cost (#30): the same $0.01 charge over the HTTP connector to the
/// upstream at `base`, on a gateway whose outbound client is guarded and on one whose is not,
/// in interleaved rounds on two fresh databases; the medians and their ratio.
async fn egress_compare(callers: usize, actions: u64, base: &str, secret: &str) {
    let work = Work::ChargeOverHttp { base: base.to_string(), secret: secret.to_string() };
    let mut sides = Vec::new();
    for unguarded in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = GatewayConfig {
            master_key: Some(MasterKey::generate()),
            egress_allow: Allowance::loopback(),
            egress_unguarded_for_benchmarks: unguarded,
            ..Default::default()
        };
        let url = format!("sqlite://{}/bench.db", dir.path().display());
        let gw = Gateway::open_with(&url, config).await.expect("open");
        let tokens = setup(&gw, callers, work.kit()).await;
        work.connect(&gw).await;
        sides.push((gw, tokens, dir));
    }
    let per_round = actions.div_ceil(EGRESS_ROUNDS as u64);
    let (mut rates, mut cpus) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for round in 1..=EGRESS_ROUNDS {
        for (i, (gw, tokens, _)) in sides.iter().enumerate() {
            let phase = drive(std::slice::from_ref(gw), tokens.clone(), work.clone(), per_round).await;
            let label = if i == 0 { "guarded" } else { "unguarded" };
            phase.report(&format!("  round {round}, egress {label}"), "actions/s");
            rates[i].push(phase.rate());
            cpus[i].push(phase.cpu_us());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on, off) = (median(&mut rates[0]), median(&mut rates[1]));
    let (on_cpu, off_cpu) = (median(&mut cpus[0]), median(&mut cpus[1]));
    println!(
        "charge over the HTTP connector, egress guard on / off: {on:.0} / {off:.0} actions/s = {:.3}x; CPU per call {on_cpu:.0} / {off_cpu:.0} µs = {:.3}x   (medians of {EGRESS_ROUNDS} rounds; target: within 3 %)",
        on / off,
        on_cpu / off_cpu
    );
    for (gw, ..) in &sides {
        gw.store().close().await;
    }
}

/// Rounds of the shadow's comparison.
const SHADOW_ROUNDS: usize = 5;

/// What a shadow kit costs a live call (#35): `web.read` on SQLite with group commit, on a
/// database whose kit has no shadow, one whose shadow decides every call the same way (a cap
/// the calls never reach), and one whose shadow refuses every call (each call also records
/// its difference), in interleaved rounds on fresh databases; the medians and their ratios.
async fn shadow_compare(callers: usize, actions: u64) {
    let work = Work::Read;
    let open = r#"{"name":"Open","primitives":["web"],"limits":{"budget":{"hard_cap":"1000000"}}}"#;
    let closed = r#"{"name":"Open","primitives":["search"]}"#;
    let mut sides = Vec::new();
    for shadow in [None, Some(open), Some(closed)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let gw = Gateway::open(&format!("sqlite://{}/bench.db", dir.path().display())).await.expect("open");
        let tokens = setup(&gw, callers, work.kit()).await;
        if let Some(s) = shadow {
            let tenant = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key").tenant;
            gw.start_shadow(&tenant, Kit::from_json(s).expect("kit"), "load").await.expect("shadow");
        }
        sides.push((gw, tokens, dir));
    }
    let labels = ["shadow off", "shadow agrees", "shadow refuses all"];
    let per_round = actions.div_ceil(SHADOW_ROUNDS as u64);
    let mut rates = [Vec::new(), Vec::new(), Vec::new()];
    for round in 1..=SHADOW_ROUNDS {
        for (i, (gw, tokens, _)) in sides.iter().enumerate() {
            let phase = drive(std::slice::from_ref(gw), tokens.clone(), work.clone(), per_round).await;
            phase.report(&format!("  round {round}, {}", labels[i]), "actions/s");
            rates[i].push(phase.rate());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [off, agrees, refuses] = rates.map(|mut r| median(&mut r));
    println!(
        "web.read with a shadow kit, agreeing / off: {agrees:.0} / {off:.0} actions/s = {:.3}x (target: within 5 %); refusing every call / off: {refuses:.0} / {off:.0} = {:.3}x   (medians of {SHADOW_ROUNDS} rounds)",
        agrees / off,
        refuses / off
    );
    for (gw, ..) in &sides {
        gw.store().close().await;
    }
}

/// Rounds of the outbox's comparison: each runs `web.read`, `cards.charge` and
/// `teams.comment` back to back from the same callers, on the database without a backlog and
/// then on the one with it, so a stretch of a noisy host weighs on both alike; the figures
/// are the rounds' medians.
const OUTBOX_ROUNDS: usize = 5;

/// The stuck tenant's blocked rows: its runtime's queue at its bound, the rest spread over
/// webhook endpoints at theirs.
const STUCK_ENDPOINTS: usize = 9;

/// One side of the outbox comparison: a fresh database with its delivery worker running,
/// and the callers' keys.
struct Side {
    label: &'static str,
    gw: Gateway,
    tokens: Vec<String>,
    work: Work,
    _worker: gateway::delivery::outbox::delivery::DeliveryHandle,
    _dir: tempfile::TempDir,
}

/// A database whose callers' tenant commands the runtime at `base`; with `backlog`, beside
/// them a tenant whose runtime and endpoints are down holds that many blocked rows.
async fn outbox_side(label: &'static str, callers: usize, base: &str, secret: &str, backlog: usize) -> Side {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = GatewayConfig {
        master_key: Some(MasterKey::generate()),
        egress_allow: Allowance::loopback(),
        // The rounds queue more than a tenant's runtime queue holds by default; delivery runs
        // beside them, and the bound is not what is measured.
        outbox: gateway::delivery::outbox::OutboxConfig { max_queued: 10_000_000, ..Default::default() },
        ..Default::default()
    };
    let gw = Gateway::open_with(&format!("sqlite://{}/bench.db", dir.path().display()), config)
        .await
        .expect("open");
    let work = Work::Comment { base: base.to_string(), secret: secret.to_string() };
    let tokens = setup(&gw, callers, work.kit()).await;
    work.connect(&gw).await;
    if backlog > 0 {
        seed_stuck_tenant(&gw, backlog).await;
    }
    let _worker = gw.start_delivery();
    Side { label, gw, tokens, work, _worker, _dir: dir }
}

/// A tenant whose runtime and webhook endpoints do not answer (port 9 on loopback), with
/// `rows` queued rows backing off: a tenth in its runtime's queue, the rest over its endpoints.
async fn seed_stuck_tenant(gw: &Gateway, rows: usize) {
    use gateway::audit::activity::Transport;
    let (t, _) = gw.create_tenant("Stuck", Money::dollars(1_000), None).await.expect("tenant");
    let dead = "http://127.0.0.1:9/";
    gw.register_runtime(&t.id, dead, Some("stuck-runtime-secret-0123"), "load", Transport::Http)
        .await
        .expect("runtime");
    let retry_at = chrono::Utc::now() + chrono::Duration::seconds(20);
    let per_queue = rows / (STUCK_ENDPOINTS + 1);
    gw.seed_stuck_queue(&t.id, "runtime", "", rows - per_queue * STUCK_ENDPOINTS, retry_at)
        .await
        .expect("seed");
    for i in 0..STUCK_ENDPOINTS {
        let spec: gateway::delivery::webhooks::EndpointSpec =
            serde_json::from_value(json!({"url": format!("{dead}hook{i}"), "events": ["approval.parked"]}))
                .expect("spec");
        let e = gw.create_webhook(&t.id, spec, "load", Transport::Http).await.expect("endpoint");
        gw.seed_stuck_queue(&t.id, "webhook", &e.endpoint.id, per_queue, retry_at).await.expect("seed");
    }
    println!("  {rows} blocked rows of a tenant whose runtime and {STUCK_ENDPOINTS} endpoints are down");
}

/// The outbox (issues #15 and #30): `teams.comment` queued per second beside `web.read` and a
/// sandbox `cards.charge` on the same callers, each with its CPU per action, with the delivery
/// worker running, on a database without a backlog and on one where another tenant holds
/// `backlog` blocked rows, in interleaved rounds; then the rate at which the worker drains a
/// backlog into the runtime, and enqueue-to-delivered latency at a steady `rate` per second.
async fn outbox_bench(
    callers: usize,
    commands: u64,
    runtimes: (String, String),
    secret: String,
    rate: u64,
    backlog: usize,
) {
    let clean = outbox_side("without a backlog", callers, &runtimes.0, &secret, 0).await;
    let stuck = outbox_side("beside the backlog", callers, &runtimes.1, &secret, backlog).await;
    let per_round = commands.div_ceil(OUTBOX_ROUNDS as u64);
    let mut rounds: Vec<[[f64; 6]; 2]> = Vec::new();
    for round in 1..=OUTBOX_ROUNDS {
        println!("round {round} of {OUTBOX_ROUNDS}, {per_round} actions each:");
        let mut pair = [[0.0; 6]; 2];
        for (i, side) in [&clean, &stuck].into_iter().enumerate() {
            pair[i] = outbox_round(side, per_round).await;
        }
        rounds.push(pair);
    }
    let median = |side: usize, i: usize| {
        let mut v: Vec<f64> = rounds.iter().map(|r| r[side][i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (side, s) in [&clean, &stuck].into_iter().enumerate() {
        println!(
            "{:<20} teams.comment {:>7.0}/s {:>4.0} µs CPU ({:.2}x a web.read's) | web.read {:>7.0}/s {:>4.0} µs | cards.charge {:>7.0}/s {:>4.0} µs  (medians of {OUTBOX_ROUNDS})",
            s.label,
            median(side, 0),
            median(side, 1),
            median(side, 1) / median(side, 3),
            median(side, 2),
            median(side, 3),
            median(side, 4),
            median(side, 5)
        );
    }
    println!(
        "beside {backlog} blocked rows / without: teams.comment {:.3}x the rate ({:.3}x the CPU), web.read {:.3}x ({:.3}x), cards.charge {:.3}x ({:.3}x)   (target: within 10 %)",
        median(1, 0) / median(0, 0),
        median(1, 1) / median(0, 1),
        median(1, 2) / median(0, 2),
        median(1, 3) / median(0, 3),
        median(1, 4) / median(0, 4),
        median(1, 5) / median(0, 5),
    );
    drain_and_latency(clean, rate, per_round).await;
    drain_and_latency(stuck, rate, per_round).await;
}

/// One round on one side: (comment rate, its CPU µs, read rate, its CPU, charge rate, its CPU).
async fn outbox_round(side: &Side, actions: u64) -> [f64; 6] {
    let gws = std::slice::from_ref(&side.gw);
    let read = drive(gws, side.tokens.clone(), Work::Read, actions).await;
    let charge = drive(gws, side.tokens.clone(), Work::Charge, actions).await;
    let queued = drive(gws, side.tokens.clone(), side.work.clone(), actions).await;
    println!(
        "  {:<20} comment {:>7.0}/s {:>4.0} µs   read {:>7.0}/s {:>4.0} µs   charge {:>7.0}/s {:>4.0} µs",
        side.label,
        queued.rate(),
        queued.cpu_us(),
        read.rate(),
        read.cpu_us(),
        charge.rate(),
        charge.cpu_us()
    );
    [queued.rate(), queued.cpu_us(), read.rate(), read.cpu_us(), charge.rate(), charge.cpu_us()]
}

/// On `side`, with its worker stopped: queues `backlog` commands, then measures the worker
/// draining them, then enqueue-to-delivered latency at `rate` a second.
async fn drain_and_latency(side: Side, rate: u64, backlog: u64) {
    let Side { label, gw, tokens, work, _worker, _dir } = side;
    _worker.stop().await;
    while queued_rows(&gw).await > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drive(std::slice::from_ref(&gw), tokens.clone(), work.clone(), backlog).await;
    let backlog = queued_rows(&gw).await;
    let worker = gw.start_delivery();
    let t0 = Instant::now();
    while queued_rows(&gw).await > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let drained = backlog as f64 / t0.elapsed().as_secs_f64();
    println!(
        "{label:<20} drained {drained:>9.0} commands/s  ({backlog} queued commands delivered to the runtime)"
    );
    let (p50, p99, n) = steady_latency(&gw, &tokens, &work, rate).await;
    println!(
        "{label:<20} {n} commands at {rate}/s: enqueue to delivered p50 {:>6.2} ms   p99 {:>6.2} ms   (target: p99 under 20 ms beside the backlog)",
        ms(p50),
        ms(p99)
    );
    let t = gw.tenants().await.expect("tenants").remove(0);
    let report = gw.check_ledger(&t.id).await.expect("check");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    worker.stop().await;
    gw.store().close().await;
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Rows queued for the callers' tenant (the first), whatever other tenants hold.
async fn queued_rows(gw: &Gateway) -> i64 {
    let (n,): (i64,) = gw
        .store()
        .one(
            "SELECT COUNT(*) FROM outbox WHERE status = 'queued' AND tenant_id = (SELECT MIN(id) FROM tenants WHERE name = 'Load')",
            &[],
        )
        .await
        .expect("count");
    n
}

/// Sends `rate` comments a second for five seconds from the callers' keys, waits until all
/// are delivered, and reads each one's enqueue and delivery times from the outbox.
async fn steady_latency(
    gw: &Gateway,
    tokens: &[String],
    work: &Work,
    rate: u64,
) -> (Duration, Duration, usize) {
    let (mark,): (i64,) =
        gw.store().one("SELECT COALESCE(MAX(seq), 0) FROM outbox", &[]).await.expect("mark");
    let period = Duration::from_secs_f64(1.0 / rate as f64);
    let mut tick = tokio::time::interval(period);
    let mut sent = Vec::new();
    for i in 0..(rate * 5) as usize {
        tick.tick().await;
        let (gw, call) = (gw.clone(), work.call(&tokens[i % tokens.len()], i, i % tokens.len()));
        sent.push(tokio::spawn(async move { gw.perform(call).await.expect("comment") }));
    }
    for s in sent {
        s.await.expect("sender");
    }
    while queued_rows(gw).await > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rows: Vec<(String, String)> = gw
        .store()
        .all("SELECT created_at, delivered_at FROM outbox WHERE seq > ? AND status = 'delivered'", &[&mark])
        .await
        .expect("rows");
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).expect("a timestamp");
    let mut lat: Vec<Duration> =
        rows.iter().map(|(c, d)| (at(d) - at(c)).to_std().unwrap_or_default()).collect();
    lat.sort();
    (pct(&lat, 0.5), pct(&lat, 0.99), lat.len())
}

/// The soak's holds in flight are leased for a second, so a test that kills it sees them
/// recovered soon after.
const SOAK_LEASE_SECS: i64 = 1;

async fn soak(db: &str) {
    let config = GatewayConfig { hold_lease_secs: SOAK_LEASE_SECS, ..Default::default() };
    let gw = Gateway::open_with(db, config).await.expect("open");
    let _sweeper = gw.start_sweeper();
    let kit = r#"{"name":"Soak","primitives":["web","cards"],"limits":{"budget":{"hard_cap":"100000"},"approve":{"above":"40"}}}"#;
    let tokens = Arc::new(setup(&gw, 16, kit).await);
    println!("ready");
    let done = Arc::new(AtomicU64::new(0));
    for c in 0..tokens.len() {
        let (gw, tokens, done) = (gw.clone(), tokens.clone(), done.clone());
        gw.sandbox().set_latency_ms(1);
        tokio::spawn(async move {
            for i in 0u64.. {
                let (action, args) = if i % 3 == 0 {
                    (
                        "cards.charge",
                        json!({"amount": format!("{}.00", (i * 7 + c as u64) % 60 + 1), "merchant": "acme", "memo": format!("order {i}")}),
                    )
                } else {
                    ("web.read", json!({"url": format!("https://x.test/{c}/{i}")}))
                };
                let _ = gw
                    .perform(ActionCall {
                        token: tokens[c].clone(),
                        action: action.into(),
                        args,
                        idempotency_key: None,
                    })
                    .await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        println!("done {}", done.load(Ordering::Relaxed));
    }
}

/// Parks `n` charges for one agent; their approval ids.
async fn park_many(gw: &Gateway, token: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let args = json!({"amount": "50.00", "merchant": "acme", "memo": format!("bulk {i}")});
        let call =
            ActionCall { token: token.into(), action: "cards.charge".into(), args, idempotency_key: None };
        let r = gw.perform(call).await.expect("park");
        assert_eq!(r.disposition, Disposition::Parked);
        let env = r.envelope().expect("a park's envelope");
        match env.recovery.first() {
            Some(policy::RecoveryStep::WaitForApproval { approval_id, .. }) => ids.push(approval_id.clone()),
            other => panic!("a park names its approval first, not {other:?}"),
        }
    }
    ids
}

/// See the module doc: one bulk decision of `items` against as many single approvals.
async fn bulk_bench(items: usize, rounds: usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let gw = Gateway::open(&format!("sqlite://{}/bulk.db", dir.path().display())).await.expect("open");
    let kit = r#"{"name":"Bulk","primitives":["cards"],"limits":{"budget":{"hard_cap":"10000000"},"approve":{"above":"40"}}}"#;
    let token = setup(&gw, 1, kit).await.remove(0);
    let subject = gw.authenticate(&token).await.expect("auth").expect("a key");
    let approver = gw
        .create_user(&subject.tenant, "bulk-approver", "load-password", &[Role::Approver])
        .await
        .expect("user");
    let by = gateway::domain::principal::Human::in_console(&approver);
    let (mut bulk, mut single) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let ids = park_many(&gw, &token, items).await;
        let t = Instant::now();
        let out = gw
            .decide_many(
                &subject.tenant,
                &ids,
                gateway::ops::approvals::BulkDecision::Approve,
                &by,
                Some("bulk"),
            )
            .await
            .expect("bulk");
        bulk.push(t.elapsed().as_secs_f64());
        assert!(out.iter().all(|o| o.ok && o.outcome == "executed"), "every item ran");
        let ids = park_many(&gw, &token, items).await;
        let t = Instant::now();
        for id in &ids {
            gw.approve(&subject.tenant, id, &by, Some("one")).await.expect("approve");
        }
        single.push(t.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (b, s) = (median(&mut bulk), median(&mut single));
    println!("bulk approval of {items} parked charges, median of {rounds} rounds (SQLite, one process):");
    println!("  one decide_many        {:>8.1} ms  (target < 2000 ms)", b * 1000.0);
    println!("  {items} single approves   {:>8.1} ms", s * 1000.0);
    println!("  ratio (bulk / single)  {:>8.2}", b / s);
}

/// See the module doc: bulk rows written straight into a fresh demo database.
async fn seed_console(path: &str, approvals: u64, entries: u64, every: u64) {
    let url = format!("sqlite://{path}");
    let gw = Gateway::open(&url).await.expect("open");
    let password = "console-bench-password";
    let creds = gw
        .seed_demo_if_empty(&gateway::ops::demo::DemoOptions {
            admin_password: Some(password.into()),
            company_key: None,
        })
        .await
        .expect("demo")
        .expect("a fresh database");
    let profile = gw
        .profiles(&creds.tenant)
        .await
        .expect("profiles")
        .into_iter()
        .find(|p| p.name == "procurement-bot")
        .expect("the demo's procurement-bot");
    let (tenant, pid) = (creds.tenant.as_str().to_string(), profile.id.as_str().to_string());
    // The index database is derived: close the gateway and drop it, so the history below is
    // indexed from scratch when the gateway reopens (after the demo's entries are re-dated).
    gw.store().close().await;
    drop(gw);
    for suffix in ["-index", "-index-wal", "-index-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    let started = Instant::now();
    gateway::store::seeding::sqlite_batch(path, |tx| {
        seed_history(tx, (&tenant, &pid), approvals, entries, every)
    })
    .expect("seed the history");
    let gw = Gateway::open(&url).await.expect("reopen");
    gw.index_recent().await.expect("index");
    gw.store().close().await;
    drop(gw);
    // Fold the seeding's write-ahead logs into the databases, so a server started on them does
    // not spend its first seconds checkpointing hundreds of megabytes under the benchmark.
    gateway::store::seeding::sqlite_checkpoint(path).expect("checkpoint");
    println!(
        "seeded {approvals} approvals and {} ledger entries in {:.1?}",
        entries / 2 * 2,
        started.elapsed()
    );
    println!("admin password: {password}");
    println!("profile: {pid}");
}

/// The history [`seed_console`] writes: `approvals` decided approvals (one in a hundred still
/// pending) and `entries` ledger entries of posted charges, spread over sixty days, all in
/// one transaction.
fn seed_history(
    tx: &dyn Tx,
    (tenant, pid): (&str, &str),
    approvals: u64,
    entries: u64,
    every: u64,
) -> gateway::store::Result<()> {
    let now = chrono::Utc::now();
    let span = chrono::Duration::days(60).num_seconds();
    let at = |i: u64, n: u64| {
        (now - chrono::Duration::seconds(span - (span * i as i64) / n.max(1) as i64)).to_rfc3339()
    };
    // The demo's own few entries were written just now; date them before the seeded history,
    // so that time grows with seq as it does in a live gateway (the ledger's period reads rely
    // on it for speed, not for correctness).
    let before = (now - chrono::Duration::seconds(span + 86_400)).to_rfc3339();
    tx.exec("UPDATE ledger_entries SET created_at = ? WHERE tenant_id = ?", &[&before, &tenant])?;
    for i in 0..approvals {
        let requested = at(i, approvals);
        let waiting = i % every == every - 1;
        let (status, expires, by, reason) = match i % 100 {
            _ if waiting => ("pending", (now + chrono::Duration::days(1)).to_rfc3339(), None, None),
            n if n % 3 == 0 => ("denied", requested.clone(), Some("approver"), Some("not this supplier")),
            n if n % 3 == 1 => ("approved", requested.clone(), Some("approver"), None),
            _ => ("expired", requested.clone(), None, None),
        };
        let args =
            format!(r#"{{"amount":"{}.00","merchant":"globex-parts","memo":"seed {i}"}}"#, 30 + i % 50);
        let (id, units, decided) =
            (format!("apr_seed{i:09}"), (30 + (i % 50) as i64) * 10_000, by.map(|_| &requested));
        tx.exec(
            "INSERT INTO approvals (id, tenant_id, profile_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, \
             status, requested_at, expires_at, decided_by, decided_at, decision_reason) \
             VALUES (?, ?, ?, 'cards.charge', ?, 'seed', ?, 'Procurement', 1, 'above_approval_threshold', ?, ?, ?, ?, ?, ?)",
            &[&id, &tenant, &pid, &args, &units, &status, &requested, &expires, &by, &decided, &reason],
        )?;
        // Every other waiting approval needs two people and has one of them (issue #34).
        if waiting && (i / every) % 2 == 1 {
            tx.exec("UPDATE approvals SET required = 2, need_role = 'finance' WHERE id = ?", &[&id])?;
            tx.exec(
                "INSERT INTO approval_votes (approval_id, user_id, username, credential, at, note, named) \
                 VALUES (?, 'usr_seed', 'approver', 'console session', ?, NULL, 0)",
                &[&id, &requested],
            )?;
        }
    }
    let charges = entries / 2;
    let mut posted: i64 = 0;
    for i in 0..charges {
        let (id, units, when) = (format!("hld_seed{i:09}"), 100 + (i % 900) as i64, at(i, charges));
        tx.exec(
            "INSERT INTO holds (id, tenant_id, profile_id, chain, action, amount_units, credit_units, kit_version, status, posted_units, created_at, ended_at) \
             VALUES (?, ?, ?, ?, 'cards.charge', ?, 0, 1, 'posted', ?, ?, ?)",
            &[&id, &tenant, &pid, &pid, &units, &units, &when, &when],
        )?;
        let entry = "INSERT INTO ledger_entries (tenant_id, account_id, hold_id, action, kit_version, kind, pending_delta, posted_delta, created_at) \
                     VALUES (?, ?, ?, 'cards.charge', 1, ?, ?, ?, ?)";
        tx.exec(entry, &[&tenant, &pid, &id, &"hold", &units, &0i64, &when])?;
        tx.exec(entry, &[&tenant, &pid, &id, &"post", &-units, &units, &when])?;
        posted += units;
    }
    tx.exec(
        "UPDATE budget_accounts SET posted_units = posted_units + ? WHERE profile_id = ?",
        &[&posted, &pid],
    )?;
    Ok(())
}

/// The rows `gateway-load bench` measures, in order: SQLite (with a kit of period and rate
/// limits beside the lifetime one, for one tenant), PostgreSQL, and the upstream charges.
fn bench_runs(
    engines: &str,
    tenants: usize,
    batch: usize,
    upstream: &str,
) -> Vec<(&'static str, (Target, Work))> {
    let mut runs = Vec::new();
    let group = Target::Sqlite { max_batch: batch };
    if engines.contains("sqlite") {
        runs.push(("SQLite, group commit", (group, Work::Read)));
        if tenants == 1 {
            runs.push(("SQLite, group commit, 3 periods + rate", (group, Work::ReadUnderPeriods)));
        }
        runs.push(("SQLite, one txn per job", (Target::Sqlite { max_batch: 1 }, Work::Read)));
    }
    if engines.contains("postgres") {
        runs.push(("PostgreSQL, one instance", (Target::Postgres { instances: 1 }, Work::Read)));
        if tenants == 1 {
            let periods = (Target::Postgres { instances: 1 }, Work::ReadUnderPeriods);
            runs.push(("PostgreSQL, one instance, 3 periods + rate", periods));
        }
        runs.push(("PostgreSQL, two instances", (Target::Postgres { instances: 2 }, Work::Read)));
    }
    if !upstream.is_empty() {
        let secret = arg("--upstream-secret", "");
        runs.push(("SQLite, charge, sandbox", (group, Work::Charge)));
        runs.push((
            "SQLite, charge, http upstream",
            (group, Work::ChargeOverHttp { base: upstream.to_string(), secret }),
        ));
    }
    runs
}

/// `gateway-load bench`: the runs on the engines asked for, then the side-by-side comparisons.
async fn bench_command() {
    let callers: usize = arg("--callers", "64").parse().expect("--callers is a number");
    let actions: u64 = arg("--actions", "20000").parse().expect("--actions is a number");
    let batch: usize = arg("--max-batch", "256").parse().expect("--max-batch is a number");
    let engines = arg("--engines", "sqlite");
    let tenants: usize = arg("--tenants", "1").parse().expect("--tenants is a number");
    println!(
        "governed actions through the service layer: {callers} callers in {tenants} tenant(s), {actions} actions"
    );
    let upstream = arg("--upstream", "");
    let runs = bench_runs(&engines, tenants, batch, &upstream);
    // The cluster scripts/pg.sh starts (or NAIVE_TEST_POSTGRES_URL names) runs on
    // this machine's cores beside the gateway.
    let cluster = engines.contains("postgres").then(gateway::testing::Cluster::get);
    for (label, target) in runs {
        bench(callers, tenants, actions, target, cluster.as_ref()).await.report(label, "actions/s");
    }
    if !upstream.is_empty() {
        egress_compare(callers, actions, &upstream, &arg("--upstream-secret", "")).await;
    }
    if engines.contains("sqlite") {
        shadow_compare(callers, actions).await;
    }
    let receiver = arg("--stream-receiver", "");
    if !receiver.is_empty() {
        streams_load::compare(callers, actions, &receiver).await;
    }
    let otlp = arg("--otlp", "");
    if !otlp.is_empty() {
        #[cfg(feature = "load-tracing")]
        telemetry::compare(callers, actions, &otlp).await;
        #[cfg(not(feature = "load-tracing"))]
        panic!("--otlp needs gateway-load built with --features load-tracing");
    }
}

#[tokio::main]
async fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("bench") => bench_command().await,
        Some("outbox") => {
            let callers: usize = arg("--callers", "64").parse().expect("--callers is a number");
            let commands: u64 = arg("--commands", "20000").parse().expect("--commands is a number");
            let rate: u64 = arg("--rate", "1000").parse().expect("--rate is a number");
            let backlog: usize = arg("--backlog", "100000").parse().expect("--backlog is a number");
            let (bases, secret) = (arg("--runtime", ""), arg("--runtime-secret", ""));
            let runtimes = bases.split_once(',').map(|(a, b)| (a.to_string(), b.to_string())).expect(
                "--runtime URL1,URL2: two fresh `server team-runtime --seed-tasks 64`, one per database",
            );
            println!(
                "the outbox: {callers} callers, {commands} commands, beside {backlog} blocked rows and without, then {rate}/s for five seconds"
            );
            outbox_bench(callers, commands, runtimes, secret, rate, backlog).await;
        }
        Some("soak") => soak(&arg("--db", "sqlite://data/soak.db")).await,
        Some("bulk") => {
            let items: usize = arg("--items", "100").parse().expect("--items is a number");
            let rounds: usize = arg("--rounds", "3").parse().expect("--rounds is a number");
            bulk_bench(items, rounds).await;
        }
        Some("replay") => {
            let calls: u64 = arg("--calls", "1000000").parse().expect("--calls is a number");
            let profiles: Vec<usize> = arg("--profiles", "100,10000")
                .split(',')
                .map(|n| n.parse().expect("--profiles is a list of numbers"))
                .collect();
            replay_load::run(calls, &profiles).await;
        }
        Some("archive") => {
            let per_day: u64 = arg("--per-day", "50000").parse().expect("--per-day is a number");
            let days: u32 = arg("--days", "40").parse().expect("--days is a number");
            let retention: u32 = arg("--retention", "7").parse().expect("--retention is a number");
            archive_load::run(per_day, days, retention).await;
        }
        Some("streams") => {
            let entries: u64 = arg("--entries", "1000000").parse().expect("--entries is a number");
            let batch: i64 = arg("--batch", "500").parse().expect("--batch is a number");
            streams_load::run(&arg("--receiver", "http://127.0.0.1:8088"), entries, batch).await;
        }
        Some("seed-console") => {
            let approvals: u64 = arg("--approvals", "100000").parse().expect("--approvals is a number");
            let entries: u64 = arg("--ledger", "1000000").parse().expect("--ledger is a number");
            let every: u64 = arg("--waiting-every", "100").parse().expect("--waiting-every is a number");
            seed_console(&arg("--db", "data/console-bench.db"), approvals, entries, every.max(1)).await;
        }
        _ => {
            eprintln!(
                "usage: gateway-load bench [--callers N] [--actions N] [--max-batch N] [--engines sqlite,postgres] [--tenants N] [--upstream URL --upstream-secret S] [--stream-receiver URL] | outbox --runtime URL --runtime-secret S [--callers N] [--commands N] [--rate N] | bulk [--items N] [--rounds N] | replay [--calls N] [--profiles N,N] | archive [--per-day N] [--days N] [--retention N] | streams --receiver URL [--entries N] [--batch N] | soak --db URL | seed-console --db PATH [--approvals N] [--ledger N]"
            );
            std::process::exit(2);
        }
    }
}
