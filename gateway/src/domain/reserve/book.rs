//! The book: on PostgreSQL, what a batch of one tenant's governed calls reads and writes,
//! kept on the runner's thread so the batch reads its standing once and writes once.
//!
//! A batch ([`crate::store::postgres`]) holds its tenants' locks from before its first job
//! to COMMIT. Inside it:
//! - **One read.** Each governed call says what it will read ([`Want`]: its chain, the days
//!   its period limits reach back to, its rate windows). The batch reads it all for every call
//!   in one statement ([`prefetch`]) and keeps it ([`Read`]). A call whose standing is kept is
//!   decided without a statement ([`standing`]); one that is not reads its own and keeps it.
//! - **Decided in order, against totals advanced in memory.** A call carried out in the
//!   batch keeps its writes here instead of sending them ([`keep`]): its hold and ledger
//!   entries, its log entry (hashed in the chain in the order of the calls), and the moves of
//!   its accounts' totals, day totals, credit and rate windows. The next call's standing is
//!   the read plus every move kept, so no call can take what an earlier one took.
//! - **One write.** The kept writes go in one statement ([`flush`]): every hold and ledger
//!   entry and log entry as multi-row `INSERT`s, and each account, day, credit row and rate
//!   window moved once by the sum of its moves. The log's sequence numbers come back with it.
//!
//! Guarantees: whatever else a job sends on the transaction sees the database as if every
//! call before it had written as it went: the kept writes go first ([`before_statement`]),
//! and a statement that may write forgets what was read. A job whose writes are undone takes
//! its kept writes with it ([`undo`]). When the one write is refused, the batch runs again
//! with nothing kept (each job in its own savepoint), so only the call at fault fails. On
//! SQLite, and in a batch run job by job, nothing is kept: every write goes as it is made.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDate;
use policy::{Money, SubjectStatus};

use super::{Reach, Standing};
use crate::audit::activity;
use crate::domain::chain::Link;
use crate::domain::ledger::{self, Moves};
use crate::domain::periods::{DayTotals, TenantClock};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Row, Statement, Tx};
use crate::stored;

/// What a governed call will read: the hint it queues with ([`crate::Gateway::write_for`]).
pub(crate) struct Want {
    pub tenant: TenantId,
    pub profiles: Vec<ProfileId>,
    pub days_from: Option<NaiveDate>,
    pub windows: Vec<String>,
}

/// One profile's row of a standing read.
#[derive(Clone)]
struct ProfileRead {
    status: SubjectStatus,
    /// The newest version of the profile's kit.
    version: Option<i64>,
    posted: i64,
    pending: i64,
}

/// The tenant's row of a standing read.
#[derive(Clone)]
struct TenantRead {
    credit: i64,
    credit_pending: i64,
    clock: TenantClock,
}

/// A profile's day totals (posted, pending) from a date on.
type Days = (NaiveDate, BTreeMap<NaiveDate, (i64, i64)>);

/// A tenant's standing as read under its lock: the rows of the standing statement, and how
/// far they reach (each profile's days from a date on, the windows asked for).
#[derive(Clone, Default)]
pub(crate) struct Read {
    profiles: HashMap<String, ProfileRead>,
    tenant: Option<TenantRead>,
    /// Each profile's day totals from the date on, when they were read.
    days: HashMap<String, Days>,
    /// Each window asked for and its count (0 without a row).
    windows: HashMap<String, i64>,
}

impl Read {
    /// The read of `profiles` that reached `reach`, from the standing statement's `rows`.
    pub(crate) fn from_rows(profiles: &[&str], reach: &Reach, rows: &[Row]) -> Result<Read> {
        let mut r = Read::default();
        if let Some(from) = reach.days_from {
            r.days = profiles.iter().map(|p| (p.to_string(), (from, BTreeMap::new()))).collect();
        }
        r.windows = reach.windows.iter().map(|k| (k.clone(), 0)).collect();
        for row in rows {
            let kind: String = row.get(12)?;
            match kind.as_str() {
                "d" => {
                    let (id, day): (String, String) = (row.get(0)?, row.get(7)?);
                    let day = stored::named("budget day", &day, |d| d.parse::<NaiveDate>().ok())?;
                    if let Some((_, days)) = r.days.get_mut(&id) {
                        days.insert(day, (row.get(3)?, row.get(4)?));
                    }
                }
                "r" => {
                    r.windows.insert(row.get(0)?, row.get(3)?);
                }
                _ => r.profile_row(row)?,
            }
        }
        Ok(r)
    }

    fn profile_row(&mut self, row: &Row) -> Result<()> {
        let (id, status): (String, String) = (row.get(0)?, row.get(1)?);
        let status = stored::named("profile status", &status, SubjectStatus::parse)?;
        let profile = ProfileRead { status, version: row.get(2)?, posted: row.get(3)?, pending: row.get(4)? };
        self.profiles.insert(id, profile);
        let clock =
            TenantClock::from_columns(row.get(7)?, row.get(8)?, row.get(9)?, row.get(10)?, row.get(11)?)?;
        self.tenant = Some(TenantRead { credit: row.get(5)?, credit_pending: row.get(6)?, clock });
        Ok(())
    }

    /// Takes in what `newer` read (later, so it is the newer word on what both read).
    fn merge(&mut self, newer: Read) {
        self.profiles.extend(newer.profiles);
        self.tenant = newer.tenant.or(self.tenant.take());
        self.days.extend(newer.days);
        self.windows.extend(newer.windows);
    }

    /// Whether this read reaches everything the chain `links` needs under `reach`.
    fn covers(&self, links: &[Link], reach: &Reach) -> bool {
        let days_ok =
            |p: &str| reach.days_from.is_none_or(|d| self.days.get(p).is_some_and(|(from, _)| *from <= d));
        self.tenant.is_some()
            && links
                .iter()
                .all(|l| self.profiles.contains_key(l.profile.as_str()) && days_ok(l.profile.as_str()))
            && reach.windows.iter().all(|k| self.windows.contains_key(k))
    }

    /// Moves the totals this read holds by `m`, as its writes will move the rows.
    fn apply(&mut self, m: &Moves) {
        for account in &m.accounts {
            if let Some(p) = self.profiles.get_mut(account.as_str()) {
                p.pending += m.pending;
                p.posted += m.posted;
            }
            let Some(day) = m.day else { continue };
            if let Some((from, days)) = self.days.get_mut(account.as_str())
                && day >= *from
            {
                let d = days.entry(day).or_insert((0, 0));
                d.0 += m.posted;
                d.1 += m.pending;
            }
        }
        if let (Some(t), Some((pending, available))) = (self.tenant.as_mut(), m.credit) {
            t.credit_pending += pending;
            t.credit += available;
        }
        for key in &m.windows {
            if let Some(n) = self.windows.get_mut(&key.0) {
                *n += 1;
            }
        }
    }

    /// The chain's [`Standing`] from this read (which [`Read::covers`] it).
    pub(crate) fn standing(&self, links: &[Link], reach: &Reach) -> Result<Standing> {
        let mut s = Standing {
            status: SubjectStatus::Active,
            stale: false,
            totals: Vec::with_capacity(links.len()),
            credit: Money::ZERO,
            clock: TenantClock::default(),
            days: Vec::new(),
            counts: Vec::new(),
        };
        for (level, l) in links.iter().enumerate() {
            let p = self
                .profiles
                .get(l.profile.as_str())
                .ok_or(crate::error::Error::NotFound { what: "agent profile" })?;
            if s.status == SubjectStatus::Active {
                s.status = p.status;
            }
            s.stale |= p.version != Some(i64::from(l.kit.version.0));
            s.totals
                .push(ledger::Totals { posted: ledger::money(p.posted), pending: ledger::money(p.pending) });
            let (Some(from), Some((_, days))) = (reach.days_from, self.days.get(l.profile.as_str())) else {
                continue;
            };
            for (day, (posted, pending)) in days.range(from..) {
                let (posted, pending) = (ledger::money(*posted), ledger::money(*pending));
                s.days.push(DayTotals { level, day: *day, posted, pending });
            }
        }
        if let Some(t) = &self.tenant {
            s.credit = ledger::money(t.credit).saturating_sub(ledger::money(t.credit_pending));
            s.clock = t.clock.clone();
        }
        let counted = reach.windows.iter().filter_map(|k| self.windows.get(k).map(|n| (k, *n)));
        s.counts = counted.filter(|(_, n)| *n > 0).map(|(k, n)| (k.clone(), n)).collect();
        Ok(s)
    }
}

/// A call's writes, kept: its log entry's place among the batch's appended entries, its
/// inserts (its hold and ledger entries) and the moves of its totals.
pub(crate) struct Kept {
    pub entry: usize,
    pub inserts: Vec<Statement>,
    pub moves: Moves,
}

/// The runner thread's book for the batch in hand.
#[derive(Default)]
struct Book {
    /// Whether this batch keeps writes (PostgreSQL, jobs not each in a savepoint).
    deferring: bool,
    /// What was read, per tenant: the database as it was before the kept writes.
    read: HashMap<TenantId, Read>,
    kept: Vec<Kept>,
    /// Set while a read the book corrects itself is sent: no flush before it.
    reading: bool,
}

thread_local! {
    static BOOK: RefCell<Book> = RefCell::new(Book::default());
}

/// A batch begins: nothing read, nothing kept; `deferring` as [`crate::store::postgres::Journal::begin`].
pub(crate) fn begin(deferring: bool) {
    BOOK.with(|b| *b.borrow_mut() = Book { deferring, ..Book::default() });
}

/// Whether a governed call carried out now keeps its writes here ([`keep`]).
pub(crate) fn deferring() -> bool {
    BOOK.with(|b| b.borrow().deferring)
}

/// Keeps a call's writes for the batch's one write.
pub(crate) fn keep(k: Kept) {
    BOOK.with(|b| b.borrow_mut().kept.push(k));
}

/// Forgets the writes of the calls whose log entries were at or after `mark` (their job was
/// undone), and what was read: it may have counted them.
pub(crate) fn undo(mark: usize) {
    BOOK.with(|b| {
        let mut b = b.borrow_mut();
        b.kept.retain(|k| k.entry < mark);
        b.read.clear();
    });
}

/// Runs `f`, a read whose answer the book corrects for the kept writes itself (a standing
/// read) or which they cannot change (a chain head, when the tenant has no kept entry): the
/// kept writes are not written before it.
pub(crate) fn reading<T>(f: impl FnOnce() -> T) -> T {
    let was = BOOK.with(|b| std::mem::replace(&mut b.borrow_mut().reading, true));
    let out = f();
    BOOK.with(|b| b.borrow_mut().reading = was);
    out
}

/// The chain's standing as kept, with every kept move applied, if the book reaches it.
pub(crate) fn standing(tenant: &TenantId, links: &[Link], reach: &Reach) -> Option<Result<Standing>> {
    BOOK.with(|b| {
        let b = b.borrow();
        let read = b.read.get(tenant).filter(|r| b.deferring && r.covers(links, reach))?;
        Some(b.moved(tenant, read).standing(links, reach))
    })
}

/// Keeps what a standing read of `tenant` found, when the batch keeps writes.
pub(crate) fn remember(tenant: &TenantId, read: Read) {
    BOOK.with(|b| {
        let mut b = b.borrow_mut();
        if b.deferring {
            b.read.entry(tenant.clone()).or_default().merge(read);
        }
    });
}

impl Book {
    /// `read` with the moves of `tenant`'s kept writes applied.
    fn moved(&self, tenant: &TenantId, read: &Read) -> Read {
        let mut r = read.clone();
        for k in self.kept.iter().filter(|k| &k.moves.tenant == tenant) {
            r.apply(&k.moves);
        }
        r
    }
}

/// Reads in one statement per tenant what the batch's calls said they will read (`hints`
/// that are [`Want`]s), and keeps it.
pub(crate) fn prefetch(tx: &dyn Tx, hints: &[&(dyn std::any::Any + Send)]) -> Result<()> {
    if !deferring() {
        return Ok(());
    }
    type Wanted<'a> = (Vec<&'a str>, Option<NaiveDate>, Vec<String>);
    let mut wants: BTreeMap<&TenantId, Wanted> = BTreeMap::new();
    for w in hints.iter().filter_map(|h| h.downcast_ref::<Want>()) {
        let (profiles, from, windows) = wants.entry(&w.tenant).or_default();
        for p in &w.profiles {
            if !profiles.contains(&p.as_str()) {
                profiles.push(p.as_str());
            }
        }
        *from = match (*from, w.days_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for k in &w.windows {
            if !windows.contains(k) {
                windows.push(k.clone());
            }
        }
    }
    for (tenant, (ids, days_from, windows)) in wants {
        let reach = Reach { days_from, windows: &windows };
        let rows = reading(|| super::standing_rows(tx, tenant, &ids, &reach))?;
        remember(tenant, Read::from_rows(&ids, &reach, &rows)?);
    }
    Ok(())
}

/// Before a job's statement: the kept writes go first, unless the statement is a read the
/// book corrects itself ([`reading`]); a statement that may write forgets what was read.
pub(crate) fn before_statement(tx: &dyn Tx, sql_may_write: bool) -> Result<()> {
    if BOOK.with(|b| b.borrow().reading) {
        return Ok(());
    }
    flush(tx)?;
    if sql_may_write {
        BOOK.with(|b| b.borrow_mut().read.clear());
    }
    Ok(())
}

/// Writes every kept write in one statement, and gives their log entries the sequence
/// numbers PostgreSQL handed out. What was read is moved as the rows were.
pub(crate) fn flush(tx: &dyn Tx) -> Result<()> {
    let kept = BOOK.with(|b| {
        let mut b = b.borrow_mut();
        let kept = std::mem::take(&mut b.kept);
        for k in &kept {
            if let Some(r) = b.read.get_mut(&k.moves.tenant) {
                r.apply(&k.moves);
            }
        }
        kept
    });
    if kept.is_empty() {
        return Ok(());
    }
    let lost =
        || crate::error::Error::internal("book_lost_entry", "a kept call's log entry is missing; try again");
    let (mut before, mut moves, mut entries, mut places) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for k in kept {
        entries.push(activity::appended::at(k.entry).ok_or_else(lost)?);
        places.push(k.entry);
        before.extend(k.inserts);
        moves.push(k.moves);
    }
    let mut before = ledger::inserted_together(before);
    before.extend(ledger::moved_together(&moves));
    before.extend(super::windows::counted_together(&moves));
    let seqs = reading(|| activity::insert_many(tx, &before, &entries))?;
    for (place, seq) in places.into_iter().zip(seqs) {
        activity::appended::set_seq(place, seq);
    }
    Ok(())
}

/// The journal of a PostgreSQL batch ([`crate::store::postgres::Journal`]): the book's part
/// (keep, read ahead, write before a job's statement and before the log's announcement),
/// around the log's own (`inner`, which keeps the appended entries and announces them).
pub(crate) struct Keeping<J> {
    inner: J,
}

impl<J> Keeping<J> {
    pub(crate) fn new(inner: J) -> Keeping<J> {
        Keeping { inner }
    }
}

/// A gateway error as the runner hears it: the store's own error as it was, else internal.
fn to_store(e: crate::error::Error) -> crate::store::Error {
    match e {
        crate::error::Error::Store(e) => e,
        e => crate::store::Error::internal("book_failed", e.to_string()),
    }
}

impl<J: crate::store::postgres::Journal> crate::store::postgres::Journal for Keeping<J> {
    fn begin(&self, deferring: bool) {
        self.inner.begin(deferring);
        begin(deferring);
    }

    fn prefetch(&self, tx: &dyn Tx, hints: &[&(dyn std::any::Any + Send)]) -> crate::store::Result<()> {
        prefetch(tx, hints).map_err(to_store)
    }

    fn before_statement(&self, tx: &dyn Tx, sql: &str) -> crate::store::Result<()> {
        let read = sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"));
        before_statement(tx, !read).map_err(to_store)
    }

    fn mark(&self) -> usize {
        self.inner.mark()
    }

    fn undo(&self, mark: usize) {
        self.inner.undo(mark);
        undo(mark);
    }

    fn finish(&self, tx: &dyn Tx) -> crate::store::Result<()> {
        flush(tx).map_err(to_store)?;
        self.inner.finish(tx)
    }
}
