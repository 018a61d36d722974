//! The log's archive (docs/archive.md): each closed range of a tenant's log, written out as
//! gzipped JSON lines (one entry per line, with its recorded decision inputs) beside a
//! manifest that names the range's sequence numbers, the hash it continues from, its first
//! and last hash and the data object's SHA-256. Owns `archive_ranges`: which ranges are
//! archived, and which instance holds the claim on the one being written.
//!
//! Guarantees: a range is a run of one tenant's entries in chain order, all of one local day
//! (in the tenant's zone) that has ended, at most [`MAX_RANGE`] long, each continuing from
//! the last; only an intact run is written; one instance writes a range (its claim is a row,
//! taken over only after its lease lapses); a range is recorded as archived only after both
//! of its objects are stored. [`check_range`] and [`check_sequence`] verify an archive from
//! its objects alone.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

use crate::audit::activity::{self, Entry, GENESIS};
use crate::domain::periods::Calendar;
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::{FromRow, Row, Tx};
use crate::store::Store;
use crate::stored;

/// The archive format this build writes and reads.
pub const FORMAT: u32 = 1;
/// The most entries one range holds, so writing one needs bounded memory: a busy day is
/// several ranges.
pub const MAX_RANGE: i64 = 50_000;
/// How many entries are read from the log at a time while a range is written.
const PAGE: i64 = 1_000;

/// What a range's manifest says (`<range>.manifest.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub tenant: TenantId,
    /// The local day the range's entries fall on, in the tenant's zone.
    pub day: NaiveDate,
    pub first_seq: i64,
    pub last_seq: i64,
    pub entries: i64,
    /// The hash the range continues from: the previous range's last, or the genesis hash.
    pub prev_hash: String,
    pub first_hash: String,
    pub last_hash: String,
    /// The data object's name, beside the manifest.
    pub data: String,
    /// The SHA-256 of the data object's bytes, hex.
    pub sha256: String,
    pub bytes: u64,
}

/// One line of a data object: the entry as the API shows it, and its recorded inputs.
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(flatten)]
    entry: Entry,
    #[serde(default)]
    inputs: Option<String>,
}

/// The prefix of a tenant's objects in the store.
pub fn tenant_prefix(tenant: &TenantId) -> String {
    format!("tenants/{}", tenant.as_str())
}

/// The names of a range's data object and manifest.
pub fn object_names(tenant: &TenantId, day: NaiveDate, first: i64, last: i64) -> (String, String) {
    let stem = format!("{}/{day}/{first:020}-{last:020}", tenant_prefix(tenant));
    (format!("{stem}.jsonl.gz"), format!("{stem}.manifest.json"))
}

/// A range claimed to be written, or archived.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub tenant: TenantId,
    pub first_seq: i64,
    pub last_seq: i64,
    pub day: NaiveDate,
    pub entries: i64,
    pub prev_hash: String,
    /// Empty until the range is archived.
    pub last_hash: String,
    pub archived_at: Option<DateTime<Utc>>,
}

impl Range {
    pub fn names(&self) -> (String, String) {
        object_names(&self.tenant, self.day, self.first_seq, self.last_seq)
    }
}

const RANGE_COLUMNS: &str = "tenant_id, first_seq, last_seq, day, entries, prev_hash, last_hash, archived_at";

impl FromRow for Range {
    fn from_row(r: &Row) -> ::store::Result<Range> {
        let day: String = r.get(3)?;
        Ok(Range {
            tenant: r.get(0)?,
            first_seq: r.get(1)?,
            last_seq: r.get(2)?,
            day: day.parse().map_err(|_| ::store::stored::corrupt("archive day", &day))?,
            entries: r.get(4)?,
            prev_hash: r.get(5)?,
            last_hash: r.get(6)?,
            archived_at: r.get(7)?,
        })
    }
}

/// How far the tenant's log is archived and deleted, as `GET /v1/tenant/archive` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArchiveStatus {
    /// Ranges archived.
    pub ranges: i64,
    /// The newest archived entry's sequence number; 0 when nothing is archived yet.
    pub archived_to: i64,
    /// The local day (YYYY-MM-DD, in the tenant's zone) of the newest archived range.
    pub archived_day: Option<String>,
    /// When the newest range was archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Entries up to this sequence number were deleted from the database under retention; 0
    /// when none were.
    pub deleted_through: i64,
    /// When the newest deleted entry was appended.
    pub deleted_through_at: Option<DateTime<Utc>>,
    /// The newest entry every one of the tenant's log streams has sent; retention deletes
    /// nothing after it. None when the tenant has no stream.
    pub streamed_through: Option<i64>,
}

/// The tenant's [`ArchiveStatus`].
pub async fn status(store: &Store, tenant: &TenantId) -> Result<ArchiveStatus> {
    let row: (i64, Option<i64>, Option<String>, Option<String>) = store
        .one(
            "SELECT COUNT(*), MAX(last_seq), MAX(day), MAX(archived_at) FROM archive_ranges \
             WHERE tenant_id = ? AND archived_at IS NOT NULL",
            &[&tenant.as_str()],
        )
        .await?;
    let cut = activity::checkpoint(store, tenant).await?;
    Ok(ArchiveStatus {
        ranges: row.0,
        archived_to: row.1.unwrap_or(0),
        archived_day: row.2,
        archived_at: row.3.map(|t| stored::parse_ts(&t)).transpose()?,
        deleted_through: cut.as_ref().map_or(0, |c| c.seq),
        deleted_through_at: cut.map(|c| c.at),
        streamed_through: None,
    })
}

/// The tenant's newest range, archived or claimed.
pub async fn newest(store: &Store, tenant: &TenantId) -> Result<Option<Range>> {
    let sql = format!(
        "SELECT {RANGE_COLUMNS} FROM archive_ranges WHERE tenant_id = ? ORDER BY first_seq DESC LIMIT 1"
    );
    Ok(store.all(&sql, &[&tenant.as_str()]).await?.into_iter().next())
}

/// Every archived range of the tenant, oldest first.
pub async fn archived(store: &Store, tenant: &TenantId) -> Result<Vec<Range>> {
    let sql = format!(
        "SELECT {RANGE_COLUMNS} FROM archive_ranges WHERE tenant_id = ? AND archived_at IS NOT NULL ORDER BY first_seq"
    );
    Ok(store.all(&sql, &[&tenant.as_str()]).await?)
}

/// The next range to write after `after` (the newest range, if any): the run of entries of
/// the first unarchived entry's local day, if that day has ended at `now`. None when there is
/// nothing to archive yet.
pub async fn next(
    store: &Store,
    tenant: &TenantId,
    calendar: &Calendar,
    after: Option<&Range>,
    now: DateTime<Utc>,
) -> Result<Option<Range>> {
    let (seq, prev) = after.map_or((0, GENESIS.to_string()), |r| (r.last_seq, r.last_hash.clone()));
    let sql = "SELECT seq, at FROM activity WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?";
    // The first entry alone says whether a day has closed: most rounds stop there, without
    // reading the run.
    let first = store.rows(sql, &[&tenant.as_str(), &seq, &1i64]).await?;
    let Some(at) = first.first().map(|r| r.get::<DateTime<Utc>>(1)).transpose()? else { return Ok(None) };
    if closed_run(&[(seq + 1, at)], calendar, now).is_none() {
        return Ok(None);
    }
    let rows = store.rows(sql, &[&tenant.as_str(), &seq, &MAX_RANGE]).await?;
    let mut run: Vec<(i64, DateTime<Utc>)> = Vec::with_capacity(rows.len());
    for r in &rows {
        run.push((r.get(0)?, r.get(1)?));
    }
    let Some((day, within)) = closed_run(&run, calendar, now) else { return Ok(None) };
    Ok(Some(Range {
        tenant: tenant.clone(),
        first_seq: run[0].0,
        last_seq: run[within - 1].0,
        day,
        entries: within as i64,
        prev_hash: prev,
        last_hash: String::new(),
        archived_at: None,
    }))
}

/// Of a run of entries (sequence number, time) in chain order: the local day of the first,
/// and how many of the run fall before that day ends, when it has ended at `now`.
fn closed_run(
    run: &[(i64, DateTime<Utc>)],
    calendar: &Calendar,
    now: DateTime<Utc>,
) -> Option<(NaiveDate, usize)> {
    let &(_, first_at) = run.first()?;
    let day = calendar.day(first_at);
    let end = calendar.start_of(day.succ_opt()?);
    if now < end {
        return None;
    }
    // The run ends before the first entry of a later day; the first is always within.
    let within = run.iter().take_while(|(_, at)| *at < end).count().max(1);
    Some((day, within))
}

/// Claims `range` for `owner` until `lease_until`: a new range, one whose claim lapsed, or
/// one `owner` claimed before (its write failed and is tried again). Whether this claim won.
pub fn claim(
    tx: &dyn Tx,
    range: &Range,
    owner: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<bool> {
    let inserted = tx.exec(
        "INSERT INTO archive_ranges (tenant_id, first_seq, last_seq, day, entries, prev_hash, last_hash, claimed_by, lease_until) \
         VALUES (?, ?, ?, ?, ?, ?, '', ?, ?) ON CONFLICT DO NOTHING",
        &[
            &range.tenant.as_str(),
            &range.first_seq,
            &range.last_seq,
            &range.day.to_string(),
            &range.entries,
            &range.prev_hash,
            &owner,
            &stored::ts(lease_until),
        ],
    )?;
    if inserted == 1 {
        return Ok(true);
    }
    let taken = tx.exec(
        "UPDATE archive_ranges SET claimed_by = ?, lease_until = ? \
         WHERE tenant_id = ? AND first_seq = ? AND archived_at IS NULL AND (lease_until < ? OR claimed_by = ?)",
        &[&owner, &stored::ts(lease_until), &range.tenant.as_str(), &range.first_seq, &stored::ts(now), &owner],
    )?;
    Ok(taken == 1)
}

/// Records a claimed range as archived, ending at `last_hash`. False when the claim was
/// taken over meanwhile (the other instance records it).
pub fn finish(tx: &dyn Tx, range: &Range, owner: &str, last_hash: &str, at: DateTime<Utc>) -> Result<bool> {
    let done = tx.exec(
        "UPDATE archive_ranges SET last_hash = ?, archived_at = ? \
         WHERE tenant_id = ? AND first_seq = ? AND claimed_by = ? AND archived_at IS NULL",
        &[&last_hash, &stored::ts(at), &range.tenant.as_str(), &range.first_seq, &owner],
    )?;
    Ok(done == 1)
}

/// The newest entry the tenant may delete under retention: the last of its archived ranges
/// whose day is before `before`. None when no such range is archived.
pub async fn forgettable_through(store: &Store, tenant: &TenantId, before: NaiveDate) -> Result<Option<i64>> {
    let row: Option<(Option<i64>,)> = store
        .opt(
            "SELECT MAX(last_seq) FROM archive_ranges WHERE tenant_id = ? AND archived_at IS NOT NULL AND day < ?",
            &[&tenant.as_str(), &before.to_string()],
        )
        .await?;
    Ok(row.and_then(|(s,)| s))
}

/// A range's entries `after < seq <= last`, a page at a time.
pub async fn page(store: &Store, tenant: &TenantId, after: i64, last: i64) -> Result<Vec<Entry>> {
    let sql = activity::select_columns("tenant_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?");
    let rows = store.rows(&sql, &[&tenant.as_str(), &after, &last, &PAGE]).await?;
    activity::entries(&rows)
}

/// The hash of the tenant's entry `seq`, if the log still holds it.
pub async fn hash_at(store: &Store, tenant: &TenantId, seq: i64) -> Result<Option<String>> {
    let row = store
        .rows("SELECT hash FROM activity WHERE tenant_id = ? AND seq = ?", &[&tenant.as_str(), &seq])
        .await?;
    Ok(match row.first() {
        Some(r) => Some(r.get(0)?),
        None => None,
    })
}

/// Writes a range's data object: the entries it is given, in order, each checked to link to
/// the one before.
pub struct Writer {
    gz: flate2::write::GzEncoder<Vec<u8>>,
    range: Range,
    prev: String,
    first_hash: Option<String>,
    last_seq: i64,
    count: i64,
}

impl Writer {
    pub fn new(range: Range) -> Writer {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let prev = range.prev_hash.clone();
        Writer { gz, range, prev, first_hash: None, last_seq: 0, count: 0 }
    }

    /// The sequence number to read after.
    pub fn read_after(&self) -> i64 {
        if self.count == 0 { self.range.first_seq - 1 } else { self.last_seq }
    }

    /// Adds `e`; refuses an entry that does not continue the chain, naming it.
    pub fn push(&mut self, e: Entry) -> Result<()> {
        if e.prev_hash != self.prev || activity::entry_hash(&self.prev, &e) != e.hash {
            return Err(Error::internal(
                "chain_broken",
                format!(
                    "entry {} of tenant {} does not continue the chain; run `server check` and archive again once it is repaired",
                    e.seq, self.range.tenant
                ),
            ));
        }
        self.first_hash.get_or_insert_with(|| e.hash.clone());
        (self.prev, self.last_seq) = (e.hash.clone(), e.seq);
        self.count += 1;
        let inputs = e.inputs.clone();
        let mut line = serde_json::to_vec(&Line { entry: e, inputs }).map_err(encode_error)?;
        line.push(b'\n');
        self.gz.write_all(&line).map_err(encode_error)
    }

    /// Whether every entry of the range is in.
    pub fn complete(&self) -> bool {
        self.count >= self.range.entries
    }

    /// The data object's bytes and the manifest that describes them.
    pub fn finish(self) -> Result<(Vec<u8>, Manifest)> {
        if self.count != self.range.entries || self.last_seq != self.range.last_seq {
            return Err(Error::internal(
                "archive_range_changed",
                format!(
                    "tenant {}'s range from {} read {} entries ending at {}, not {} ending at {}",
                    self.range.tenant,
                    self.range.first_seq,
                    self.count,
                    self.last_seq,
                    self.range.entries,
                    self.range.last_seq
                ),
            ));
        }
        let bytes = self.gz.finish().map_err(encode_error)?;
        let (data, _) = self.range.names();
        let manifest = Manifest {
            format: FORMAT,
            tenant: self.range.tenant.clone(),
            day: self.range.day,
            first_seq: self.range.first_seq,
            last_seq: self.last_seq,
            entries: self.count,
            prev_hash: self.range.prev_hash.clone(),
            first_hash: self.first_hash.unwrap_or_default(),
            last_hash: self.prev,
            data: file_name(&data).to_string(),
            sha256: hex::encode(Sha256::digest(&bytes)),
            bytes: bytes.len() as u64,
        };
        Ok((bytes, manifest))
    }
}

fn encode_error(e: impl std::fmt::Display) -> Error {
    Error::internal("archive_encode_failed", format!("writing an archive range: {e}"))
}

/// The last segment of an object's name.
pub fn file_name(object: &str) -> &str {
    object.rsplit('/').next().unwrap_or(object)
}

/// What is wrong with a range's data object against its manifest, if anything: its bytes
/// (modified), its lines (a line that does not parse, an entry out of order or changed), its
/// count and its ends.
pub fn check_range(m: &Manifest, bytes: &[u8]) -> std::result::Result<(), String> {
    if hex::encode(Sha256::digest(bytes)) != m.sha256 {
        return Err("modified: its SHA-256 is not the manifest's".into());
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| format!("unreadable: not gzipped JSON lines ({e})"))?;
    let mut prev = m.prev_hash.clone();
    let mut count = 0i64;
    for (n, line) in text.lines().enumerate() {
        let Line { mut entry, inputs } =
            serde_json::from_str(line).map_err(|e| format!("line {}: not an entry ({e})", n + 1))?;
        entry.inputs = inputs;
        if entry.prev_hash != prev || activity::entry_hash(&prev, &entry) != entry.hash {
            return Err(format!(
                "line {} (seq {}): the chain breaks here: the entry was changed, or lines were removed or reordered",
                n + 1,
                entry.seq
            ));
        }
        if count == 0 && (entry.seq != m.first_seq || entry.hash != m.first_hash) {
            return Err(format!("line 1 is seq {}, not the manifest's first ({})", entry.seq, m.first_seq));
        }
        prev = entry.hash;
        count += 1;
    }
    if count != m.entries || prev != m.last_hash {
        return Err(format!(
            "holds {count} entries ending at hash {prev:.12}, not the manifest's {} ending at {:.12}",
            m.entries, m.last_hash
        ));
    }
    Ok(())
}

/// One thing wrong with an archive: the object where it shows, and what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchiveProblem {
    pub object: String,
    pub problem: String,
}

impl ArchiveProblem {
    pub fn new(object: &str, problem: String) -> ArchiveProblem {
        ArchiveProblem { object: object.to_string(), problem }
    }
}

/// What checking a tenant's archive found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchiveReport {
    pub tenant: TenantId,
    pub ranges: usize,
    pub entries: i64,
    /// The newest archived entry's sequence number, 0 when nothing is archived.
    pub archived_to: i64,
    pub ok: bool,
    pub problems: Vec<ArchiveProblem>,
}

impl ArchiveReport {
    pub fn new(tenant: &TenantId, manifests: &[(String, Manifest)], problems: Vec<ArchiveProblem>) -> Self {
        ArchiveReport {
            tenant: tenant.clone(),
            ranges: manifests.len(),
            entries: manifests.iter().map(|(_, m)| m.entries).sum(),
            archived_to: manifests.last().map_or(0, |(_, m)| m.last_seq),
            ok: problems.is_empty(),
            problems,
        }
    }
}

/// What is wrong with the order of a tenant's manifests (sorted by first sequence number):
/// each must continue from the one before, the first from the genesis hash. Each problem
/// names the manifest where the sequence breaks.
pub fn check_sequence(manifests: &[(String, Manifest)]) -> Vec<ArchiveProblem> {
    let mut problems = Vec::new();
    let mut prev: Option<&(String, Manifest)> = None;
    for item @ (name, m) in manifests {
        let (expected, after) = match prev {
            Some((_, p)) => (p.last_hash.as_str(), p.last_seq),
            None => (GENESIS, 0),
        };
        if m.prev_hash != expected || m.first_seq <= after {
            let before = prev.map_or("the start of the log".to_string(), |(n, _)| n.clone());
            problems.push(ArchiveProblem::new(
                name,
                format!("does not continue from {before}: a range is missing, or was reordered or replaced"),
            ));
        }
        prev = Some(item);
    }
    problems
}

/// What is wrong between the ranges the database records as archived and the manifests in
/// the store: a recorded range without its manifest, or with another one.
pub fn check_recorded(recorded: &[Range], manifests: &[(String, Manifest)]) -> Vec<ArchiveProblem> {
    let mut problems = Vec::new();
    for r in recorded {
        let (_, name) = r.names();
        match manifests.iter().find(|(_, m)| m.first_seq == r.first_seq) {
            None => problems.push(ArchiveProblem::new(
                &name,
                "missing: the database records this range as archived".into(),
            )),
            Some((found, m)) if m.last_seq != r.last_seq || m.last_hash != r.last_hash => {
                problems.push(ArchiveProblem::new(
                    found,
                    format!(
                        "differs from the range the database recorded ({} to {})",
                        r.first_seq, r.last_seq
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_range_is_a_local_day_that_has_ended_in_the_tenants_zone() {
        let berlin = Calendar { zone: "Europe/Berlin".parse().unwrap(), next: None };
        // 23:30 UTC on the 6th is 00:30 on the 7th in Berlin; 23:10 UTC on the 7th is the 8th.
        let run = [
            (1, at("2026-12-06T23:30:00Z")),
            (2, at("2026-12-07T22:59:59Z")),
            (3, at("2026-12-07T23:10:00Z")),
        ];
        assert_eq!(
            closed_run(&run, &berlin, at("2026-12-07T22:59:59Z")),
            None,
            "the 7th has not ended in Berlin"
        );
        let closed = closed_run(&run, &berlin, at("2026-12-07T23:00:00Z"));
        assert_eq!(closed, Some(("2026-12-07".parse().unwrap(), 2)), "Berlin's 7th ends at 23:00 UTC");
        let utc = Calendar::default();
        assert_eq!(
            closed_run(&run, &utc, at("2026-12-07T00:00:00Z")),
            Some(("2026-12-06".parse().unwrap(), 1))
        );
        assert_eq!(closed_run(&[], &utc, at("2026-12-09T00:00:00Z")), None);
    }

    fn entry(seq: i64, prev: &str) -> Entry {
        let mut e = Entry {
            seq,
            tenant_id: TenantId::from_db("ten_a".into()),
            at: at("2026-12-07T10:00:00Z"),
            actor: crate::audit::activity::Actor::parse("system").unwrap(),
            profile_id: None,
            kind: crate::audit::activity::Kind::Settings,
            action: None,
            verdict: None,
            amount: None,
            kit_version: None,
            detail: serde_json::json!({ "n": seq }),
            transport: None,
            prev_hash: prev.to_string(),
            hash: String::new(),
            inputs: Some(format!("{{\"seq\":{seq}}}")),
        };
        e.hash = activity::entry_hash(prev, &e);
        e
    }

    #[test]
    fn a_written_range_checks_and_a_changed_or_short_one_does_not() {
        let (a, tenant) = (entry(1, GENESIS), TenantId::from_db("ten_a".into()));
        let b = entry(2, &a.hash);
        let range = Range {
            tenant,
            first_seq: 1,
            last_seq: 2,
            day: "2026-12-07".parse().unwrap(),
            entries: 2,
            prev_hash: GENESIS.into(),
            last_hash: String::new(),
            archived_at: None,
        };
        let mut w = Writer::new(range.clone());
        assert!(w.push(entry(1, "not the head")).is_err(), "an entry that does not link is refused");
        w.push(a.clone()).unwrap();
        w.push(b.clone()).unwrap();
        let (bytes, m) = w.finish().unwrap();
        assert_eq!(
            (m.first_hash.as_str(), m.last_hash.as_str(), m.entries),
            (a.hash.as_str(), b.hash.as_str(), 2)
        );
        assert_eq!(check_range(&m, &bytes), Ok(()));
        let mut other = bytes.clone();
        *other.last_mut().unwrap() ^= 1;
        assert!(check_range(&m, &other).unwrap_err().starts_with("modified"));
        let mut short = Writer::new(range);
        short.push(a).unwrap();
        assert_eq!(
            short.finish().unwrap_err().code(),
            "archive_range_changed",
            "a range read short is not written"
        );
    }
}
