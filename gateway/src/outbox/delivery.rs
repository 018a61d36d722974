//! The delivery worker: takes what is due from the outbox and hands it over.
//!
//! It wakes when this instance queues something ([`Gateway::wake_delivery`]) and otherwise
//! every [`POLL_MS`] (for what other instances queued, and for retries that came due). Each
//! round claims up to a batch of due rows of each channel under a lease, sends each tenant's
//! commands to its runtime as one batch in order and each endpoint's webhook messages one by
//! one in order ([`crate::webhooks`]), and records each row's fate: delivered, rejected by
//! the runtime, or a failed attempt that backs off (and after the last attempt is a dead
//! letter). Tenants and endpoints are served concurrently; one unreachable runtime or endpoint
//! holds up only its own rows.

use std::collections::BTreeMap;
use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};

use crate::Gateway;
use crate::error::Result;
use crate::ids::TenantId;
use crate::outbox::{self, Claimed};
use crate::runtime::client::WireError;
use crate::runtime::wire::{Batch, BatchAnswer, Outcome};

/// How often the worker looks for due rows when nothing woke it.
pub const POLL_MS: u64 = 250;

/// The running worker; [`DeliveryHandle::stop`] lets a round in progress finish.
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
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                let delivered = match gw.deliver_round().await {
                    Ok(n) => n,
                    Err(e) => {
                        tracing::warn!(error = %e, "an outbox round failed; trying again shortly");
                        0
                    }
                };
                if *stopped.borrow() {
                    break;
                }
                if delivered > 0 {
                    continue;
                }
                tokio::select! {
                    _ = gw.outbox_wake.notified() => {}
                    _ = tokio::time::sleep(StdDuration::from_millis(POLL_MS)) => {}
                    _ = stopped.changed() => break,
                }
            }
        });
        DeliveryHandle { task: Some(task), stop }
    }

    /// One round: claims what is due and delivers it; how many rows it claimed.
    pub async fn deliver_round(&self) -> Result<usize> {
        let lease = Duration::seconds(self.config.hold_lease_secs.max(2));
        let (commands, messages) = self
            .write(move |c| {
                let now = Utc::now();
                let commands = outbox::claim(c, outbox::RUNTIME, now, now + lease)?;
                Ok((commands, outbox::claim(c, crate::webhooks::CHANNEL, now, now + lease)?))
            })
            .await?;
        let n = commands.len() + messages.len();
        let mut rounds: Vec<futures_util::future::BoxFuture<'_, Result<()>>> = Vec::new();
        for ((tenant, _), rows) in group(commands, false) {
            rounds.push(Box::pin(self.deliver_to(tenant, rows)));
        }
        for ((tenant, endpoint), rows) in group(messages, true) {
            rounds.push(Box::pin(self.deliver_webhooks(tenant, endpoint, rows)));
        }
        for r in futures_util::future::join_all(rounds).await {
            r?;
        }
        Ok(n)
    }

    /// Sends one tenant's claimed rows to its runtime as one batch, and records the outcome.
    async fn deliver_to(&self, tenant: TenantId, rows: Vec<Claimed>) -> Result<()> {
        let batch = Batch { commands: rows.iter().filter_map(|r| r.command().ok()).collect() };
        let runtime = self.tenant_connectors(&tenant).await?.runtime.clone();
        let answer = match &runtime.client {
            Some(client) => client.commands(&batch).await,
            // No runtime registered, or its secret does not open: say which.
            None => Err(WireError::Unreachable(runtime.missing.into())),
        };
        let config = self.config.outbox;
        self.write(move |c| record(c, &tenant, &rows, &answer, &config)).await
    }
}

/// Claimed rows by tenant (and by ordering key, when `by_key`), each group in claim order.
fn group(rows: Vec<Claimed>, by_key: bool) -> BTreeMap<(TenantId, String), Vec<Claimed>> {
    let mut groups: BTreeMap<(TenantId, String), Vec<Claimed>> = BTreeMap::new();
    for row in rows {
        let key = if by_key { row.key.clone() } else { String::new() };
        groups.entry((row.tenant.clone(), key)).or_default().push(row);
    }
    groups
}

/// Records what became of a sent batch, and what it says of the runtime's reachability.
fn record(
    c: &dyn crate::sql::Tx,
    tenant: &TenantId,
    rows: &[Claimed],
    answer: &std::result::Result<BatchAnswer, WireError>,
    config: &outbox::OutboxConfig,
) -> Result<()> {
    let now = Utc::now();
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            crate::runtime::registry::note_contact_in(c, tenant, &Err(e.code()), false)?;
            return outbox::failed(c, rows, &e.code(), now, config);
        }
    };
    crate::runtime::registry::note_contact_in(c, tenant, &Ok(()), false)?;
    let by_id: std::collections::HashMap<&str, _> =
        answer.results.iter().map(|a| (a.command_id.as_str(), a)).collect();
    let (mut done, mut unanswered) = (Vec::new(), Vec::new());
    for row in rows {
        match by_id.get(row.id.as_str()) {
            Some(a) if a.outcome == Outcome::Rejected => {
                let code = a.code.as_deref().unwrap_or("runtime_rejected");
                outbox::rejected(c, row, code, a.message.as_deref())?;
            }
            Some(_) => done.push(row.seq),
            None => unanswered.push(row.clone()),
        }
    }
    outbox::delivered(c, &done, now)?;
    outbox::failed(c, &unanswered, "runtime_answer_incomplete", now, config)
}
