//! What an operator's Prometheus scrapes: the counters and histograms the gateway moves as it
//! works, and the gauges read from the database at scrape time ([`crate::ops::health`]).
//!
//! Guarantees:
//! - Every label value comes from a closed set written in the code (a transport, a catalog
//!   action, a verdict, a refusal reason, a connector kind, an outbox channel, an age bucket):
//!   never an id, a name, a URL or anything a caller sent. [`reason_label`] and
//!   [`action_label`] are the two doors a runtime string passes through: an action is its
//!   own label only when the catalog declares it, a reason only when it has the shape of a
//!   code (reasons are written in the code); anything else is `other`.
//! - Off ([`Metrics::off`]), recording is a branch on a `None`: nothing is counted, and the
//!   scrape answers an empty exposition.
//! - Counters are per instance, as Prometheus expects: several instances are summed by the
//!   query, never by the gateway.

use std::borrow::Cow;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::audit::activity::Transport;

/// One governed call's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub transport: &'static str,
    pub action: Cow<'static, str>,
    pub verdict: &'static str,
    pub reason: Cow<'static, str>,
}

/// A label set of one closed value.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct One {
    pub kind: &'static str,
}

/// The transport a call came by.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Via {
    pub transport: &'static str,
}

/// An outbox channel (`runtime`, `webhook`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Channel {
    pub channel: &'static str,
}

/// An age bucket of waiting approvals.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Age {
    pub age: &'static str,
}

/// A connection state of the PostgreSQL pool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolState {
    pub state: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency() -> Histogram {
    // 100 µs to about 6.5 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

fn slow_latency() -> Histogram {
    // 1 ms to about 65 s: connectors and deliveries reach other machines.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The families one gateway records into, all registered under `naive_`.
#[derive(Debug)]
pub struct Families {
    pub calls: Family<CallLabels, Counter>,
    pub call_seconds: Histograms<Via>,
    pub decision_seconds: Histogram,
    pub approvals_decided: Family<One, Counter>,
    pub expiries: Family<One, Counter>,
    pub delivery_attempts: Family<Channel, Counter>,
    pub delivery_failures: Family<Channel, Counter>,
    pub dead_letters: Family<Channel, Counter>,
    pub connector_seconds: Histograms<One>,
    pub connector_errors: Family<One, Counter>,
    pub sse_subscribers: Gauge,
    pub mcp_sessions: Gauge,
    pub writer_batch_jobs: Histogram,
    pub writer_commit_seconds: Histogram,
    pub pg_job_retries: Counter,
    pub pg_batches: Counter,
    pub pg_batch_jobs: Counter,
    pub pg_tenant_lock_held_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    pub pg_pool: Family<PoolState, Gauge>,
    pub sign_in_failures: Family<One, Counter>,
    pub holds_pending: Gauge,
    pub holds_pending_cents: Gauge,
    pub budgets_near_cap: Gauge,
    pub approvals_waiting: Family<Age, Gauge>,
    pub approval_oldest_seconds: Gauge,
    pub outbox_depth: Family<Channel, Gauge>,
    pub outbox_oldest_seconds: Family<Channel, Gauge>,
    pub ready: Gauge,
    pub archive_ranges: Family<One, Counter>,
    pub log_entries_deleted: Counter,
    pub ledger_entries_deleted: Counter,
    pub archive_oldest_unarchived_seconds: Gauge,
    pub stream_entries_sent: Counter,
    pub stream_batches: Family<One, Counter>,
    pub stream_lag_entries: Gauge,
    pub stream_lag_seconds: Gauge,
    pub streams_failing: Gauge,
    pub stream_dead_letters: Gauge,
}

/// A gauge set from what its reader answers at each scrape (`None` keeps the last value).
type Sampler = (Gauge, Box<dyn Fn() -> Option<i64> + Send + Sync>);

/// What is on: the families, their registry, and the gauges sampled at scrape time from
/// state the server holds (event streams, MCP sessions).
struct On {
    families: Families,
    registry: Registry,
    samplers: std::sync::Mutex<Vec<Sampler>>,
}

/// The gateway's metrics, or none when they are off.
pub struct Metrics(Option<Box<On>>);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Metrics").field(&self.0.is_some()).finish()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::on()
    }
}

impl Metrics {
    /// Metrics that record nothing.
    pub fn off() -> Metrics {
        Metrics(None)
    }

    /// Metrics that record, registered under `naive_`.
    pub fn on() -> Metrics {
        let mut registry = Registry::with_prefix("naive");
        let families = register(&mut registry);
        Metrics(Some(Box::new(On { families, registry, samplers: Default::default() })))
    }

    /// The families, when on.
    pub fn get(&self) -> Option<&Families> {
        self.0.as_deref().map(|on| &on.families)
    }

    /// Sets the gauge `pick` chooses from `read` at every scrape.
    pub fn sample(
        &self,
        pick: fn(&Families) -> &Gauge,
        read: impl Fn() -> Option<i64> + Send + Sync + 'static,
    ) {
        if let Some(on) = self.0.as_deref() {
            let gauge = pick(&on.families).clone();
            on.samplers.lock().expect("samplers lock").push((gauge, Box::new(read)));
        }
    }

    /// The text exposition of everything registered, the sampled gauges read now (empty
    /// when off).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Some(on) = self.0.as_deref() {
            for (gauge, read) in on.samplers.lock().expect("samplers lock").iter() {
                if let Some(v) = read() {
                    gauge.set(v);
                }
            }
            prometheus_client::encoding::text::encode(&mut out, &on.registry)
                .expect("writing to a String cannot fail");
        }
        out
    }

    /// One governed call that ended with `verdict` (and `reason` when refused or parked);
    /// `action` is its [`action_label`].
    pub fn call(
        &self,
        via: Transport,
        action: Cow<'static, str>,
        verdict: &'static str,
        reason: &str,
        took: Duration,
    ) {
        let Some(f) = self.get() else { return };
        let labels = CallLabels { transport: via.as_str(), action, verdict, reason: reason_label(reason) };
        f.calls.get_or_create(&labels).inc();
        f.call_seconds.get_or_create(&Via { transport: via.as_str() }).observe(took.as_secs_f64());
    }

    /// Runs `f` on the families when on (`f` records; what it answers is dropped).
    pub fn with<R>(&self, f: impl FnOnce(&Families) -> R) {
        if let Some(families) = self.get() {
            f(families);
        }
    }

    /// A connector call of `kind` that took `took`, failed or not.
    pub fn connector(&self, kind: &'static str, took: Duration, failed: bool) {
        self.with(|f| {
            f.connector_seconds.get_or_create(&One { kind }).observe(took.as_secs_f64());
            if failed {
                f.connector_errors.get_or_create(&One { kind }).inc();
            }
        });
    }

    /// One SQLite group commit of `jobs` jobs whose COMMIT took `took`.
    pub fn writer_batch(&self, jobs: usize, took: Duration) {
        self.with(|f| {
            f.writer_batch_jobs.observe(jobs as f64);
            f.writer_commit_seconds.observe(took.as_secs_f64());
        });
    }
}

/// An action's name as a label: the catalog's own name when `catalog` declares it, otherwise
/// `other`. What a caller put in a URL is never a label value, so no caller can add a series.
pub fn action_label(catalog: &policy::Catalog, action: &str) -> Cow<'static, str> {
    match catalog.get(action) {
        Some(_) => Cow::Owned(action.to_string()),
        None => Cow::Borrowed("other"),
    }
}

/// A refusal reason as a label: a code in lowercase letters and underscores, `none` when
/// empty, otherwise `other`.
pub fn reason_label(reason: &str) -> Cow<'static, str> {
    if reason.is_empty() {
        return Cow::Borrowed("none");
    }
    let code = reason.len() <= 48 && reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if code { Cow::Owned(reason.to_string()) } else { Cow::Borrowed("other") }
}

fn register(r: &mut Registry) -> Families {
    let f = Families {
        calls: Family::default(),
        call_seconds: Family::new_with_constructor(latency),
        decision_seconds: latency(),
        approvals_decided: Family::default(),
        expiries: Family::default(),
        delivery_attempts: Family::default(),
        delivery_failures: Family::default(),
        dead_letters: Family::default(),
        connector_seconds: Family::new_with_constructor(slow_latency),
        connector_errors: Family::default(),
        sse_subscribers: Gauge::default(),
        mcp_sessions: Gauge::default(),
        writer_batch_jobs: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
        writer_commit_seconds: latency(),
        pg_job_retries: Counter::default(),
        pg_batches: Counter::default(),
        pg_batch_jobs: Counter::default(),
        pg_tenant_lock_held_seconds: Counter::default(),
        pg_pool: Family::default(),
        sign_in_failures: Family::default(),
        holds_pending: Gauge::default(),
        holds_pending_cents: Gauge::default(),
        budgets_near_cap: Gauge::default(),
        approvals_waiting: Family::default(),
        approval_oldest_seconds: Gauge::default(),
        outbox_depth: Family::default(),
        outbox_oldest_seconds: Family::default(),
        ready: Gauge::default(),
        archive_ranges: Family::default(),
        log_entries_deleted: Counter::default(),
        ledger_entries_deleted: Counter::default(),
        archive_oldest_unarchived_seconds: Gauge::default(),
        stream_entries_sent: Counter::default(),
        stream_batches: Family::default(),
        stream_lag_entries: Gauge::default(),
        stream_lag_seconds: Gauge::default(),
        streams_failing: Gauge::default(),
        stream_dead_letters: Gauge::default(),
    };
    register_events(r, &f);
    register_state(r, &f);
    zeroed(&f);
    f
}

/// Every series of a closed label set starts at zero, so a rate over it is defined from the
/// first scrape and a dashboard shows 0 rather than nothing.
fn zeroed(f: &Families) {
    for kind in ["approved", "denied", "refused_at_approval", "voted"] {
        drop(f.approvals_decided.get_or_create(&One { kind }));
    }
    for kind in ["approval", "hold"] {
        drop(f.expiries.get_or_create(&One { kind }));
    }
    for kind in ["password", "rate_limited"] {
        drop(f.sign_in_failures.get_or_create(&One { kind }));
    }
    for kind in ["written", "failed"] {
        drop(f.archive_ranges.get_or_create(&One { kind }));
    }
    for kind in ["delivered", "partly_rejected", "too_large", "failed"] {
        drop(f.stream_batches.get_or_create(&One { kind }));
    }
    for kind in ["http", "mcp", "runtime"] {
        drop(f.connector_seconds.get_or_create(&One { kind }));
        drop(f.connector_errors.get_or_create(&One { kind }));
    }
    for channel in ["runtime", "webhook"] {
        let ch = Channel { channel };
        drop(f.delivery_attempts.get_or_create(&ch));
        drop(f.delivery_failures.get_or_create(&ch));
        drop(f.dead_letters.get_or_create(&ch));
    }
    for transport in ["http", "mcp", "console"] {
        drop(f.call_seconds.get_or_create(&Via { transport }));
    }
    for state in ["idle", "used", "max"] {
        drop(f.pg_pool.get_or_create(&PoolState { state }));
    }
}

/// What moves as the gateway works.
fn register_events(r: &mut Registry, f: &Families) {
    let s = Unit::Seconds;
    r.register("governed_calls", "Governed calls by transport, action, verdict and reason", f.calls.clone());
    r.register_with_unit(
        "call",
        "A governed call from authentication to its answer",
        s.clone(),
        f.call_seconds.clone(),
    );
    r.register_with_unit(
        "decision",
        "The job that decides and reserves a call",
        s.clone(),
        f.decision_seconds.clone(),
    );
    r.register(
        "approvals_decided",
        "Approvals decided by a human (kind: approved, denied)",
        f.approvals_decided.clone(),
    );
    r.register("expiries", "Approvals and holds that lapsed (kind: approval, hold)", f.expiries.clone());
    r.register("outbox_delivery_attempts", "Outbox rows sent, by channel", f.delivery_attempts.clone());
    r.register(
        "outbox_delivery_failures",
        "Outbox rows whose delivery failed, by channel",
        f.delivery_failures.clone(),
    );
    r.register(
        "outbox_dead_letters",
        "Outbox rows that ran out of attempts, by channel",
        f.dead_letters.clone(),
    );
    r.register_with_unit("connector", "Connector calls by kind", s.clone(), f.connector_seconds.clone());
    r.register("connector_errors", "Connector calls that failed, by kind", f.connector_errors.clone());
    r.register(
        "sign_in_failures",
        "Console sign-ins refused (kind: password, rate_limited)",
        f.sign_in_failures.clone(),
    );
    r.register("writer_batch_jobs", "Jobs per SQLite group commit", f.writer_batch_jobs.clone());
    r.register_with_unit("writer_commit", "SQLite COMMIT of a group", s, f.writer_commit_seconds.clone());
    r.register(
        "pg_job_retries",
        "PostgreSQL batches run again after a serialization failure",
        f.pg_job_retries.clone(),
    );
    register_batches(r, f);
    register_record(r, f);
}

/// PostgreSQL's batches: how many, how many jobs they carried, and how long a tenant's lock
/// was held (from taking it to COMMIT): held seconds over batched jobs is the serial part of
/// one tenant's call, the batch's jobs over batches its size.
fn register_batches(r: &mut Registry, f: &Families) {
    r.register("pg_batches", "PostgreSQL batches committed (one transaction each)", f.pg_batches.clone());
    r.register(
        "pg_batch_jobs",
        "Jobs of PostgreSQL batches that held a tenant's lock, answered from a commit",
        f.pg_batch_jobs.clone(),
    );
    r.register_with_unit(
        "pg_tenant_lock_held",
        "Time PostgreSQL batches held their tenants' locks, from taking them to COMMIT",
        Unit::Seconds,
        f.pg_tenant_lock_held_seconds.clone(),
    );
}

/// What the archive, retention and log streams do with the record.
fn register_record(r: &mut Registry, f: &Families) {
    r.register(
        "archive_ranges",
        "Ranges of the log this instance archived (kind: written), or failed to (kind: failed)",
        f.archive_ranges.clone(),
    );
    r.register(
        "log_entries_deleted",
        "Archived log entries deleted under a tenant's retention",
        f.log_entries_deleted.clone(),
    );
    r.register(
        "ledger_entries_deleted",
        "Ledger entries of ended holds deleted under a tenant's retention, their sums carried",
        f.ledger_entries_deleted.clone(),
    );
    r.register(
        "stream_entries_sent",
        "Log entries log streams sent and their receivers acknowledged",
        f.stream_entries_sent.clone(),
    );
    r.register(
        "stream_batches",
        "Log stream batches sent (kind: delivered, partly_rejected by an OTLP collector, too_large for a 413, failed)",
        f.stream_batches.clone(),
    );
}

/// What is true now: read when scraped, or held open by a connection.
fn register_state(r: &mut Registry, f: &Families) {
    r.register("sse_subscribers", "Event streams open", f.sse_subscribers.clone());
    r.register("mcp_sessions", "MCP sessions open", f.mcp_sessions.clone());
    r.register("pg_pool_connections", "PostgreSQL read pool (state: idle, used, max)", f.pg_pool.clone());
    r.register("holds_pending", "Holds in flight or parked", f.holds_pending.clone());
    r.register("holds_pending_cents", "Money held by pending holds, in cents", f.holds_pending_cents.clone());
    r.register(
        "budgets_near_cap",
        "Budgets whose spent and held money is at least 90% of their hard cap",
        f.budgets_near_cap.clone(),
    );
    r.register("approvals_waiting", "Approvals waiting, by age", f.approvals_waiting.clone());
    r.register_with_unit(
        "approval_oldest_wait",
        "How long the oldest waiting approval has waited",
        Unit::Seconds,
        f.approval_oldest_seconds.clone(),
    );
    r.register("outbox_depth", "Outbox rows queued, by channel", f.outbox_depth.clone());
    r.register_with_unit(
        "outbox_oldest",
        "Age of the oldest queued outbox row, by channel",
        Unit::Seconds,
        f.outbox_oldest_seconds.clone(),
    );
    r.register("ready", "1 when this instance's last readiness check passed", f.ready.clone());
    r.register_with_unit(
        "archive_oldest_unarchived",
        "Age of the oldest log entry not yet archived, over every tenant (0 without an archive)",
        Unit::Seconds,
        f.archive_oldest_unarchived_seconds.clone(),
    );
    r.register(
        "stream_lag_entries",
        "Entries the log stream furthest behind has not sent",
        f.stream_lag_entries.clone(),
    );
    r.register_with_unit(
        "stream_lag",
        "How long the oldest entry a log stream has not sent has waited, over every stream",
        Unit::Seconds,
        f.stream_lag_seconds.clone(),
    );
    r.register(
        "streams_failing",
        "Log streams waiting to try a failed batch again",
        f.streams_failing.clone(),
    );
    r.register(
        "stream_dead_letters",
        "Log entries streams skipped because their receivers refused them for good (a single entry too large), kept to send again",
        f.stream_dead_letters.clone(),
    );
}
