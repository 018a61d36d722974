//! PostgreSQL's side of the live bus ([`crate::events`]): every instance hears every commit,
//! its own included, from one `LISTEN` connection, in commit order.
//!
//! A job that appended to the log sends, inside its transaction, one `pg_notify` on
//! [`CHANNEL`] carrying the entries (or, when they do not fit a notification, their tenant
//! and sequence numbers, read back by the listener). PostgreSQL delivers notifications when
//! the transaction commits, in commit order, and drops those of a transaction that rolled
//! back, so the bus carries committed entries only.
//!
//! Order and Last-Event-ID: a tenant's appends take turns under an advisory lock held until
//! commit ([`crate::activity`]), so within a tenant sequence numbers follow commit order, and
//! each tenant's stream resumes by sequence number without loss or repeats. Across tenants
//! they need not, so marks of what went out are kept per tenant.
//!
//! Reconnects: a notification sent while the listener was down is lost, so after every
//! (re)connect, once `LISTEN` is in place, the listener re-reads the durable tail (entries
//! above the newest it published, less a slack for transactions still open then) and
//! publishes what each tenant's mark has not passed. Entries from another instance that
//! change who may do what tick the caches' invalidation, as on SQLite.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgListener, PgPool};

use crate::activity::{self, Entry};
use crate::error::Result;
use crate::events::Bus;
use crate::ids::TenantId;
use crate::sql::Tx;

/// The channel every instance listens on.
pub const CHANNEL: &str = "naive_activity";
/// PostgreSQL refuses a payload of 8,000 bytes or more.
const MAX_PAYLOAD: usize = 7_900;
/// After a reconnect, how far below the newest published sequence number the re-read starts:
/// a transaction holds a number it took from when it inserts until it commits.
const SLACK: i64 = 10_000;

/// One commit's notification.
#[derive(Serialize, Deserialize)]
struct Note {
    /// The instance whose job committed.
    from: String,
    /// The entries, when they fit.
    #[serde(default)]
    entries: Vec<Entry>,
    /// Otherwise the tenant and sequence numbers to read back.
    #[serde(default)]
    tenant: Option<TenantId>,
    #[serde(default)]
    seqs: Vec<i64>,
}

/// Sends, inside the job's transaction, the notification of what it appended.
pub(crate) fn announce(tx: &dyn Tx, from: &str, entries: &[Entry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let note = Note { from: from.to_string(), entries: entries.to_vec(), tenant: None, seqs: Vec::new() };
    let mut payload = serde_json::to_string(&note).expect("entries serialize");
    if payload.len() > MAX_PAYLOAD {
        let seqs = entries.iter().map(|e| e.seq).collect();
        let note = Note {
            from: from.to_string(),
            entries: Vec::new(),
            tenant: Some(entries[0].tenant_id.clone()),
            seqs,
        };
        payload = serde_json::to_string(&note).expect("numbers serialize");
    }
    tx.exec("SELECT pg_notify(?, ?)", &[&CHANNEL, &payload])?;
    Ok(())
}

/// The listener's state: what went out, per tenant.
struct Listener {
    pool: PgPool,
    bus: Bus,
    instance: String,
    marks: HashMap<TenantId, i64>,
    /// The newest sequence number published, for the re-read after a reconnect.
    newest: i64,
}

/// Starts the listener task of the instance `instance`; it stops when the pool closes.
pub(crate) fn start(pool: PgPool, bus: Bus, instance: String) {
    tokio::spawn(async move {
        let mut l = Listener { pool, bus, instance, marks: HashMap::new(), newest: -1 };
        l.run().await;
    });
}

impl Listener {
    async fn run(&mut self) {
        let mut pause = Duration::from_millis(50);
        while !self.pool.is_closed() {
            match self.session().await {
                Ok(()) => pause = Duration::from_millis(50),
                Err(e) => {
                    tracing::warn!(error = %e, "the activity listener lost PostgreSQL; reconnecting");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// One connection's life: LISTEN, re-read the tail, then every notification until the
    /// connection drops.
    async fn session(&mut self) -> Result<()> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.ignore_pool_close_event(false);
        listener.listen(CHANNEL).await?;
        self.reread_tail().await?;
        while let Some(n) = listener.try_recv().await? {
            match serde_json::from_str::<Note>(n.payload()) {
                Ok(note) => self.deliver(note).await?,
                Err(e) => tracing::error!(error = %e, "an activity notification did not parse"),
            }
        }
        Ok(())
    }

    async fn deliver(&mut self, note: Note) -> Result<()> {
        let elsewhere = note.from != self.instance;
        let entries = match note.tenant {
            Some(tenant) => self.read(&tenant, &note.seqs).await?,
            None => note.entries,
        };
        for e in entries {
            self.publish(e, elsewhere);
        }
        Ok(())
    }

    /// Publishes `e` unless its tenant's stream is already past it.
    fn publish(&mut self, e: Entry, elsewhere: bool) {
        let mark = self.marks.entry(e.tenant_id.clone()).or_insert(0);
        if e.seq <= *mark {
            return;
        }
        *mark = e.seq;
        self.newest = self.newest.max(e.seq);
        self.bus.send(e, elsewhere);
    }

    /// Entries `seqs` of `tenant`, in log order.
    async fn read(&self, tenant: &TenantId, seqs: &[i64]) -> Result<Vec<Entry>> {
        let (Some(lo), Some(hi)) = (seqs.iter().min(), seqs.iter().max()) else { return Ok(Vec::new()) };
        let sql = activity::select_columns("tenant_id = ? AND seq >= ? AND seq <= ? ORDER BY seq");
        let rows = crate::postgres::rows_on(&self.pool, &sql, &[tenant, lo, hi]).await?;
        let entries = activity::entries(&rows)?;
        Ok(entries.into_iter().filter(|e| seqs.contains(&e.seq)).collect())
    }

    /// What committed while no notification could arrive. On the first connect that is
    /// nothing: what the log held is history, read from the log by whoever wants it.
    async fn reread_tail(&mut self) -> Result<()> {
        if self.newest < 0 {
            let rows = crate::postgres::rows_on(
                &self.pool,
                "SELECT CAST(COALESCE(MAX(seq), 0) AS BIGINT) FROM activity",
                &[],
            )
            .await?;
            self.newest = rows.first().map(|r| r.get::<i64>(0)).transpose()?.unwrap_or(0);
            return Ok(());
        }
        let mut after = (self.newest - SLACK).max(0);
        loop {
            let sql = activity::select_columns("seq > ? ORDER BY seq LIMIT 512");
            let rows = crate::postgres::rows_on(&self.pool, &sql, &[&after]).await?;
            let page = activity::entries(&rows)?;
            let Some(last) = page.last().map(|e| e.seq) else { return Ok(()) };
            for e in page {
                let elsewhere = true;
                self.publish(e, elsewhere);
            }
            after = last;
        }
    }
}
