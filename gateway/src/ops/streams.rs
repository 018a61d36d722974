//! Log streams as operations: adding, listing and removing a tenant's streams, and the worker
//! that sends each stream's backlog (docs/streams.md). The cursor and its lease are
//! [`crate::delivery::streams`]'s.

use std::time::{Duration as StdDuration, Instant};

use chrono::{Duration, Utc};
use tokio::task::JoinSet;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::outbox::delivery::{DeliveryHandle, POLL_MS, RENEW_EVERY};
use crate::delivery::streams::send::{Sent, send};
use crate::delivery::streams::{
    self, CreatedStream, DeadLetter, Stream, StreamRow, StreamSpec, check, delete_in, insert, make_room,
};
use crate::error::{Error, Result};
use crate::ids::TenantId;

/// How many streams send at once, beside the outbox's deliveries.
const STREAMS_IN_FLIGHT: usize = 16;
/// How long a stream sends before it lets the others have a turn.
const TURN: StdDuration = StdDuration::from_secs(5);
/// A retried dead letter the receiver refused again.
fn refused(code: &str) -> Error {
    Error::Conflict {
        code: "dead_letter_refused",
        message: format!("the receiver refused the entry again ({code}); it stays a dead letter"),
    }
}

/// Acknowledged batches in a row after which a stream shrunk by a 413 tries twice the size.
const GROW_AFTER: u32 = 64;

impl Gateway {
    /// Adds a stream; its signing secret is in the answer, and nowhere ever again.
    pub async fn create_stream(
        &self,
        tenant: &TenantId,
        spec: StreamSpec,
        actor: &str,
        via: Transport,
    ) -> Result<CreatedStream> {
        let url = check(&spec)?;
        self.check_egress(&url).await?;
        let id = format!("lst_{}", uuid::Uuid::now_v7().simple());
        // The receiver's token as given, or a signing secret made here (and shown once).
        let (secret, shown) = match spec.token.clone() {
            Some(token) => (token, false),
            None => (crate::delivery::webhooks::new_secret(), true),
        };
        let secret_name = format!("stream-{id}");
        let (t, i, a, s) = (tenant.clone(), id.clone(), actor.to_string(), secret_name.clone());
        self.write_with_secret(tenant, (&secret_name, &secret), (actor, via), move |c| {
            make_room(c, &t)?;
            insert(c, &t, &i, &spec, &s, &a, via)
        })
        .await?;
        let stream = self.stream(tenant, &id).await?;
        Ok(CreatedStream { stream, secret: shown.then_some(secret), secret_withheld: None })
    }

    /// The tenant's streams with their health, oldest first.
    pub async fn streams(&self, tenant: &TenantId) -> Result<Vec<Stream>> {
        let mut out = Vec::new();
        for row in streams::list(&self.store, tenant).await? {
            out.push(self.with_health(row).await?);
        }
        Ok(out)
    }

    /// One of the tenant's streams with its health.
    pub async fn stream(&self, tenant: &TenantId, id: &str) -> Result<Stream> {
        self.with_health(streams::one(&self.store, tenant, id).await?).await
    }

    async fn with_health(&self, s: StreamRow) -> Result<Stream> {
        let health = streams::health(&self.store, &s, self.now()).await?;
        Ok(Stream {
            id: s.id,
            kind: s.kind,
            format: s.format,
            auth: s.auth,
            url: s.url,
            max_entries: s.max_entries,
            secret_name: s.secret_name,
            created_by: s.created_by,
            created_at: s.created_at,
            health,
        })
    }

    /// The entries the stream's receiver refused for good, oldest first.
    pub async fn stream_dead_letters(&self, tenant: &TenantId, id: &str) -> Result<Vec<DeadLetter>> {
        streams::dead_letters(&self.store, &streams::one(&self.store, tenant, id).await?).await
    }

    /// Sends the dead letter `seq` of the stream `id` again, alone, now: forgotten once the
    /// receiver takes it; `dead_letter_refused` with the receiver's answer otherwise, and
    /// `entry_deleted` once retention deleted the entry (it is in the archive).
    pub async fn retry_stream_dead_letter(&self, tenant: &TenantId, id: &str, seq: i64) -> Result<()> {
        let s = streams::one(&self.store, tenant, id).await?;
        if !streams::is_dead_letter(&self.store, &s, seq).await? {
            return Err(Error::NotFound { what: "dead letter" });
        }
        let Some(entry) = streams::entry(&self.store, tenant, seq).await? else {
            return Err(Error::Conflict {
                code: "entry_deleted",
                message: format!(
                    "entry {seq} was deleted by retention; read it from the archive (GET /v1/tenant/archive)"
                ),
            });
        };
        let secret = self.open_secret(tenant, &s.secret_name).await?;
        match send(&self.egress, &s, &secret, std::slice::from_ref(&entry)).await {
            Sent::Acked => {
                let (t, i) = (tenant.clone(), id.to_string());
                self.write_for(tenant, move |c| streams::dead_letter_sent(c, &t, &i, seq)).await?;
                Ok(())
            }
            Sent::TooLarge => Err(refused("stream_entry_too_large")),
            Sent::Partly(why) => Err(refused(&why)),
            Sent::Failed(code) => Err(refused(&code)),
        }
    }

    /// Removes a stream and its secret; retention stops waiting for it.
    pub async fn delete_stream(
        &self,
        tenant: &TenantId,
        id: &str,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        let (t, i, a) = (tenant.clone(), id.to_string(), actor.to_string());
        self.write_for(tenant, move |c| delete_in(c, &t, &i, &a, via)).await
    }
}

impl Gateway {
    /// Starts the stream worker: every stream with entries after its cursor is claimed by one
    /// instance at a time and sent in order.
    pub fn start_streams(&self) -> DeliveryHandle {
        let gw = self.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move { gw.stream_until(stopped).await });
        DeliveryHandle { task: Some(task), stop }
    }

    async fn stream_until(&self, mut stopped: tokio::sync::watch::Receiver<bool>) {
        let owner = format!("lsw_{}", uuid::Uuid::new_v4().simple());
        let mut flying: JoinSet<()> = JoinSet::new();
        loop {
            while flying.try_join_next().is_some() {}
            let room = STREAMS_IN_FLIGHT - flying.len();
            let claimed = match self.claim_streams(&owner, room).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "claiming log streams failed; trying again shortly");
                    Vec::new()
                }
            };
            for s in claimed {
                let (gw, owner) = (self.clone(), owner.clone());
                flying.spawn(async move { gw.run_stream(s, &owner).await });
            }
            if *stopped.borrow() {
                break;
            }
            tokio::select! {
                Some(_) = flying.join_next(), if !flying.is_empty() => {}
                _ = tokio::time::sleep(StdDuration::from_millis(POLL_MS)) => {}
                _ = stopped.changed() => break,
            }
        }
        while flying.join_next().await.is_some() {}
    }

    /// Leases up to `room` due streams that have something to send to `owner`.
    async fn claim_streams(&self, owner: &str, room: usize) -> Result<Vec<StreamRow>> {
        if room == 0 {
            return Ok(Vec::new());
        }
        let due = streams::due(&self.store, Utc::now(), room).await?;
        if due.is_empty() {
            return Ok(Vec::new());
        }
        let (owner, lease) = (owner.to_string(), self.stream_lease());
        self.write(move |c| {
            let now = Utc::now();
            let mut leased = Vec::new();
            for id in &due {
                leased.extend(streams::lease(c, id, &owner, now, now + lease)?);
            }
            Ok(leased)
        })
        .await
    }

    /// Sends a leased stream's backlog a batch at a time until it is caught up, its turn is
    /// over or a batch fails; then gives the lease back.
    async fn run_stream(&self, mut s: StreamRow, owner: &str) {
        if let Err(e) = self.send_backlog(&mut s, owner).await {
            tracing::warn!(stream = %s.id, error = %e, "a log stream's round failed; its lease lapses and it is tried again");
        }
    }

    async fn send_backlog(&self, s: &mut StreamRow, owner: &str) -> Result<()> {
        let secret = match self.open_secret(&s.tenant, &s.secret_name).await {
            Ok(secret) => secret,
            Err(e) => {
                tracing::warn!(stream = %s.id, error = %e, "a log stream's signing secret does not open");
                return self.stream_failed(s, owner, "stream_secret_unavailable").await;
            }
        };
        let (started, mut in_a_row) = (Instant::now(), 0u32);
        loop {
            let entries = streams::page(&self.store, &s.tenant, s.acked_seq, s.batch_entries).await?;
            let Some(last) = entries.last().map(|e| e.seq) else {
                return self.stream_released(s, owner).await;
            };
            let sent = tokio::select! {
                sent = send(&self.egress, s, &secret, &entries) => sent,
                () = self.renew_stream(s, owner) => return Ok(()),
            };
            self.count_batch(&sent, entries.len());
            match sent {
                Sent::Acked | Sent::Partly(_) => {
                    in_a_row += 1;
                    if in_a_row >= GROW_AFTER && s.batch_entries < s.max_entries {
                        (s.batch_entries, in_a_row) = ((s.batch_entries * 2).min(s.max_entries), 0);
                    }
                    let rejected = match &sent {
                        Sent::Partly(why) => Some(why.clone()),
                        _ => None,
                    };
                    if !self.stream_acked(s, owner, last, entries.len() as i64, rejected).await? {
                        return Ok(());
                    }
                }
                Sent::TooLarge if s.batch_entries > 1 => {
                    (s.batch_entries, in_a_row) = (s.batch_entries / 2, 0);
                }
                Sent::TooLarge => {
                    if !self.stream_dead_letter(s, owner, last, "stream_entry_too_large").await? {
                        return Ok(());
                    }
                }
                Sent::Failed(code) => return self.stream_failed(s, owner, &code).await,
            }
            if started.elapsed() >= TURN {
                return self.stream_released(s, owner).await;
            }
        }
    }

    fn count_batch(&self, sent: &Sent, n: usize) {
        let Some(f) = self.metrics.get() else { return };
        let kind = match sent {
            Sent::Acked => "delivered",
            Sent::Partly(_) => "partly_rejected",
            Sent::TooLarge => "too_large",
            Sent::Failed(_) => "failed",
        };
        f.stream_batches.get_or_create(&crate::audit::metrics::One { kind }).inc();
        if matches!(sent, Sent::Acked | Sent::Partly(_)) {
            f.stream_entries_sent.inc_by(n as u64);
        }
    }

    /// A worker's lease on a stream: the outbox's (the hold lease, at least two seconds),
    /// renewed while a batch is in flight and extended by each acknowledged one, so a stopped
    /// instance's streams are taken over soon.
    fn stream_lease(&self) -> Duration {
        Duration::seconds(self.config.hold_lease_secs.max(2))
    }

    /// Renews `owner`'s lease on the stream every third of it; returns once the lease is lost.
    async fn renew_stream(&self, s: &StreamRow, owner: &str) {
        let lease = self.stream_lease();
        let every = (lease / RENEW_EVERY as i32).to_std().unwrap_or(StdDuration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            let (id, o) = (s.id.clone(), owner.to_string());
            match self.write(move |c| streams::renew(c, &id, &o, Utc::now() + lease)).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(stream = %s.id, error = %e, "renewing a log stream's lease failed"),
            }
        }
    }

    /// Moves the cursor past an acknowledged batch ending at `last`; false when this worker
    /// lost the stream's lease meanwhile.
    async fn stream_acked(
        &self,
        s: &mut StreamRow,
        owner: &str,
        last: i64,
        n: i64,
        rejected: Option<String>,
    ) -> Result<bool> {
        if let Some(why) = &rejected {
            tracing::warn!(stream = %s.id, last, error = %why, "a log stream's collector took a batch but rejected some of its records");
        }
        let (row, o, lease) = (s.clone(), owner.to_string(), self.stream_lease());
        let moved = self
            .write(move |c| {
                let now = Utc::now();
                streams::acked(c, &row, &o, (last, n), now, now + lease, rejected.as_deref())
            })
            .await?;
        if moved {
            // As the row now says: a failure after this batch is the first in a row again.
            (s.acked_seq, s.attempts) = (last, 0);
        }
        Ok(moved)
    }

    /// Keeps the one entry `seq` the receiver refused for good as a dead letter and moves the
    /// cursor past it; false when this worker lost the stream's lease meanwhile.
    async fn stream_dead_letter(&self, s: &mut StreamRow, owner: &str, seq: i64, code: &str) -> Result<bool> {
        tracing::warn!(stream = %s.id, seq, error = code, "a log stream's receiver refused an entry for good; it is kept as a dead letter");
        let (row, o, c) = (s.clone(), owner.to_string(), code.to_string());
        let kept = self.write_for(&s.tenant, move |t| streams::dead_letter(t, &row, &o, seq, &c)).await?;
        if kept {
            (s.acked_seq, s.attempts) = (seq, 0);
        }
        Ok(kept)
    }

    /// Gives the lease back: the stream is due again at once.
    async fn stream_released(&self, s: &StreamRow, owner: &str) -> Result<()> {
        let (row, o) = (s.clone(), owner.to_string());
        self.write(move |c| streams::release(c, &row, &o, Utc::now(), None)).await?;
        Ok(())
    }

    /// Records a failed attempt and gives the lease back until the backoff has passed.
    async fn stream_failed(&self, s: &StreamRow, owner: &str, code: &str) -> Result<()> {
        tracing::info!(stream = %s.id, error = code, "a log stream's batch failed; it is tried again later");
        let due = Utc::now() + self.config.outbox.backoff((s.attempts + 1) as u32);
        let (row, o, code) = (s.clone(), owner.to_string(), code.to_string());
        self.write(move |c| streams::release(c, &row, &o, due, Some(&code))).await?;
        Ok(())
    }
}
