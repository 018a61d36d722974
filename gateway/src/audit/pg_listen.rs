//! PostgreSQL's side of the live bus ([`crate::audit::bus`]): every instance hears every commit,
//! its own included, from one `LISTEN` connection, in commit order.
//!
//! A batch of jobs that appended to the log sends, as the last statements of its
//! transaction ([`Announcer`]), one `pg_notify` per tenant on [`CHANNEL`] carrying the entries (or, when they do not fit a notification, their tenant
//! and sequence numbers, read back by the listener). PostgreSQL delivers notifications when
//! the transaction commits, in commit order, and drops those of a transaction that rolled
//! back, so the bus carries committed entries only.
//!
//! Order and Last-Event-ID: a tenant's appends take turns under an advisory lock held until
//! commit ([`crate::audit::activity`]), so within a tenant sequence numbers follow commit order, and
//! each tenant's stream resumes by sequence number without loss or repeats. Across tenants
//! they need not, so marks of what went out are kept per tenant.
//!
//! Reconnects: a notification sent while the listener was down is lost, so after every
//! (re)connect, once `LISTEN` is in place, the listener re-reads the durable tail (entries
//! above the newest it published, less a slack for transactions still open then) and
//! publishes what each tenant's mark has not passed. Entries from another instance that
//! change who may do what tick the caches' invalidation, as on SQLite.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::audit::activity::{self, Entry, appended};
use crate::audit::bus::Bus;
use crate::error::Result;
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::store::postgres::Postgres;

/// The channel every instance listens on.
pub const CHANNEL: &str = "naive_activity";
/// PostgreSQL refuses a payload of 8,000 bytes or more.
const MAX_PAYLOAD: usize = 7_900;
/// After a reconnect, how far below the newest published sequence number the re-read starts:
/// a transaction holds a number it took from when it inserts until it commits.
const SLACK: i64 = 10_000;

/// One commit's notification: borrowed from the job when sent, owned when received.
#[derive(Serialize, Deserialize)]
struct Note<'a> {
    /// The instance whose job committed.
    from: Cow<'a, str>,
    /// The entries, when they fit.
    #[serde(default)]
    entries: Cow<'a, [Entry]>,
    /// Otherwise the tenant and sequence numbers to read back.
    #[serde(default)]
    tenant: Option<TenantId>,
    #[serde(default)]
    seqs: Vec<i64>,
}

/// What a PostgreSQL batch tells the log: it keeps the entries the batch's jobs append
/// (dropping those of a job whose writes were undone) and announces them, one notification
/// per tenant, as the batch's last statements before COMMIT.
pub(crate) struct Announcer {
    instance: std::sync::Arc<str>,
}

impl Announcer {
    pub(crate) fn new(instance: std::sync::Arc<str>) -> Announcer {
        Announcer { instance }
    }
}

impl crate::store::postgres::Journal for Announcer {
    fn begin(&self, _: bool) {
        appended::start();
    }

    fn mark(&self) -> usize {
        appended::len()
    }

    fn undo(&self, mark: usize) {
        appended::truncate(mark);
    }

    fn finish(&self, tx: &dyn Tx) -> crate::store::Result<()> {
        let mut entries = appended::take();
        // A stable sort: each tenant's entries stay in append order, which is its chain's.
        entries.sort_by(|a, b| a.tenant_id.as_str().cmp(b.tenant_id.as_str()));
        for tenant in entries.chunk_by(|a, b| a.tenant_id == b.tenant_id) {
            announce(tx, &self.instance, tenant).map_err(|e| {
                crate::store::Error::internal(
                    "announce_failed",
                    format!("the log's notification failed: {e}"),
                )
            })?;
        }
        Ok(())
    }
}

/// Sends, inside the job's transaction, the notification of what it appended (one tenant's
/// entries).
pub(crate) fn announce(tx: &dyn Tx, from: &str, entries: &[Entry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let note = Note { from: from.into(), entries: entries.into(), tenant: None, seqs: Vec::new() };
    let mut payload = serde_json::to_string(&note).expect("entries serialize");
    if payload.len() > MAX_PAYLOAD {
        let seqs = entries.iter().map(|e| e.seq).collect();
        let note = Note {
            from: from.into(),
            entries: Cow::Borrowed(&[]),
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
    pg: Postgres,
    bus: Bus,
    instance: String,
    marks: HashMap<TenantId, i64>,
    /// The newest sequence number published, for the re-read after a reconnect.
    newest: i64,
    /// The log's newest entry when the listener first connected: what a re-read finds at or
    /// below it, of a tenant this instance has not heard of since, is history.
    floor: i64,
}

/// Starts the listener task of the instance `instance`; it stops when the store closes.
pub(crate) fn start(pg: Postgres, bus: Bus, instance: String) {
    tokio::spawn(async move {
        let mut l = Listener { pg, bus, instance, marks: HashMap::new(), newest: -1, floor: 0 };
        l.run().await;
    });
}

impl Listener {
    async fn run(&mut self) {
        let mut pause = Duration::from_millis(50);
        while !self.pg.is_closed() {
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
        let mut notes = self.pg.listen(CHANNEL).await?;
        self.reread_tail().await?;
        while let Some(payload) = notes.next().await? {
            match serde_json::from_str::<Note>(&payload) {
                Ok(note) => self.deliver(note).await?,
                Err(e) => tracing::error!(error = %e, "an activity notification did not parse"),
            }
        }
        Ok(())
    }

    async fn deliver(&mut self, note: Note<'_>) -> Result<()> {
        let elsewhere = note.from != self.instance;
        let entries = match note.tenant {
            Some(tenant) => self.read(&tenant, &note.seqs).await?,
            None => note.entries.into_owned(),
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
        let rows = self.pg.rows(&sql, &[tenant, lo, hi]).await?;
        let entries = activity::entries(&rows)?;
        Ok(entries.into_iter().filter(|e| seqs.contains(&e.seq)).collect())
    }

    /// What committed while no notification could arrive. On the first connect that is
    /// nothing: what the log held is history, read from the log by whoever wants it.
    async fn reread_tail(&mut self) -> Result<()> {
        if self.newest < 0 {
            let rows =
                self.pg.rows("SELECT CAST(COALESCE(MAX(seq), 0) AS BIGINT) FROM activity", &[]).await?;
            self.newest = rows.first().map(|r| r.get::<i64>(0)).transpose()?.unwrap_or(0);
            self.floor = self.newest;
            return Ok(());
        }
        let mut after = (self.newest - SLACK).max(0);
        loop {
            let sql = activity::select_columns("seq > ? ORDER BY seq LIMIT 512");
            let rows = self.pg.rows(&sql, &[&after]).await?;
            let page = activity::entries(&rows)?;
            let Some(last) = page.last().map(|e| e.seq) else { return Ok(()) };
            for e in page {
                let history = e.seq <= self.floor && !self.marks.contains_key(&e.tenant_id);
                if !history {
                    // Whoever committed it, it may have changed access: caches drop.
                    self.publish(e, true);
                }
            }
            after = last;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use policy::Money;
    use serde_json::json;

    use crate::Gateway;
    use crate::audit::bus::BusItem;
    use crate::domain::calls::ActionCall;
    use crate::testing::Cluster;

    /// A tenant with one agent on the default kit; its key token.
    async fn tenant_with_agent(gw: &Gateway, name: &str) -> (crate::TenantId, String) {
        let (t, _) = gw.create_tenant(name, Money::dollars(10), None).await.unwrap();
        let p = gw.create_profile(&t.id, "bot", None, None, "Default").await.unwrap();
        (t.id.clone(), gw.issue_key(&t.id, &p.id, "test").await.unwrap().1.token)
    }

    async fn read(gw: &Gateway, token: &str, n: usize) {
        let call = ActionCall {
            token: token.to_string(),
            action: "web.read".into(),
            args: json!({ "url": format!("https://example.test/{n}") }),
            idempotency_key: None,
        };
        gw.perform(call).await.unwrap();
    }

    /// Kills every listening connection; the listeners reconnect and re-read the tail.
    async fn cut_listeners(gw: &Gateway) {
        let sql = "SELECT CAST(COUNT(pg_terminate_backend(pid)) AS BIGINT) FROM pg_stat_activity \
                   WHERE datname = current_database() AND query LIKE 'LISTEN%'";
        let (n,): (i64,) = gw.store().one(sql, &[]).await.unwrap();
        assert!(n >= 1, "a listener was connected");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_listener_that_lost_its_connection_delivers_each_commit_once_and_no_history() {
        let cluster = Cluster::get();
        let url = cluster.fresh_database().await;
        let a = Gateway::open(&url).await.unwrap();
        let (old, old_token) = tenant_with_agent(&a, "Old").await;
        read(&a, &old_token, 0).await;
        // B starts after Old's entries: they are history to it.
        let b = Gateway::open(&url).await.unwrap();
        let (live, token) = tenant_with_agent(&a, "Live").await;
        let (mut on_b, mut old_on_b) = (b.bus().subscribe(live.clone()), b.bus().subscribe(old));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let start = a.log(&live, &Default::default()).await.unwrap()[0].seq;
        for round in 0..3 {
            cut_listeners(&a).await;
            let calls: Vec<_> = (0..20)
                .map(|i| {
                    let (a, token) = (a.clone(), token.clone());
                    tokio::spawn(async move { read(&a, &token, round * 100 + i).await })
                })
                .collect();
            for c in calls {
                c.await.unwrap();
            }
        }
        let q =
            crate::audit::activity::LogQuery { after: Some(start), limit: Some(500), ..Default::default() };
        let logged: Vec<i64> = a.log(&live, &q).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(logged.len(), 60, "every call is in the log");
        let mut seen = Vec::new();
        while seen.len() < logged.len() {
            match tokio::time::timeout(Duration::from_secs(10), on_b.next()).await {
                Ok(Some(BusItem::Event(p))) if p.entry.seq > start => seen.push(p.entry.seq),
                Ok(Some(BusItem::Event(_))) => {}
                other => panic!("after {} of {} entries B's bus gave {other:?}", seen.len(), logged.len()),
            }
        }
        assert_eq!(seen, logged, "B delivered every commit once, in order, across three reconnects");
        let history = tokio::time::timeout(Duration::from_millis(300), old_on_b.next()).await;
        assert!(history.is_err(), "a re-read published history as live: {history:?}");
    }
}
