//! The in-process event bus that feeds live subscribers (SSE, the console feed).
//!
//! Bounded: it keeps the last [`BUS_CAPACITY`] events. Writers never wait for readers; a
//! subscriber that falls further behind than that gets one [`BusItem::Lagged`] marker and its
//! subscription ends, so it can reconnect and resume from the log by event id. Event ids are
//! the activity log's sequence numbers, so they increase and survive restarts.
//!
//! Order: the writer thread publishes what each transaction appended right after its
//! COMMIT and before it answers the callers ([`crate::store::writer`]), so the bus carries every
//! committed entry exactly once, in the log's order. (Callers publishing after they were
//! woken raced each other, and a subscriber that skips what it has seen lost the entry that
//! came second.)
//!
//! Across processes: another instance on the same database commits entries this one's writer
//! never saw. A follower thread notices any commit by another connection (SQLite's
//! `PRAGMA data_version`, every [`FOLLOW_INTERVAL`]) and publishes what it finds after the
//! newest entry published here; the writer, before publishing its own commit, first
//! publishes whatever came before it. Both do so holding the one mark of what went out last,
//! so every instance's bus carries every committed entry once, in log order, whoever
//! committed it. Entries that came from elsewhere are marked, so caches can drop what another
//! instance changed ([`crate::Gateway`]).
//!
//! Fan-out is cheap: an event is serialized to JSON at most once, by the first subscriber
//! that needs it (never on the writer's thread), and every subscriber shares it (an `Arc`),
//! so a thousand subscribers cost a thousand pointer copies, not a thousand deep copies and
//! serializations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::broadcast;

use crate::audit::activity::{self, Entry, Kind};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::store::Store;

/// Events kept for slow subscribers before they are dropped.
pub const BUS_CAPACITY: usize = 1_024;
/// How often the follower looks for commits by other connections.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(20);
/// Entries read from the log per statement when catching up.
const CATCH_UP_PAGE: i64 = 512;

#[derive(Clone, Debug)]
pub struct Bus {
    tx: broadcast::Sender<Arc<Published>>,
    /// The newest sequence number published. Whoever publishes holds it, so entries go out
    /// once each and in log order.
    published: Arc<Mutex<i64>>,
    /// Counts entries from elsewhere that change who may do what ([`changes_access`]).
    access_changes: Arc<tokio::sync::watch::Sender<u64>>,
}

/// The kinds [`changes_access`] names.
fn access_kinds() -> Vec<Kind> {
    Kind::ALL.iter().copied().filter(|k| changes_access(*k)).collect()
}

/// Whether cached keys, kits, ancestries and connectors may be stale after an entry of this
/// kind. Every kind is named, so a new one must say.
pub const fn changes_access(k: Kind) -> bool {
    match k {
        Kind::Connector
        | Kind::Console
        | Kind::Key
        | Kind::KitEdit
        | Kind::Profile
        | Kind::Revoke
        | Kind::Settings
        | Kind::Vault => true,
        Kind::Action
        | Kind::Refusal
        | Kind::Park
        | Kind::Hold
        | Kind::Approval
        | Kind::Writeback
        | Kind::Proposal
        | Kind::Shadow => false,
    }
}

/// A committed entry as subscribers get it: the entry, and its JSON made once when first
/// asked for.
#[derive(Debug)]
pub struct Published {
    pub entry: Entry,
    /// Committed by another connection (another instance), not by this process's writer.
    pub elsewhere: bool,
    json: OnceLock<String>,
}

impl Published {
    /// The entry as JSON, shared by every subscriber.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| serde_json::to_string(&self.entry).expect("entries serialize"))
    }
}

impl PartialEq for Published {
    fn eq(&self, other: &Self) -> bool {
        self.entry == other.entry
    }
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            tx: broadcast::channel(BUS_CAPACITY).0,
            published: Arc::default(),
            access_changes: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }
}

/// What a subscription yields.
#[derive(Clone, Debug, PartialEq)]
pub enum BusItem {
    Event(Arc<Published>),
    /// The subscriber fell behind by `missed` events and is being dropped.
    Lagged {
        missed: u64,
    },
}

impl Bus {
    /// Publishes from `seq` on: what the log held before is history, read from the log.
    pub(crate) fn start_after(&self, seq: i64) {
        *self.published.lock().expect("bus mark lock") = seq;
    }

    /// Publishes what one commit of this process's writer appended (`own`, in log order),
    /// after whatever other connections committed before it that has not gone out yet, read
    /// through `c`. Never blocks on subscribers.
    pub(crate) fn publish_commit(&self, c: &dyn Tx, own: Vec<Entry>) {
        let mut last = self.published.lock().expect("bus mark lock");
        if let Some(first) = own.first()
            && first.seq > *last + 1
            && let Err(e) = self.catch_up(c, &mut last, first.seq)
        {
            tracing::error!(error = %e, "could not read entries committed elsewhere; the stream skips them");
        }
        for entry in own {
            if entry.seq > *last {
                *last = entry.seq;
                self.send(entry, false);
            }
        }
    }

    /// Publishes everything committed after the newest entry published, read through `c`.
    pub(crate) fn follow(&self, c: &dyn Tx) -> Result<()> {
        let mut last = self.published.lock().expect("bus mark lock");
        self.catch_up(c, &mut last, i64::MAX)
    }

    fn catch_up(&self, c: &dyn Tx, last: &mut i64, before: i64) -> Result<()> {
        if self.tx.receiver_count() == 0 {
            // Nobody to deliver to (a subscriber arriving now reads these from the log after
            // subscribing): move the mark, and tell the caches if access changed.
            let (newest, changes) = activity::skim_between(c, *last, before, &access_kinds())?;
            if changes > 0 {
                self.access_changes.send_modify(|n| *n += 1);
            }
            *last = newest.unwrap_or(*last);
            return Ok(());
        }
        loop {
            let page = activity::committed_between(c, *last, before, CATCH_UP_PAGE)?;
            let full = page.len() as i64 == CATCH_UP_PAGE;
            for entry in page {
                *last = entry.seq;
                self.send(entry, true);
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// Sends one committed entry to the subscribers; `elsewhere` when another instance
    /// committed it.
    pub(crate) fn send(&self, entry: Entry, elsewhere: bool) {
        if elsewhere && changes_access(entry.kind) {
            self.access_changes.send_modify(|n| *n += 1);
        }
        // No subscribers is fine.
        let _ = self.tx.send(Arc::new(Published { entry, elsewhere, json: OnceLock::new() }));
    }

    /// Ticks whenever an entry committed elsewhere changed who may do what: a key, kit,
    /// profile, revoke or token entry. A watch, not a subscription, so the process's caches
    /// cost nothing per entry.
    pub(crate) fn access_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.access_changes.subscribe()
    }

    /// A subscription to one tenant's events.
    pub fn subscribe(&self, tenant: TenantId) -> Subscription {
        Subscription { rx: self.tx.subscribe(), tenant, done: false }
    }

    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }
}

pub struct Subscription {
    rx: broadcast::Receiver<Arc<Published>>,
    tenant: TenantId,
    done: bool,
}

impl Subscription {
    /// The next event of this tenant, a final `Lagged`, or `None` when the bus closed.
    pub async fn next(&mut self) -> Option<BusItem> {
        if self.done {
            return None;
        }
        loop {
            match self.rx.recv().await {
                Ok(p) if p.entry.tenant_id == self.tenant => return Some(BusItem::Event(p)),
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    self.done = true;
                    return Some(BusItem::Lagged { missed });
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// The follower thread ([`Bus`]'s module doc); it stops when this handle drops.
#[derive(Debug)]
pub(crate) struct Follower {
    stop: Arc<AtomicBool>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts following commits by other connections to `store`'s database onto `bus`. An
/// in-memory database has no other process, so nothing follows it.
pub(crate) fn start_follower(store: &Store, bus: Bus) -> Result<Option<Follower>> {
    if !store.is_shared_across_processes() {
        return Ok(None);
    }
    let conn = store.sqlite_side("the follower")?.open_follower_connection()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::Builder::new()
        .name("naive-follower".into())
        .spawn(move || follow_loop(conn.as_ref(), &bus, &stopping))
        .map_err(|e| {
            Error::internal("follower_start_failed", format!("cannot start the follower thread: {e}"))
        })?;
    Ok(Some(Follower { stop }))
}

fn follow_loop(conn: &dyn Tx, bus: &Bus, stop: &AtomicBool) {
    let mut seen = -1;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(FOLLOW_INTERVAL);
        let version =
            conn.row("PRAGMA data_version", &[]).and_then(|r| r.map_or(Ok(-1), |r| r.get::<i64>(0)));
        match version {
            Ok(v) if v == seen => continue,
            Ok(v) => seen = v,
            Err(e) => {
                tracing::warn!(error = %e, "the follower cannot read the database; retrying");
                continue;
            }
        }
        if let Err(e) = bus.follow(conn) {
            tracing::warn!(error = %e, "the follower could not read new entries; retrying");
            seen = -1;
        }
    }
}

/// The writer's transactions, as the log sees them: each tenant's cached chain head and the
/// entries the open batch appended ([`crate::audit::activity`]) live on the writer's thread; what
/// commits goes out on the bus.
impl crate::store::writer::Journal for Bus {
    fn opened(&self, conn: &dyn Tx) -> ::store::Result<()> {
        // What the log holds now is history; the bus carries what commits from here on.
        self.start_after(activity::last_seq(conn)?);
        Ok(())
    }

    fn begin(&self, stale: bool) {
        if stale {
            activity::forget_heads();
        }
        activity::appended::start();
    }

    fn mark(&self) -> usize {
        activity::appended::len()
    }

    fn undo(&self, mark: usize) {
        activity::forget_heads();
        activity::appended::truncate(mark);
    }

    fn committed(&self, conn: &dyn Tx) {
        self.publish_commit(conn, activity::appended::take());
    }
}
