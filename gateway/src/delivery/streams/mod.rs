//! Log streams (docs/streams.md): a tenant's activity log sent, as it grows, to the receiver
//! its admin names (a SIEM's collector): newline-delimited JSON, Splunk HTTP Event Collector
//! events or an OTLP/HTTP logs export, each event the entry itself or its OCSF event; signed
//! the Standard Webhooks way or carrying the receiver's own token.
//!
//! A stream is a cursor over the log, not a copy of it: `acked_seq` is the newest entry the
//! receiver acknowledged, and what follows it is the stream's backlog. A governed call's
//! transaction writes nothing for a stream; the log itself is the queue.
//!
//! Guarantees:
//! - At least once, in the tenant's order: the cursor moves only after the receiver answered
//!   2xx to a batch, and only from where the batch started, by the delivery worker that holds
//!   the stream's lease ([`acked`] is a compare-and-set); a worker that lost its lease records
//!   nothing, and the next one sends the batch again.
//! - A failing stream backs off (the outbox's backoff) and keeps its place for as long as it
//!   fails: nothing is dropped, and its lag says how far behind it is. A receiver that answers
//!   413 gets smaller batches; a single entry it refuses as too large is kept as the stream's
//!   dead letter ([`dead_letter`], recorded in the log) and the stream goes on past it.
//! - Retention deletes no entry a stream has not sent ([`streamed_through`]).
//! - The table `log_streams` is written only here. The signing secret (or the receiver's token)
//!   is kept in the vault as `stream-<id>`; a secret the gateway made is shown once, a token
//!   the admin gave never again.

pub mod ocsf;
pub(crate) mod otlp;
pub(crate) mod send;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Entry, Kind, NewEntry, Transport, Verdict};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::{FromRow, Row, Tx};
use crate::store::Store;
use crate::stored;

/// The most streams a tenant may have.
pub const MAX_STREAMS: usize = 5;
/// The entries in a batch unless the admin says otherwise.
pub const DEFAULT_BATCH: i64 = 500;
/// The most entries a batch may hold.
pub const MAX_BATCH: i64 = 5_000;
/// How far a stream's lag is counted; beyond it the figure reads this.
pub const LAG_COUNTED: i64 = 1_000_000;

/// How a stream's receiver wants its batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// `POST` of newline-delimited JSON (`application/x-ndjson`), one entry per line, signed
    /// the Standard Webhooks way.
    #[default]
    Ndjson,
    /// Splunk's HTTP Event Collector (`…/services/collector/event`): one HEC event per entry,
    /// batched, with `Authorization: Splunk <token>`; the token is required.
    SplunkHec,
    /// OTLP/HTTP logs (`…/v1/logs`): an `ExportLogsServiceRequest` in protobuf, one log record
    /// per entry.
    Otlp,
}

impl StreamKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            StreamKind::Ndjson => "ndjson",
            StreamKind::SplunkHec => "splunk_hec",
            StreamKind::Otlp => "otlp",
        }
    }
    /// The kind `s` names, or None.
    pub fn parse(s: &str) -> Option<StreamKind> {
        [StreamKind::Ndjson, StreamKind::SplunkHec, StreamKind::Otlp].into_iter().find(|k| k.as_str() == s)
    }
}

/// The shape of each event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StreamFormat {
    /// The log entry exactly as `/v1/logs` shows it, with its `prev_hash` and `hash`, so the
    /// receiver can verify the chain.
    #[default]
    Entry,
    /// The entry as an OCSF 1.5.0 event (docs/streams.md#ocsf), the entry itself in its
    /// `unmapped` object.
    Ocsf,
}

impl StreamFormat {
    pub const fn as_str(self) -> &'static str {
        match self {
            StreamFormat::Entry => "entry",
            StreamFormat::Ocsf => "ocsf",
        }
    }
    /// The format `s` names, or None.
    pub fn parse(s: &str) -> Option<StreamFormat> {
        [StreamFormat::Entry, StreamFormat::Ocsf].into_iter().find(|f| f.as_str() == s)
    }
}

/// How a stream's batches prove where they came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StreamAuth {
    /// Signed the Standard Webhooks way with a `whsec_` secret the gateway made.
    #[default]
    Signed,
    /// The receiver's own token, given by the admin: `Authorization: Splunk <token>` for Splunk
    /// HEC, `Authorization: Bearer <token>` otherwise.
    Token,
}

impl StreamAuth {
    pub const fn as_str(self) -> &'static str {
        match self {
            StreamAuth::Signed => "signed",
            StreamAuth::Token => "token",
        }
    }
    fn parse(s: &str) -> Option<StreamAuth> {
        [StreamAuth::Signed, StreamAuth::Token].into_iter().find(|a| a.as_str() == s)
    }
}

/// The longest token a stream keeps.
const MAX_TOKEN: usize = 4_096;

/// Where a new stream starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StreamStart {
    /// With the stream's own `stream_added` entry: nothing older is sent.
    #[default]
    Now,
    /// With the oldest entry the database still holds (older ones are in the archive).
    Beginning,
}

/// What an admin adds.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// Where to POST the batches, `http://` or `https://`.
    pub url: String,
    #[serde(default)]
    pub kind: StreamKind,
    #[serde(default)]
    pub format: StreamFormat,
    #[serde(default)]
    pub start: StreamStart,
    /// The most entries in one batch; 500 unless given. A receiver that answers 413 gets
    /// smaller ones.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 5000))]
    pub max_entries: Option<i64>,
    /// The receiver's token (required for `splunk_hec`): kept in the vault and sent as
    /// `Authorization: Splunk <token>` (HEC) or `Bearer <token>`. Without it the gateway makes
    /// a signing secret and signs each batch the Standard Webhooks way.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 4096))]
    pub token: Option<String>,
}

impl StreamSpec {
    /// How the stream's batches will prove where they came from.
    pub fn auth(&self) -> StreamAuth {
        if self.token.is_some() { StreamAuth::Token } else { StreamAuth::Signed }
    }
}

/// How a stream is doing.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamHealth {
    /// `caught_up`, `streaming` (sending its backlog) or `failing` (waiting to try again).
    pub state: String,
    /// The cursor: the newest entry the receiver acknowledged.
    pub acked_seq: i64,
    /// When the receiver last acknowledged a batch.
    pub acked_at: Option<DateTime<Utc>>,
    /// Entries sent and acknowledged since the stream was added.
    pub sent: i64,
    /// Entries after the cursor (counted up to 1,000,000).
    pub lag_entries: i64,
    /// How long the oldest entry after the cursor has waited; 0 when caught up.
    pub lag_seconds: i64,
    /// The entries the next batch holds at most (smaller than `max_entries` after a 413).
    pub batch_entries: i64,
    /// Failed attempts at the batch after the cursor, in a row.
    pub attempts: i64,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// When a failing stream tries again.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Entries the receiver refused for good, skipped and kept to send again.
    pub dead_letters: i64,
}

/// An entry a stream's receiver refused for good.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeadLetter {
    /// The entry's `seq`.
    pub seq: i64,
    /// Why (`stream_entry_too_large`).
    pub code: String,
    pub at: DateTime<Utc>,
}

/// A tenant's stream. Its secret's value is never shown again.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stream {
    pub id: String,
    pub kind: StreamKind,
    pub format: StreamFormat,
    pub auth: StreamAuth,
    pub url: String,
    pub max_entries: i64,
    /// The vault secret its signing key (or the receiver's token) is kept under.
    pub secret_name: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub health: StreamHealth,
}

/// A new stream and its signing secret, shown this once.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedStream {
    pub stream: Stream,
    /// `whsec_…`: verify the batches' signatures with it. It is not shown again: a replay of
    /// the same Idempotency-Key answers null here and `secret_withheld: true`. Null for a
    /// stream that carries the receiver's token.
    pub secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_withheld: Option<bool>,
}

/// A stream row, as the worker and the listings read it.
#[derive(Clone, Debug)]
pub struct StreamRow {
    pub id: String,
    pub tenant: TenantId,
    pub kind: StreamKind,
    pub format: StreamFormat,
    pub auth: StreamAuth,
    pub url: String,
    pub secret_name: String,
    pub max_entries: i64,
    pub batch_entries: i64,
    pub acked_seq: i64,
    pub acked_at: Option<DateTime<Utc>>,
    pub sent: i64,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    pub due_at: DateTime<Utc>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, tenant_id, kind, format, url, secret_name, max_entries, batch_entries, acked_seq, \
     acked_at, sent, attempts, last_error, last_error_at, due_at, created_by, created_at, auth";

/// A row of [`COLUMNS`].
impl FromRow for StreamRow {
    fn from_row(r: &Row) -> ::store::Result<StreamRow> {
        Ok(StreamRow {
            id: r.get(0)?,
            tenant: TenantId::from_db(r.get::<String>(1)?),
            kind: stored::named("stream's kind", &r.get::<String>(2)?, StreamKind::parse)?,
            format: stored::named("stream's format", &r.get::<String>(3)?, StreamFormat::parse)?,
            url: r.get(4)?,
            secret_name: r.get(5)?,
            max_entries: r.get(6)?,
            batch_entries: r.get(7)?,
            acked_seq: r.get(8)?,
            acked_at: r.get(9)?,
            sent: r.get(10)?,
            attempts: r.get(11)?,
            last_error: r.get(12)?,
            last_error_at: r.get(13)?,
            due_at: r.get(14)?,
            created_by: r.get(15)?,
            created_at: r.get(16)?,
            auth: stored::named("stream's auth", &r.get::<String>(17)?, StreamAuth::parse)?,
        })
    }
}

/// Checks what an admin adds; the URL as it will be called.
pub(crate) fn check(spec: &StreamSpec) -> Result<url::Url> {
    let url = crate::delivery::runtime::registry::check_url(&spec.url).map_err(|_| {
        Error::invalid(
            "invalid_stream_url",
            "the stream's URL must be http:// or https:// with a host, without credentials, a query or a fragment",
        )
    })?;
    check_token(spec)?;
    if let Some(n) = spec.max_entries
        && !(1..=MAX_BATCH).contains(&n)
    {
        return Err(Error::invalid(
            "invalid_batch",
            format!("max_entries is from 1 to {MAX_BATCH} entries a batch; {n} is not"),
        ));
    }
    Ok(url)
}

/// A Splunk HEC stream needs the collector's token; a token is printable and not too long.
fn check_token(spec: &StreamSpec) -> Result<()> {
    match &spec.token {
        None if spec.kind == StreamKind::SplunkHec => Err(Error::invalid(
            "missing_token",
            "a splunk_hec stream needs the collector's token: give it as token (HEC's Authorization: Splunk <token>)",
        )),
        Some(t) if t.is_empty() || t.len() > MAX_TOKEN || t.chars().any(|c| c.is_control() || c == ' ') => {
            Err(Error::invalid(
                "invalid_token",
                format!("token is 1 to {MAX_TOKEN} printable characters without spaces"),
            ))
        }
        _ => Ok(()),
    }
}

/// Takes the tenant's turn to add a stream (so the cap holds under concurrent adds) and
/// refuses a tenant that has [`MAX_STREAMS`] already.
pub(crate) fn make_room(c: &dyn Tx, tenant: &TenantId) -> Result<()> {
    crate::sql::lock_key(c, &["log streams", tenant.as_str()])?;
    let row = c.row("SELECT COUNT(*) FROM log_streams WHERE tenant_id = ?", &[tenant])?;
    let (n,): (i64,) = FromRow::from_row(&row.expect("a count"))?;
    if n >= MAX_STREAMS as i64 {
        return Err(Error::Conflict {
            code: "too_many_streams",
            message: format!("a tenant has at most {MAX_STREAMS} log streams; remove one first"),
        });
    }
    Ok(())
}

/// Adds a stream whose cursor is where `spec.start` says, and records it (that entry is the
/// first a stream started `now` sends).
pub(crate) fn insert(
    c: &dyn Tx,
    tenant: &TenantId,
    id: &str,
    spec: &StreamSpec,
    secret_name: &str,
    actor: &str,
    via: Transport,
) -> Result<()> {
    let cursor: i64 = match spec.start {
        StreamStart::Beginning => 0,
        StreamStart::Now => {
            let row = c.row("SELECT MAX(seq) FROM activity WHERE tenant_id = ?", &[tenant])?;
            row.map(|r| r.get::<Option<i64>>(0)).transpose()?.flatten().unwrap_or(0)
        }
    };
    let batch = spec.max_entries.unwrap_or(DEFAULT_BATCH);
    let now = Utc::now();
    c.exec(
        "INSERT INTO log_streams (id, tenant_id, kind, format, auth, url, secret_name, max_entries, batch_entries, \
         acked_seq, due_at, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            &id,
            tenant,
            &spec.kind.as_str(),
            &spec.format.as_str(),
            &spec.auth().as_str(),
            &spec.url,
            &secret_name,
            &batch,
            &batch,
            &cursor,
            &now,
            &actor,
            &now,
        ],
    )?;
    let detail = json!({ "stream_id": id, "url": spec.url, "kind": spec.kind.as_str(),
        "format": spec.format.as_str(), "auth": spec.auth().as_str(), "after_seq": cursor });
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector).via(via).verdict(Verdict::StreamAdded).detail(detail),
    )?;
    Ok(())
}

/// Removes a stream and its signing secret (unless something else uses it now), and records
/// it; `not_found` for an unknown one. Retention no longer waits for it.
pub(crate) fn delete_in(c: &dyn Tx, t: &TenantId, i: &str, a: &str, via: Transport) -> Result<()> {
    activity::lock_tenant(c, t)?;
    let secret: Option<String> = c
        .row("SELECT secret_name FROM log_streams WHERE tenant_id = ? AND id = ?", &[t, &i])?
        .map(|r| r.get(0))
        .transpose()?;
    let Some(secret) = secret else { return Err(Error::NotFound { what: "stream" }) };
    c.exec("DELETE FROM log_streams WHERE tenant_id = ? AND id = ?", &[t, &i])?;
    c.exec("DELETE FROM log_stream_dead_letters WHERE tenant_id = ? AND stream_id = ?", &[t, &i])?;
    crate::domain::vault::delete_in(c, t, &secret, a, via)?;
    let entry = NewEntry::new(t, a, Kind::Connector).via(via).verdict(Verdict::StreamRemoved);
    activity::append(c, entry.detail(json!({ "stream_id": i })))?;
    Ok(())
}

/// The tenant's streams, oldest first.
pub(crate) async fn list(store: &Store, tenant: &TenantId) -> Result<Vec<StreamRow>> {
    let sql = format!("SELECT {COLUMNS} FROM log_streams WHERE tenant_id = ? ORDER BY created_at, id");
    Ok(store.all(&sql, &[tenant]).await?)
}

/// One of the tenant's streams; `not_found` for another tenant's or an unknown one.
pub(crate) async fn one(store: &Store, tenant: &TenantId, id: &str) -> Result<StreamRow> {
    let sql = format!("SELECT {COLUMNS} FROM log_streams WHERE tenant_id = ? AND id = ?");
    let row: Option<StreamRow> = store.opt(&sql, &[tenant, &id]).await?;
    row.ok_or(Error::NotFound { what: "stream" })
}

/// The newest entry every one of the tenant's streams has sent; None when it has no stream.
pub(crate) async fn streamed_through(store: &Store, tenant: &TenantId) -> Result<Option<i64>> {
    let (n,): (Option<i64>,) =
        store.one("SELECT MIN(acked_seq) FROM log_streams WHERE tenant_id = ?", &[tenant]).await?;
    Ok(n)
}

/// Up to `limit` streams due at `now` with entries after their cursor, soonest due first.
/// A read: the writer is not asked for anything while every stream is caught up.
pub(crate) async fn due(store: &Store, now: DateTime<Utc>, limit: usize) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = store
        .all(
            "SELECT s.id FROM log_streams s WHERE s.due_at <= ? AND EXISTS \
             (SELECT 1 FROM activity a WHERE a.tenant_id = s.tenant_id AND a.seq > s.acked_seq) \
             ORDER BY s.due_at LIMIT ?",
            &[&now, &(limit as i64)],
        )
        .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Leases the stream `id` to `owner` until `until` if it is still due at `now`; the row.
pub(crate) fn lease(
    c: &dyn Tx,
    id: &str,
    owner: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Option<StreamRow>> {
    let n = c.exec(
        "UPDATE log_streams SET due_at = ?, lease_owner = ? WHERE id = ? AND due_at <= ?",
        &[&until, &owner, &id, &now],
    )?;
    if n == 0 {
        return Ok(None);
    }
    let sql = format!("SELECT {COLUMNS} FROM log_streams WHERE id = ?");
    Ok(c.row(&sql, &[&id])?.map(|r| StreamRow::from_row(&r)).transpose()?)
}

/// Extends `owner`'s lease on the stream `id` to `until`; false when it was lost.
pub(crate) fn renew(c: &dyn Tx, id: &str, owner: &str, until: DateTime<Utc>) -> Result<bool> {
    let n =
        c.exec("UPDATE log_streams SET due_at = ? WHERE id = ? AND lease_owner = ?", &[&until, &id, &owner])?;
    Ok(n == 1)
}

/// Moves the cursor of a stream `owner` holds from its `acked_seq` to `to` (`n` entries
/// acknowledged at `now`) and extends its lease to `until`; with `rejected`, the collector's
/// reason for the records it rejected becomes the stream's last error. False when the lease
/// was lost (nothing moves).
pub(crate) fn acked(
    c: &dyn Tx,
    s: &StreamRow,
    owner: &str,
    (to, n): (i64, i64),
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    rejected: Option<&str>,
) -> Result<bool> {
    let moved = c.exec(
        "UPDATE log_streams SET acked_seq = ?, acked_at = ?, sent = sent + ?, attempts = 0, due_at = ?, batch_entries = ? \
         WHERE id = ? AND lease_owner = ? AND acked_seq = ?",
        &[&to, &now, &n, &until, &s.batch_entries, &s.id, &owner, &s.acked_seq],
    )?;
    if let (1, Some(why)) = (moved, rejected) {
        c.exec(
            "UPDATE log_streams SET last_error = ?, last_error_at = ? WHERE id = ?",
            &[&why, &now, &s.id],
        )?;
    }
    Ok(moved == 1)
}

/// Keeps entry `seq`, the one entry after the cursor of a stream `owner` holds, as a dead
/// letter with `code`, records that in the log, and moves the cursor past it; false when the
/// lease was lost (nothing is written).
pub(crate) fn dead_letter(c: &dyn Tx, s: &StreamRow, owner: &str, seq: i64, code: &str) -> Result<bool> {
    activity::lock_tenant(c, &s.tenant)?;
    let now = Utc::now();
    let moved = c.exec(
        "UPDATE log_streams SET acked_seq = ?, attempts = 0 WHERE id = ? AND lease_owner = ? AND acked_seq = ?",
        &[&seq, &s.id, &owner, &s.acked_seq],
    )?;
    if moved == 0 {
        return Ok(false);
    }
    c.exec(
        "INSERT INTO log_stream_dead_letters (stream_id, tenant_id, seq, code, at) VALUES (?, ?, ?, ?, ?)",
        &[&s.id, &s.tenant, &seq, &code, &now],
    )?;
    let entry =
        NewEntry::new(&s.tenant, activity::SYSTEM_ACTOR, Kind::Connector).verdict(Verdict::DeadLetter);
    activity::append(c, entry.detail(json!({ "stream_id": s.id, "seq": seq, "code": code })))?;
    Ok(true)
}

/// Forgets the dead letter `seq` of the tenant's stream `id` once it was sent; false when
/// there was none (another retry sent it first).
pub(crate) fn dead_letter_sent(c: &dyn Tx, t: &TenantId, id: &str, seq: i64) -> Result<bool> {
    let n = c.exec(
        "DELETE FROM log_stream_dead_letters WHERE tenant_id = ? AND stream_id = ? AND seq = ?",
        &[t, &id, &seq],
    )?;
    Ok(n == 1)
}

/// Whether entry `seq` is a dead letter of the stream.
pub(crate) async fn is_dead_letter(store: &Store, s: &StreamRow, seq: i64) -> Result<bool> {
    let found: Option<(i64,)> = store
        .opt(
            "SELECT seq FROM log_stream_dead_letters WHERE tenant_id = ? AND stream_id = ? AND seq = ?",
            &[&s.tenant, &s.id, &seq],
        )
        .await?;
    Ok(found.is_some())
}

/// The stream's dead letters, oldest entry first.
pub(crate) async fn dead_letters(store: &Store, s: &StreamRow) -> Result<Vec<DeadLetter>> {
    let rows: Vec<(i64, String, DateTime<Utc>)> = store
        .all(
            "SELECT seq, code, at FROM log_stream_dead_letters WHERE tenant_id = ? AND stream_id = ? ORDER BY seq",
            &[&s.tenant, &s.id],
        )
        .await?;
    Ok(rows.into_iter().map(|(seq, code, at)| DeadLetter { seq, code, at }).collect())
}

/// Ends `owner`'s lease on a stream: due again at `due` with `error` recorded after a failed
/// attempt (its `attempts` counted), or at once when `error` is None (caught up, or its turn
/// is over). False when the lease was lost.
pub(crate) fn release(
    c: &dyn Tx,
    s: &StreamRow,
    owner: &str,
    due: DateTime<Utc>,
    error: Option<&str>,
) -> Result<bool> {
    let n = match error {
        None => c.exec(
            "UPDATE log_streams SET due_at = ?, lease_owner = NULL, batch_entries = ? WHERE id = ? AND lease_owner = ?",
            &[&due, &s.batch_entries, &s.id, &owner],
        )?,
        Some(e) => c.exec(
            "UPDATE log_streams SET due_at = ?, lease_owner = NULL, batch_entries = ?, attempts = attempts + 1, \
             last_error = ?, last_error_at = ? WHERE id = ? AND lease_owner = ?",
            &[&due, &s.batch_entries, &e, &Utc::now(), &s.id, &owner],
        )?,
    };
    Ok(n == 1)
}

/// The worst of the streams of `tenant` (or of every tenant), for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamFigures {
    /// The most entries any stream is behind.
    pub lag_entries: i64,
    /// The longest any stream's oldest unsent entry has waited.
    pub lag_secs: i64,
    /// Streams waiting to try a failed batch again.
    pub failing: i64,
    /// Entries the streams' receivers refused for good, kept as dead letters.
    pub dead_letters: i64,
}

/// The most streams one reading of [`figures`] looks at.
const FIGURES_SCAN: i64 = 1_000;

/// [`StreamFigures`] at `now`.
pub(crate) async fn figures(
    store: &Store,
    tenant: Option<&TenantId>,
    now: DateTime<Utc>,
) -> Result<StreamFigures> {
    let rows = match tenant {
        Some(t) => list(store, t).await?,
        None => {
            let sql = format!("SELECT {COLUMNS} FROM log_streams ORDER BY id LIMIT ?");
            store.all(&sql, &[&FIGURES_SCAN]).await?
        }
    };
    let mut f = StreamFigures::default();
    for s in &rows {
        let h = health(store, s, now).await?;
        f.lag_entries = f.lag_entries.max(h.lag_entries);
        f.lag_secs = f.lag_secs.max(h.lag_seconds);
        f.failing += i64::from(h.attempts > 0);
        f.dead_letters += h.dead_letters;
    }
    Ok(f)
}

/// The tenant's entry `seq` without its recorded inputs; None once retention deleted it.
pub(crate) async fn entry(store: &Store, tenant: &TenantId, seq: i64) -> Result<Option<Entry>> {
    let sql = activity::select_shown("tenant_id = ? AND seq = ?");
    let rows = store.rows(&sql, &[tenant, &seq]).await?;
    Ok(activity::entries(&rows)?.pop())
}

/// Up to `limit` of the tenant's entries after `after`, in order, without their recorded
/// inputs (never sent).
pub(crate) async fn page(store: &Store, tenant: &TenantId, after: i64, limit: i64) -> Result<Vec<Entry>> {
    let sql = activity::select_shown("tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?");
    let rows = store.rows(&sql, &[tenant, &after, &limit]).await?;
    activity::entries(&rows)
}

/// The stream's health at `now`: its backlog counted (up to [`LAG_COUNTED`]) and the wait of
/// its oldest unsent entry.
pub(crate) async fn health(store: &Store, s: &StreamRow, now: DateTime<Utc>) -> Result<StreamHealth> {
    // One read for the three figures: `/metrics` reads the health of every stream.
    let (lag, oldest, dead_letters): (i64, Option<DateTime<Utc>>, i64) = store
        .one(
            "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM activity WHERE tenant_id = ?1 AND seq > ?2 LIMIT ?3) b), \
                    (SELECT at FROM activity WHERE tenant_id = ?1 AND seq > ?2 ORDER BY seq LIMIT 1), \
                    (SELECT COUNT(*) FROM log_stream_dead_letters WHERE tenant_id = ?1 AND stream_id = ?4)",
            &[&s.tenant, &s.acked_seq, &LAG_COUNTED, &s.id],
        )
        .await?;
    let lag_seconds = oldest.map_or(0, |at| (now - at).num_seconds().max(0));
    let failing = s.attempts > 0;
    let state = match (failing, lag) {
        (true, _) => "failing",
        (false, 0) => "caught_up",
        _ => "streaming",
    };
    Ok(StreamHealth {
        state: state.to_string(),
        acked_seq: s.acked_seq,
        acked_at: s.acked_at,
        sent: s.sent,
        lag_entries: lag,
        lag_seconds,
        batch_entries: s.batch_entries,
        attempts: s.attempts,
        last_error: s.last_error.clone(),
        last_error_at: s.last_error_at,
        next_attempt_at: failing.then_some(s.due_at),
        dead_letters,
    })
}
