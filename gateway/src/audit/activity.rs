//! The activity log: every action, refusal, hold change, approval step, kit edit, key change,
//! revoke and console decision, appended with actor, tenant, profile, verdict, amount and kit
//! version (docs/architecture.md#the-activity-log).
//!
//! Tamper-evident: each entry stores the hash of the previous entry in its tenant's chain and
//! its own hash over its fields; [`Gateway::verify_log`](crate::Gateway::verify_log) recomputes the chain and names the
//! first broken link. Entries are appended inside the same transaction as the change they
//! record, and published to the bus only after that transaction commits, so there is never an
//! event without its change or a change without its entry.

use chrono::{DateTime, Utc};
use policy::Money;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Engine, FromRow, Row, Tx};
use crate::store::Store;
use crate::stored;

/// The hash before a tenant's first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The most entries one page of the log returns.
pub const MAX_PAGE: i64 = 500;

pub use policy::activity::{Actor, Kind, Transport, Verdict};

/// Who a change made with the company key is recorded as.
pub const COMPANY_KEY_ACTOR: &str = Actor::COMPANY_KEY;
/// The gateway itself.
pub const SYSTEM_ACTOR: &str = Actor::SYSTEM;
/// The demo agent minting and revoking its keys inside the server.
pub const DEMO_AGENT_ACTOR: &str = Actor::DEMO_AGENT;

/// An entry to append.
#[derive(Clone, Debug)]
pub struct NewEntry {
    pub tenant: TenantId,
    pub actor: Actor,
    pub profile: Option<ProfileId>,
    pub kind: Kind,
    pub action: Option<String>,
    pub verdict: Option<Verdict>,
    pub amount: Option<Money>,
    pub kit_version: Option<u32>,
    pub detail: serde_json::Value,
    pub transport: Option<Transport>,
    /// For a governed call: what the engine read to decide it ([`crate::domain::replay::Inputs`], JSON).
    pub inputs: Option<String>,
    /// The OAuth connection an agent's call came through, (id, client name), named in the
    /// entry's detail.
    pub connected: Option<(String, String)>,
}

impl NewEntry {
    pub fn new(tenant: &TenantId, actor: impl Into<Actor>, kind: Kind) -> NewEntry {
        NewEntry {
            tenant: tenant.clone(),
            actor: actor.into(),
            profile: None,
            kind,
            action: None,
            verdict: None,
            amount: None,
            kit_version: None,
            detail: serde_json::Value::Null,
            transport: None,
            inputs: None,
            connected: None,
        }
    }

    /// A call through an OAuth connection, (id, client name): named in the detail, as
    /// `connection_id` and `client`.
    pub fn connected(mut self, connection: Option<(String, String)>) -> Self {
        self.connected = connection;
        self
    }
    pub fn via(mut self, t: Transport) -> Self {
        self.transport = Some(t);
        self
    }
    /// The transport of an administrator's change, from who made it ([`Actor::transport`]).
    pub fn via_actor(mut self) -> Self {
        self.transport = self.actor.transport();
        self
    }
    pub fn profile(mut self, p: &ProfileId) -> Self {
        self.profile = Some(p.clone());
        self
    }
    pub fn action(mut self, a: impl Into<String>) -> Self {
        self.action = Some(a.into());
        self
    }
    pub fn verdict(mut self, v: Verdict) -> Self {
        self.verdict = Some(v);
        self
    }
    pub fn amount(mut self, m: Money) -> Self {
        self.amount = Some(m);
        self
    }
    pub fn kit_version(mut self, v: u32) -> Self {
        self.kit_version = Some(v);
        self
    }
    pub fn detail(mut self, d: serde_json::Value) -> Self {
        self.detail = d;
        self
    }
    pub fn inputs(mut self, i: Option<String>) -> Self {
        self.inputs = i;
        self
    }
}

/// A stored entry. `seq` is the event id: it increases across the whole log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entry {
    pub seq: i64,
    pub tenant_id: TenantId,
    pub at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub actor: Actor,
    pub profile_id: Option<ProfileId>,
    pub kind: Kind,
    pub action: Option<String>,
    pub verdict: Option<Verdict>,
    pub amount: Option<Money>,
    pub kit_version: Option<u32>,
    pub detail: serde_json::Value,
    /// None for the gateway's own work and for entries written before transports were
    /// recorded.
    #[serde(default)]
    pub transport: Option<Transport>,
    pub prev_hash: String,
    pub hash: String,
    /// For a governed call: what the engine read to decide it, as JSON
    /// ([`crate::domain::replay::Inputs`]); read by replay, not sent with the entry.
    #[serde(skip)]
    pub inputs: Option<String>,
}

/// What [`Gateway::verify_log`](crate::Gateway::verify_log) found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChainReport {
    pub entries: u64,
    pub ok: bool,
    /// The sequence number of the first entry whose link or hash does not hold.
    pub first_broken: Option<i64>,
    /// How many entries this verification hashed (all of them, or those since the last look).
    #[serde(default)]
    pub checked: u64,
}

pub(crate) fn entry_hash(prev: &str, e: &Entry) -> String {
    let mut h = Sha256::new();
    let amount = e.amount.map(|m| m.units().to_string()).unwrap_or_default();
    let kit = e.kit_version.map(|v| v.to_string()).unwrap_or_default();
    for part in [
        prev,
        e.tenant_id.as_str(),
        &e.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        e.actor.as_str(),
        e.profile_id.as_ref().map_or("", |p| p.as_str()),
        e.kind.as_str(),
        e.action.as_deref().unwrap_or(""),
        e.verdict.map_or("", Verdict::as_str),
        &amount,
        &kit,
        &e.detail.to_string(),
    ] {
        h.update(part.as_bytes());
        h.update([0x1f]);
    }
    // Entries from before transports were recorded hash as they did then.
    if let Some(t) = e.transport {
        h.update(t.as_str().as_bytes());
        h.update([0x1f]);
    }
    // Entries without decision inputs hash as they did before inputs were recorded.
    if let Some(i) = &e.inputs {
        h.update(i.as_bytes());
        h.update([0x1f]);
    }
    hex::encode(h.finalize())
}

/// An entry's hash, given the hash before it: for a benchmark that writes a valid chain
/// straight into the log (`gateway-load archive`).
#[doc(hidden)]
pub fn chain_hash(prev: &str, e: &Entry) -> String {
    entry_hash(prev, e)
}

thread_local! {
    /// Each tenant's chain head as this thread's connection last wrote it. Only the writer
    /// thread appends, and it calls [`forget_heads`] whenever a write is undone or another
    /// connection may have written, so a cached head is always the newest entry's hash.
    static HEADS: std::cell::RefCell<std::collections::HashMap<String, String>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Drops the cached chain heads; the next append reads its head from the log.
pub(crate) fn forget_heads() {
    HEADS.with(|h| h.borrow_mut().clear());
}

thread_local! {
    /// The entries appended by the writer's open transaction, in append order, which is the
    /// log's order. `None` on every thread but the writer's ([`appended`] starts it there).
    static APPENDED: std::cell::RefCell<Option<Vec<Entry>>> = const { std::cell::RefCell::new(None) };
}

/// What the writer thread does with the entries its transaction appends: keeps them, so it
/// can publish them once they commit ([`crate::store::writer`]), and drops those of undone writes.
pub(crate) mod appended {
    use super::{APPENDED, Entry};

    /// Starts keeping this thread's appended entries.
    pub(crate) fn start() {
        APPENDED.with(|a| *a.borrow_mut() = Some(Vec::new()));
    }

    /// How many are kept: a mark to [`truncate`] back to when a job's writes are undone.
    pub(crate) fn len() -> usize {
        APPENDED.with(|a| a.borrow().as_ref().map_or(0, Vec::len))
    }

    /// Forgets those kept after `mark`.
    pub(crate) fn truncate(mark: usize) {
        APPENDED.with(|a| {
            if let Some(v) = a.borrow_mut().as_mut() {
                v.truncate(mark);
            }
        });
    }

    /// Those kept after `mark`, in append order.
    pub(crate) fn since(mark: usize) -> Vec<Entry> {
        APPENDED.with(|a| {
            a.borrow().as_ref().map(|v| v.get(mark..).unwrap_or_default().to_vec()).unwrap_or_default()
        })
    }

    /// The entry kept at `place`.
    pub(crate) fn at(place: usize) -> Option<Entry> {
        APPENDED.with(|a| a.borrow().as_ref()?.get(place).cloned())
    }

    /// Gives the entry kept at `place` the sequence number its (later) insert was handed.
    pub(crate) fn set_seq(place: usize, seq: i64) {
        APPENDED.with(|a| {
            if let Some(e) = a.borrow_mut().as_mut().and_then(|v| v.get_mut(place)) {
                e.seq = seq;
            }
        });
    }

    /// Hands over everything kept (after a commit), leaving none.
    pub(crate) fn take() -> Vec<Entry> {
        APPENDED.with(|a| a.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
    }

    /// The hash of the newest entry kept of `tenant`'s chain.
    pub(crate) fn newest_hash(tenant: &crate::ids::TenantId) -> Option<String> {
        APPENDED.with(|a| {
            let a = a.borrow();
            a.as_ref()?.iter().rev().find(|e| &e.tenant_id == tenant).map(|e| e.hash.clone())
        })
    }

    /// Keeps `e`; its place among those kept.
    pub(super) fn keep(e: &Entry) -> usize {
        APPENDED.with(|a| match a.borrow_mut().as_mut() {
            Some(v) => {
                v.push(e.clone());
                v.len() - 1
            }
            None => 0,
        })
    }
}

/// Appends one entry inside the caller's transaction and returns it.
/// `detail` naming the OAuth connection a call came through, if it did.
fn with_connection(detail: serde_json::Value, connected: Option<(String, String)>) -> serde_json::Value {
    let Some((id, client)) = connected else { return detail };
    let mut detail = match detail {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => serde_json::Map::new(),
        other => return other,
    };
    detail.insert("connection_id".into(), id.into());
    detail.insert("client".into(), client.into());
    serde_json::Value::Object(detail)
}

pub(crate) fn append(tx: &dyn Tx, new: NewEntry) -> Result<Entry> {
    append_after(tx, &[], new)
}

/// [`append`], after the writes `before` of the change the entry records, sent with the entry
/// in one round trip on PostgreSQL ([`crate::sql::rows_after`]).
pub(crate) fn append_after(tx: &dyn Tx, before: &[crate::sql::Statement], new: NewEntry) -> Result<Entry> {
    let mut e = hashed(tx, new)?;
    e.seq = insert(tx, before, &e)?;
    if tx.engine() == Engine::Sqlite {
        HEADS.with(|h| h.borrow_mut().insert(e.tenant_id.as_str().to_string(), e.hash.clone()));
    }
    appended::keep(&e);
    Ok(e)
}

/// [`append`], not sent: the entry is hashed onto the chain and kept with the batch's appended
/// entries; its place there. The caller inserts it later ([`insert_many`]) with the batch's
/// other kept entries, in this order, before any other entry of the tenant (on PostgreSQL,
/// in a batch that keeps writes: [`crate::domain::reserve::book`]).
pub(crate) fn append_later(tx: &dyn Tx, new: NewEntry) -> Result<usize> {
    let e = hashed(tx, new)?;
    Ok(appended::keep(&e))
}

/// `new` as an entry at the head of its tenant's chain, hashed, without a sequence number.
fn hashed(tx: &dyn Tx, new: NewEntry) -> Result<Entry> {
    let prev = chain_head(tx, &new.tenant)?;
    // Microsecond precision so the stored text hashes the same when read back.
    let at = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).expect("now is representable");
    let mut e = Entry {
        seq: 0,
        tenant_id: new.tenant,
        at,
        actor: new.actor,
        profile_id: new.profile,
        kind: new.kind,
        action: new.action,
        verdict: new.verdict,
        amount: new.amount,
        kit_version: new.kit_version,
        detail: with_connection(new.detail, new.connected),
        transport: new.transport,
        prev_hash: prev.clone(),
        hash: String::new(),
        inputs: new.inputs,
    };
    e.hash = entry_hash(&prev, &e);
    Ok(e)
}

const INSERT_COLUMNS: &str = "INSERT INTO activity (tenant_id, at, actor, profile_id, kind, action, verdict, amount_units, kit_version, detail, transport, prev_hash, hash, inputs)";

/// Inserts `entries` (hashed already, in chain order) after the writes `before`, in one
/// statement on PostgreSQL; their sequence numbers, in the same order.
pub(crate) fn insert_many(
    tx: &dyn Tx,
    before: &[crate::sql::Statement],
    entries: &[Entry],
) -> Result<Vec<i64>> {
    let rows = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; entries.len()].join(", ");
    let values: Vec<Vec<Box<dyn crate::sql::ToValue>>> = entries.iter().map(entry_values).collect();
    let args: Vec<&dyn crate::sql::ToValue> = values.iter().flatten().map(|v| v.as_ref()).collect();
    let sql = format!("{INSERT_COLUMNS} VALUES {rows} RETURNING seq, hash");
    let inserted = crate::sql::rows_after(tx, before, &sql, &args)?;
    let mut seqs = std::collections::HashMap::with_capacity(inserted.len());
    for r in &inserted {
        seqs.insert(r.get::<String>(1)?, r.get::<i64>(0)?);
    }
    entries
        .iter()
        .map(|e| seqs.get(&e.hash).copied())
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| Error::internal("append_failed", "a log entry was not written; try again"))
}

/// An entry's columns, in [`INSERT_COLUMNS`]' order.
fn entry_values(e: &Entry) -> Vec<Box<dyn crate::sql::ToValue>> {
    vec![
        Box::new(e.tenant_id.as_str().to_string()),
        Box::new(stored::ts(e.at)),
        Box::new(e.actor.as_str().to_string()),
        Box::new(e.profile_id.as_ref().map(|p| p.as_str().to_string())),
        Box::new(e.kind.as_str().to_string()),
        Box::new(e.action.clone()),
        Box::new(e.verdict.map(|v| v.as_str().to_string())),
        Box::new(e.amount.map(Money::units)),
        Box::new(e.kit_version.map(i64::from)),
        Box::new(e.detail.to_string()),
        Box::new(e.transport.map(|t| t.as_str().to_string())),
        Box::new(e.prev_hash.clone()),
        Box::new(e.hash.clone()),
        Box::new(e.inputs.clone()),
    ]
}

/// Writes `e` (hashed already) after the statements `before`; its sequence number.
fn insert(tx: &dyn Tx, before: &[crate::sql::Statement], e: &Entry) -> Result<i64> {
    let values = entry_values(e);
    let args: Vec<&dyn crate::sql::ToValue> = values.iter().map(|v| v.as_ref()).collect();
    let sql = format!("{INSERT_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq");
    let inserted = crate::sql::rows_after(tx, before, &sql, &args)?;
    Ok(inserted
        .first()
        .ok_or_else(|| Error::internal("append_failed", "the log entry was not written; try again"))?
        .get(0)?)
}

/// Writes an entry hashed by the caller ([`chain_hash`]) straight into the log, outside the
/// writer: for a benchmark that seeds a valid chain (`gateway-load archive`).
#[doc(hidden)]
pub fn seed(tx: &dyn Tx, e: &Entry) -> ::store::Result<i64> {
    insert(tx, &[], e).map_err(|e| ::store::Error::Internal { code: "seed_failed", message: e.to_string() })
}

/// The hash a tenant's next entry links to. On SQLite, the writer's cached head (it alone
/// appends). On PostgreSQL, the newest entry read under the tenant's lock ([`lock_tenant`]),
/// held until commit, so concurrent appends to one tenant's chain take turns and its chain
/// and sequence numbers follow commit order; or, when this transaction already appended to
/// the chain (a batch's earlier job), that entry, whose append took the lock.
fn chain_head(tx: &dyn Tx, tenant: &TenantId) -> Result<String> {
    match tx.engine() {
        Engine::Sqlite => {
            if let Some(h) = HEADS.with(|h| h.borrow().get(tenant.as_str()).cloned()) {
                return Ok(h);
            }
        }
        Engine::Postgres => {
            if let Some(h) = appended::newest_hash(tenant) {
                return Ok(h);
            }
            lock_tenant(tx, tenant)?;
        }
    }
    let newest = tx.row(
        "SELECT hash FROM activity WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1",
        &[&tenant.as_str()],
    )?;
    match newest {
        Some(r) => Ok(r.get(0)?),
        // An emptied log continues from where its last deleted entry left it.
        None => Ok(checkpoint_in(tx, tenant)?.map_or_else(|| GENESIS.to_string(), |c| c.hash)),
    }
}

/// Where a tenant's log continues from once its oldest entries were deleted (after they were
/// archived): the newest deleted entry's sequence number, hash and time.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub seq: i64,
    pub hash: String,
    pub at: DateTime<Utc>,
}

const CHECKPOINT_SQL: &str = "SELECT seq, hash, at FROM log_checkpoints WHERE tenant_id = ?";

fn checkpoint_of(r: &Row) -> ::store::Result<Checkpoint> {
    Ok(Checkpoint { seq: r.get(0)?, hash: r.get(1)?, at: r.get(2)? })
}

fn checkpoint_in(tx: &dyn Tx, tenant: &TenantId) -> Result<Option<Checkpoint>> {
    Ok(tx.row(CHECKPOINT_SQL, &[&tenant.as_str()])?.as_ref().map(checkpoint_of).transpose()?)
}

/// The tenant's checkpoint, if its log was ever cut.
pub(crate) async fn checkpoint(store: &Store, tenant: &TenantId) -> Result<Option<Checkpoint>> {
    let rows = store.rows(CHECKPOINT_SQL, &[&tenant.as_str()]).await?;
    Ok(rows.first().map(checkpoint_of).transpose()?)
}

/// Deletes up to `limit` of the tenant's oldest entries, none newer than `through`, and moves
/// its checkpoint to the newest deleted, in the caller's transaction (under the tenant's lock
/// on PostgreSQL, so no append reads a head being deleted). How many it deleted. The caller
/// passes only what is archived ([`crate::domain::archive`]).
///
/// The log's newest entry (of any tenant) is never deleted: SQLite numbers a new row one past
/// the largest left, so deleting it would hand out its sequence number again, and sequence
/// numbers only grow (the bus, the archive and retention count on it).
pub(crate) fn forget_through(tx: &dyn Tx, tenant: &TenantId, through: i64, limit: i64) -> Result<u64> {
    lock_tenant(tx, tenant)?;
    let through = through.min(last_seq(tx)? - 1);
    let oldest = tx.rows(
        "SELECT seq, hash, at FROM activity WHERE tenant_id = ? AND seq <= ? ORDER BY seq LIMIT ?",
        &[&tenant.as_str(), &through, &limit],
    )?;
    let Some(newest) = oldest.last() else { return Ok(0) };
    let cut = checkpoint_of(newest)?;
    let deleted =
        tx.exec("DELETE FROM activity WHERE tenant_id = ? AND seq <= ?", &[&tenant.as_str(), &cut.seq])?;
    tx.exec(
        "INSERT INTO log_checkpoints (tenant_id, seq, hash, at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, at = excluded.at",
        &[&tenant.as_str(), &cut.seq, &cut.hash, &stored::ts(cut.at)],
    )?;
    Ok(deleted)
}

/// The advisory lock key of `tenant`'s writes on PostgreSQL ([`lock_tenant`]).
pub(crate) fn tenant_key(tenant: &TenantId) -> i64 {
    crate::sql::lock_digest(&["chain", tenant.as_str()])
}

/// Takes `tenant`'s lock until commit on PostgreSQL; nothing on SQLite. It is the first of a
/// tenant's locks in the one order every job takes them (docs/architecture.md, the lock
/// order): the tenant, then its accounts (deeper first), its holds, its credit row. Every
/// job that appends to the tenant's log or changes its accounts, holds or credit takes it
/// before any of those, so a batch holding it for many jobs never waits in a circle. A
/// batch of the tenant's jobs ([`crate::Gateway::write_for`]) already holds it: then this
/// costs nothing.
pub(crate) fn lock_tenant(tx: &dyn Tx, tenant: &TenantId) -> Result<()> {
    if tx.engine() == Engine::Postgres {
        tx.advisory_lock(tenant_key(tenant))?;
    }
    Ok(())
}

/// Entries committed with a sequence number in `after < seq < before`, in log order, at
/// most `limit`: what another connection committed that this process has not published.
pub(crate) fn committed_between(c: &dyn Tx, after: i64, before: i64, limit: i64) -> Result<Vec<Entry>> {
    let sql = select_columns("seq > ? AND seq < ? ORDER BY seq LIMIT ?");
    entries(&c.rows(&sql, &[&after, &before, &limit])?)
}

/// For `after < seq < before`: the newest sequence number, and how many of the entries are
/// of one of `kinds`, without reading the entries.
pub(crate) fn skim_between(
    c: &dyn Tx,
    after: i64,
    before: i64,
    kinds: &[Kind],
) -> Result<(Option<i64>, i64)> {
    let list = kinds.iter().map(|k| format!("'{}'", k.as_str())).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT MAX(seq), COALESCE(SUM(CASE WHEN kind IN ({list}) THEN 1 ELSE 0 END), 0) FROM activity WHERE seq > ? AND seq < ?"
    );
    match c.row(&sql, &[&after, &before])? {
        Some(r) => Ok((r.get(0)?, r.get(1)?)),
        None => Ok((None, 0)),
    }
}

/// The newest entry's sequence number, 0 for an empty log.
pub(crate) fn last_seq(c: &dyn Tx) -> ::store::Result<i64> {
    c.row("SELECT COALESCE(MAX(seq), 0) FROM activity", &[])?.map_or(Ok(0), |r| r.get(0))
}

const COLUMNS: &str = "seq, tenant_id, at, actor, profile_id, kind, action, verdict, amount_units, kit_version, detail, transport, prev_hash, hash, inputs";

/// `SELECT` of every entry column from the log, with `rest` after its `WHERE`.
pub(crate) fn select_columns(rest: &str) -> String {
    format!("SELECT {COLUMNS} FROM activity WHERE {rest}")
}

/// [`select_columns`] without the recorded decision inputs (read as none): the entries as
/// they are shown and sent, without reading the largest column.
pub(crate) fn select_shown(rest: &str) -> String {
    let shown = COLUMNS.replace(", inputs", ", CAST(NULL AS TEXT)");
    format!("SELECT {shown} FROM activity WHERE {rest}")
}

/// Rows of [`select_columns`] as entries.
pub(crate) fn entries(rows: &[Row]) -> Result<Vec<Entry>> {
    Ok(rows.iter().map(Entry::from_row).collect::<::store::Result<_>>()?)
}

/// A row of [`COLUMNS`]; `corrupt_row` when its actor, kind, verdict or transport is not one
/// the gateway writes.
impl FromRow for Entry {
    fn from_row(r: &Row) -> ::store::Result<Entry> {
        let (actor, kind): (String, String) = (r.get(3)?, r.get(5)?);
        let verdict: Option<String> = r.get(7)?;
        let transport: Option<String> = r.get(11)?;
        let detail: String = r.get(10)?;
        Ok(Entry {
            seq: r.get(0)?,
            tenant_id: r.get(1)?,
            at: r.get(2)?,
            actor: stored::named("actor", &actor, Actor::parse)?,
            profile_id: r.get(4)?,
            kind: stored::named("kind", &kind, Kind::parse)?,
            action: r.get(6)?,
            verdict: verdict.map(|v| stored::named("verdict", &v, Verdict::parse)).transpose()?,
            amount: r.get::<Option<i64>>(8)?.and_then(Money::from_units),
            kit_version: r.get::<Option<i64>>(9)?.and_then(|v| u32::try_from(v).ok()),
            detail: stored::json("activity detail", &detail)?,
            transport: transport.map(|t| stored::named("transport", &t, Transport::parse)).transpose()?,
            prev_hash: r.get(12)?,
            hash: r.get(13)?,
            inputs: r.get(14)?,
        })
    }
}

/// Which entries to read.
#[derive(Clone, Debug, Default)]
pub struct LogQuery {
    pub profile: Option<ProfileId>,
    /// Entries with a sequence number above this (resume after a gap).
    pub after: Option<i64>,
    /// Entries with a sequence number below this (older pages).
    pub before: Option<i64>,
    pub limit: Option<i64>,
}

/// The tenant's entries, newest first unless `after` is given (then oldest first).
pub(crate) async fn page(store: &Store, tenant: &TenantId, q: &LogQuery) -> Result<Vec<Entry>> {
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let order = if q.after.is_some() { "ASC" } else { "DESC" };
    let sql = if q.profile.is_some() {
        crate::store::profile_index::activity_for(store.kind(), COLUMNS, order)
    } else {
        format!(
            "SELECT {COLUMNS} FROM activity WHERE tenant_id = ?1 AND ?2 IS NULL \
             AND seq > ?3 AND seq < ?4 ORDER BY seq {order} LIMIT ?5"
        )
    };
    let profile = q.profile.as_ref().map(ProfileId::as_str);
    let (after, before) = (q.after.unwrap_or(0), q.before.unwrap_or(i64::MAX));
    Ok(store.all(&sql, &[&tenant.as_str(), &profile, &after, &before, &limit]).await?)
}

/// Every tenant's entries (the operator's view: the one read that crosses tenants), newest
/// first unless `after` is given, optionally narrowed to one tenant.
pub(crate) async fn page_all(store: &Store, tenant: Option<&TenantId>, q: &LogQuery) -> Result<Vec<Entry>> {
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let order = if q.after.is_some() { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT {COLUMNS} FROM activity WHERE (?1 IS NULL OR tenant_id = ?1) \
         AND seq > ?2 AND seq < ?3 ORDER BY seq {order} LIMIT ?4"
    );
    let tenant = tenant.map(TenantId::as_str);
    let (after, before) = (q.after.unwrap_or(0), q.before.unwrap_or(i64::MAX));
    Ok(store.all(&sql, &[&tenant, &after, &before, &limit]).await?)
}

/// Whether the entry a mark stopped at still reads as it was verified.
pub(crate) async fn mark_holds(store: &Store, mark: &ChainMark) -> Result<bool> {
    let sql = format!("SELECT {COLUMNS} FROM activity WHERE seq = ?");
    let row = store.rows(&sql, &[&mark.seq]).await?;
    // A row that no longer reads back does not hold either.
    let e = row.first().and_then(|r| Entry::from_row(r).ok());
    Ok(e.is_some_and(|e| e.hash == mark.hash && entry_hash(&e.prev_hash, &e) == e.hash))
}

/// Hashes the tenant's entries after `seq`, starting from `prev`, a page at a time, and
/// stops at the first broken link.
pub(crate) async fn walk_after(
    store: &Store,
    tenant: &TenantId,
    mut seq: i64,
    mut prev: String,
) -> Result<Walk> {
    let mut walk = Walk { checked: 0, broken: None, last: None };
    loop {
        let sql = format!(
            "SELECT {COLUMNS} FROM activity WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT {VERIFY_PAGE}"
        );
        let rows = store.rows(&sql, &[&tenant.as_str(), &seq]).await?;
        let full = rows.len() as i64 == VERIFY_PAGE;
        for r in rows {
            let at: i64 = r.get(0)?;
            walk.checked += 1;
            // An entry changed to something the gateway never writes is a broken link too.
            let Some(e) =
                Entry::from_row(&r).ok().filter(|e| e.prev_hash == prev && entry_hash(&prev, e) == e.hash)
            else {
                walk.broken = Some(at);
                return Ok(walk);
            };
            (seq, prev) = (e.seq, e.hash);
            walk.last = Some((seq, prev.clone()));
        }
        if !full {
            return Ok(walk);
        }
    }
}

/// What becomes of a tenant's mark after a walk.
pub(crate) enum NextMark {
    /// The walk ended intact here: look from here next time.
    Set(ChainMark),
    /// Nothing new was appended: the old mark stands.
    Keep,
    /// The chain is broken: verify it whole next time.
    Forget,
}

impl Walk {
    /// The report of a walk that started after `before` entries, and what becomes of the mark.
    pub(crate) fn report(self, before: u64) -> (ChainReport, NextMark) {
        let entries = before + self.checked;
        let report = ChainReport {
            entries,
            ok: self.broken.is_none(),
            first_broken: self.broken,
            checked: self.checked,
        };
        let mark = match (self.broken, self.last) {
            (None, Some((seq, hash))) => NextMark::Set(ChainMark { seq, hash, entries }),
            (None, None) => NextMark::Keep,
            (Some(_), _) => NextMark::Forget,
        };
        (report, mark)
    }
}

/// How many entries one verification read takes.
const VERIFY_PAGE: i64 = 5_000;

/// What one pass over part of a chain found.
pub(crate) struct Walk {
    checked: u64,
    broken: Option<i64>,
    last: Option<(i64, String)>,
}

/// Where a tenant's chain was last verified intact: its newest entry then, and how many
/// entries the chain had up to it.
#[derive(Clone, Debug)]
pub(crate) struct ChainMark {
    pub(crate) seq: i64,
    hash: String,
    pub(crate) entries: u64,
}

impl ChainMark {
    /// The report of a chain found changed at the mark itself.
    pub(crate) fn broken(&self) -> ChainReport {
        ChainReport { entries: self.entries, ok: false, first_broken: Some(self.seq), checked: 1 }
    }

    /// Where the walk from this mark starts.
    pub(crate) fn start(&self) -> (i64, String) {
        (self.seq, self.hash.clone())
    }
}

/// The first seq of the tenant's log appended at or after `t`, if any: found by bisecting the
/// seqs (the log is appended in time order), so it reads a few rows however long the log.
pub(crate) async fn first_seq_at(store: &Store, tenant: &TenantId, t: DateTime<Utc>) -> Result<Option<i64>> {
    let bounds: Option<(Option<i64>, Option<i64>)> =
        store.opt("SELECT MIN(seq), MAX(seq) FROM activity WHERE tenant_id = ?", &[tenant]).await?;
    let Some((Some(mut lo), Some(hi))) = bounds else { return Ok(None) };
    let (mut hi, mut found) = (hi + 1, None);
    let probe = "SELECT seq, at FROM activity WHERE tenant_id = ? AND seq >= ? ORDER BY seq LIMIT 1";
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match store.opt::<(i64, DateTime<Utc>)>(probe, &[tenant, &mid]).await? {
            Some((seq, at)) if at >= t => {
                found = Some(seq);
                hi = mid;
            }
            Some((seq, _)) => lo = seq + 1,
            None => hi = mid,
        }
    }
    Ok(found)
}

/// Which decided calls [`decided_calls`] reads: those whose recorded inputs match `like`
/// (a `LIKE` pattern, escaped with a backslash), appended in `at`, by `profile` if given, strictly
/// between the seqs `seqs`.
pub(crate) struct DecidedRange<'a> {
    pub like: &'a str,
    pub at: (DateTime<Utc>, DateTime<Utc>),
    pub profile: Option<&'a ProfileId>,
    pub seqs: (i64, i64),
}

/// Up to `limit` entries of `range`, in seq order: seq, kind, verdict, detail and the
/// recorded decision inputs.
pub(crate) async fn decided_calls(
    store: &Store,
    tenant: &TenantId,
    range: &DecidedRange<'_>,
    limit: i64,
) -> Result<Vec<(i64, String, Option<String>, String, String)>> {
    let (from, to) = (stored::ts(range.at.0), stored::ts(range.at.1));
    let (after, before) = range.seqs;
    let mut sql = "SELECT seq, kind, verdict, detail, inputs FROM activity WHERE tenant_id = ? AND seq > ? \
                   AND seq < ? AND inputs LIKE ? ESCAPE '\\' AND at >= ? AND at < ?"
        .to_string();
    let mut args: Vec<&dyn crate::sql::ToValue> = vec![tenant, &after, &before, &range.like, &from, &to];
    if let Some(p) = &range.profile {
        sql.push_str(" AND profile_id = ?");
        args.push(p);
    }
    sql.push_str(&format!(" ORDER BY seq LIMIT {limit}"));
    Ok(store.all(&sql, &args).await?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::{TestDb, held_open};

    fn entry(tenant: &str, n: usize) -> NewEntry {
        NewEntry::new(&TenantId::from_db(tenant.to_string()), "tester", Kind::Action)
            .verdict(Verdict::Allow)
            .detail(serde_json::json!({ "n": n }))
    }

    /// Each tenant's (seq, prev_hash, hash) in log order.
    async fn chain(db: &TestDb, tenant: &'static str) -> Vec<(i64, String, String)> {
        db.run(move |tx| {
            let rows = tx.rows(
                "SELECT seq, prev_hash, hash FROM activity WHERE tenant_id = ? ORDER BY seq",
                &[&tenant],
            )?;
            rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).collect()
        })
        .await
        .unwrap()
    }

    fn assert_linked(engine: &str, chain: &[(i64, String, String)], len: usize) {
        assert_eq!(chain.len(), len, "{engine}: every append is in the log");
        let mut prev = GENESIS.to_string();
        for (seq, link, hash) in chain {
            assert_eq!(link, &prev, "{engine}: entry {seq} links to the one before it");
            prev = hash.clone();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_appends_keep_each_tenants_chain_linear_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let first = db.run(|tx| append(tx, entry("t_a", 0))).await.unwrap();
            assert_eq!((first.prev_hash.as_str(), first.hash.len()), (GENESIS, 64), "{}", db.name());
            let calls = (0..32).map(|i| {
                let db = db.clone();
                let tenant = if i % 4 == 0 { "t_b" } else { "t_a" };
                tokio::spawn(async move { db.run(held_open(move |tx| append(tx, entry(tenant, i)))).await })
            });
            let mut seqs = Vec::new();
            for call in calls.collect::<Vec<_>>() {
                let e = call.await.unwrap().unwrap();
                assert_eq!(e.hash, entry_hash(&e.prev_hash, &e), "{}: the hash covers the entry", db.name());
                seqs.push(e.seq);
            }
            seqs.sort();
            seqs.dedup();
            assert_eq!(seqs.len(), 32, "{}: every entry has its own sequence number", db.name());
            assert_linked(db.name(), &chain(&db, "t_a").await, 25);
            assert_linked(db.name(), &chain(&db, "t_b").await, 8);
        }
    }

    #[tokio::test]
    async fn an_undone_append_leaves_the_chain_as_it_was_on_both_engines() {
        for db in TestDb::both().await {
            db.run(|tx| append(tx, entry("t_a", 0))).await.unwrap();
            let undone = db
                .run(|tx| {
                    append(tx, entry("t_a", 1))?;
                    Err::<(), _>(Error::invalid("test", "undo"))
                })
                .await;
            assert!(undone.is_err());
            db.run(|tx| append(tx, entry("t_a", 2))).await.unwrap();
            assert_linked(db.name(), &chain(&db, "t_a").await, 2);
        }
    }
}
