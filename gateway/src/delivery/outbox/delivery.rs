//! The delivery worker: takes what is due from the outbox and hands it over.
//!
//! It wakes when this instance queues something ([`Gateway::wake_delivery`](crate::Gateway::wake_delivery)), when a delivery
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

use std::time::Duration as StdDuration;

use super::queue::{ClaimedQueue, Outcome};
use crate::delivery::runtime::client::WireError;
use crate::delivery::runtime::wire::{Batch, BatchAnswer, Outcome as WireOutcome};

/// How often the worker looks for due queues when nothing woke it.
pub const POLL_MS: u64 = 250;
/// The most deliveries one instance runs at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// A lease is renewed when this fraction of it has passed.
pub(crate) const RENEW_EVERY: u32 = 3;
/// How often the retention sweep runs.
pub(crate) const SWEEP_EVERY: StdDuration = StdDuration::from_secs(60);
/// The most spans one sweep goes through.
pub(crate) const SWEEP_SPANS: usize = 20;

/// The running worker; [`DeliveryHandle::stop`] lets the deliveries in flight finish.
pub struct DeliveryHandle {
    pub(crate) task: Option<tokio::task::JoinHandle<()>>,
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
}

impl DeliveryHandle {
    /// A handle that says whether the delivery worker still runs, for readiness.
    pub fn watch(&self) -> Option<tokio::task::AbortHandle> {
        self.task.as_ref().map(tokio::task::JoinHandle::abort_handle)
    }

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

/// Sends `batch`; a runtime that lost its claim (a new board) is claimed again for the tenant
/// and sent the batch once more. One claimed by another tenant refuses.
pub(crate) async fn claimed_send(
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
pub(crate) fn runtime_outcome(
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
