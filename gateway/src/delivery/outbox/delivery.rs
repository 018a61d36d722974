//! The delivery worker: takes what is due from the outbox and hands it over.
//!
//! It wakes when this instance queues something ([`Gateway::wake_delivery`]), when a delivery
//! ends, and otherwise every [`POLL_MS`] (for what other instances queued, and for retries
//! that came due). It claims due queues ([`super::queue::claim`]) and delivers each on a task
//! of its own: a tenant's runtime gets its commands as one batch in order, an endpoint its
//! webhook messages one by one in order ([`crate::delivery::webhooks`]). The worker does not wait for a
//! delivery before claiming the next queues, so a slow runtime or endpoint holds up only its
//! own queue. At most [`MAX_IN_FLIGHT`] deliveries run at once per instance; each renews its
//! queue's lease every [`RENEW_EVERY`] fraction of it while it sends, so a slow receiver never
//! lets another instance send the same rows again.
//!
//! Each row's fate is recorded: delivered, rejected by the runtime, or a failed attempt that
//! backs off (after the last attempt, a dead letter). A delivery that cannot even start, for
//! its endpoint's secret or its tenant's connectors cannot be opened, is a failed attempt
//! with that reason, so it too ends as a dead letter rather than being tried for ever.
//! A sweep deletes delivered and purged rows once they are [`super::OutboxConfig::retention_secs`]
//! old.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use tokio::task::JoinSet;

use super::queue::{self, ClaimedQueue, Outcome};
use crate::Gateway;
use crate::delivery::runtime::client::WireError;
use crate::delivery::runtime::wire::{Batch, BatchAnswer, Outcome as WireOutcome};
use crate::error::Result;

/// How often the worker looks for due queues when nothing woke it.
pub const POLL_MS: u64 = 250;
/// The most deliveries one instance runs at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// A lease is renewed when this fraction of it has passed.
const RENEW_EVERY: u32 = 3;
/// How often the retention sweep runs.
const SWEEP_EVERY: StdDuration = StdDuration::from_secs(60);
/// The most spans one sweep goes through.
const SWEEP_SPANS: usize = 20;

/// The running worker; [`DeliveryHandle::stop`] lets the deliveries in flight finish.
pub struct DeliveryHandle {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl DeliveryHandle {
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for DeliveryHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Gateway {
    /// Wakes this instance's delivery worker: something was queued.
    pub fn wake_delivery(&self) {
        self.outbox_wake.notify_one();
    }

    /// Starts the delivery worker.
    pub fn start_delivery(&self) -> DeliveryHandle {
        let gw = self.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move { gw.deliver_until(stopped).await });
        DeliveryHandle { task: Some(task), stop }
    }

    async fn deliver_until(&self, mut stopped: tokio::sync::watch::Receiver<bool>) {
        let owner = format!("dlv_{}", uuid::Uuid::new_v4().simple());
        let mut flying: JoinSet<()> = JoinSet::new();
        // The first sweep a minute after start, not at once: a restart is busy enough.
        let mut sweep = tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_EVERY, SWEEP_EVERY);
        let mut swept_to = 0;
        loop {
            // Deliveries that ended free their places, every one of them.
            while flying.try_join_next().is_some() {}
            let room = MAX_IN_FLIGHT - flying.len();
            let claimed = match self.claim_due(&owner, room).await {
                Ok(q) => q,
                Err(e) => {
                    tracing::warn!(error = %e, "an outbox claim failed; trying again shortly");
                    Vec::new()
                }
            };
            let busy = !claimed.is_empty() && flying.len() + claimed.len() < MAX_IN_FLIGHT;
            for q in claimed {
                let gw = self.clone();
                flying.spawn(async move { gw.deliver_queue(q).await });
            }
            if *stopped.borrow() {
                break;
            }
            if busy {
                continue;
            }
            tokio::select! {
                _ = self.outbox_wake.notified() => {}
                Some(_) = flying.join_next(), if !flying.is_empty() => {}
                _ = tokio::time::sleep(StdDuration::from_millis(POLL_MS)) => {}
                _ = sweep.tick() => swept_to = self.sweep_finished(swept_to).await,
                _ = stopped.changed() => break,
            }
        }
        while flying.join_next().await.is_some() {}
    }

    /// Claims up to `room` due queues, runtimes first, leased to `owner`.
    async fn claim_due(&self, owner: &str, room: usize) -> Result<Vec<ClaimedQueue>> {
        if room == 0 {
            return Ok(Vec::new());
        }
        let lease = self.outbox_lease();
        let owner = owner.to_string();
        self.write(move |c| {
            let now = Utc::now();
            let mut claimed = queue::claim(c, super::RUNTIME, now, now + lease, &owner, room)?;
            let left = room - claimed.len();
            if left > 0 {
                claimed.extend(queue::claim(c, super::WEBHOOK, now, now + lease, &owner, left)?);
            }
            Ok(claimed)
        })
        .await
    }

    fn outbox_lease(&self) -> Duration {
        Duration::seconds(self.config.hold_lease_secs.max(2))
    }

    /// Delivers one claimed queue while renewing its lease, and records what became of it.
    async fn deliver_queue(&self, q: ClaimedQueue) {
        let renewing = self.renew_while(&q);
        let outcome = tokio::select! {
            outcome = self.send_queue(&q) => outcome,
            () = renewing => Outcome { failed: q.rows.clone(), failure: Some("outbox_lease_lost".into()), ..Default::default() },
        };
        let (config, q) = (self.config.outbox, Arc::new(q));
        let outcome = Arc::new(outcome);
        let recorded = self.write(move |c| queue::settle(c, &q, &outcome, &config)).await;
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "recording an outbox delivery failed; its lease lapses and it is sent again");
        }
    }

    /// Renews `q`'s lease until it is lost (then returns) or the delivery ends (dropped).
    async fn renew_while(&self, q: &ClaimedQueue) {
        let lease = self.outbox_lease();
        let every = (lease / RENEW_EVERY as i32).to_std().unwrap_or(StdDuration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            let claimed = Arc::new(q.clone());
            match self.write(move |c| queue::renew(c, &claimed, Utc::now() + lease)).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %e, "renewing an outbox lease failed"),
            }
        }
    }

    async fn send_queue(&self, q: &ClaimedQueue) -> Outcome {
        if q.channel == super::RUNTIME { self.send_to_runtime(q).await } else { self.send_webhooks(q).await }
    }

    /// Sends a tenant's claimed commands to its runtime as one batch. A row that does not read
    /// back as a command is rejected at once (`undecodable_command`), never sent.
    async fn send_to_runtime(&self, q: &ClaimedQueue) -> Outcome {
        let (mut commands, mut undecodable) = (Vec::new(), Vec::new());
        for row in &q.rows {
            match row.command() {
                Ok(c) => commands.push(c),
                Err(e) => {
                    undecodable.push((row.clone(), "undecodable_command".to_string(), Some(e.to_string())))
                }
            }
        }
        if commands.is_empty() {
            return Outcome { rejected: undecodable, ..Default::default() };
        }
        let batch = Batch { tenant_id: q.tenant.to_string(), commands };
        let answer = match self.tenant_connectors(&q.tenant).await {
            Ok(built) => match &built.runtime.client {
                Some(client) => claimed_send(client, &batch).await,
                // No runtime registered, or its secret does not open: say which.
                None => Err(WireError::Unreachable(built.runtime.missing.into())),
            },
            Err(e) => {
                tracing::warn!(tenant = %q.tenant, error = %e, "a tenant's connectors cannot be built for delivery");
                Err(WireError::Unreachable("runtime_connectors_unavailable".into()))
            }
        };
        let (tenant, reached) = (q.tenant.clone(), answer.as_ref().map(|_| ()).map_err(WireError::code));
        let noted = self
            .write(move |c| crate::delivery::runtime::registry::note_contact_in(c, &tenant, &reached, false))
            .await;
        if let Err(e) = noted {
            tracing::warn!(error = %e, "recording a runtime contact failed");
        }
        let mut outcome = runtime_outcome(q, &batch, answer);
        outcome.rejected.extend(undecodable);
        outcome
    }
}

/// Sends `batch`; a runtime that lost its claim (a new board) is claimed again for the tenant
/// and sent the batch once more. One claimed by another tenant refuses.
async fn claimed_send(
    client: &crate::delivery::runtime::client::RuntimeClient,
    batch: &Batch,
) -> std::result::Result<BatchAnswer, WireError> {
    match client.commands(batch).await {
        Err(WireError::Refused { code, .. }) if code == "not_claimed" => {
            client.claim(&batch.tenant_id).await?;
            client.commands(batch).await
        }
        answer => answer,
    }
}

/// What a runtime's answer to `batch` means for each of the queue's rows in it.
fn runtime_outcome(
    q: &ClaimedQueue,
    batch: &Batch,
    answer: std::result::Result<BatchAnswer, WireError>,
) -> Outcome {
    let sent: std::collections::HashSet<&str> =
        batch.commands.iter().map(|c| c.command_id.as_str()).collect();
    let rows: Vec<_> = q.rows.iter().filter(|r| sent.contains(r.id.as_str())).cloned().collect();
    let answer = match answer {
        Ok(a) => a,
        Err(e) => return Outcome { failed: rows, failure: Some(e.code()), ..Default::default() },
    };
    let by_id: std::collections::HashMap<&str, _> =
        answer.results.iter().map(|a| (a.command_id.as_str(), a)).collect();
    let mut outcome = Outcome::default();
    for row in &rows {
        match by_id.get(row.id.as_str()) {
            Some(a) if a.outcome == WireOutcome::Rejected => {
                let code = a.code.clone().unwrap_or_else(|| "runtime_rejected".into());
                outcome.rejected.push((row.clone(), code, a.message.clone()));
            }
            Some(_) => outcome.delivered.push(row.seq),
            None => {
                outcome.failed.push(row.clone());
                outcome.failure = Some("runtime_answer_incomplete".into());
            }
        }
    }
    outcome
}

impl Gateway {
    /// One pass of the retention sweep from `after`; where the next starts (0 again once it
    /// reached rows too new to delete, so rows that ended late behind it are found).
    async fn sweep_finished(&self, mut after: i64) -> i64 {
        let before = Utc::now() - Duration::seconds(self.config.outbox.retention_secs);
        for _ in 0..SWEEP_SPANS {
            match self.write(move |c| queue::sweep_finished(c, after, before, queue::SWEEP_SPAN)).await {
                Ok(Some(next)) => after = next,
                Ok(None) => return 0,
                Err(e) => {
                    tracing::warn!(error = %e, "the outbox's retention sweep failed");
                    break;
                }
            }
        }
        after
    }
}
