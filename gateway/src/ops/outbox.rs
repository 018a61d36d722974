//! The outbox as operations: a tenant's runtime commands, retrying a dead delivery, purging a
//! backlog, the backlogs for the console; and the delivery worker that claims due queues,
//! sends them (a runtime's batch and a Slack channel's messages here, webhooks in
//! `ops/webhooks.rs`) and sweeps finished rows.

use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use std::time::Duration as StdDuration;
use tokio::task::JoinSet;

use opentelemetry::KeyValue;
use serde_json::json;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::audit::trace;
use crate::delivery::outbox::Claimed;
use crate::delivery::outbox::delivery::{
    DeliveryHandle, MAX_IN_FLIGHT, POLL_MS, RENEW_EVERY, SWEEP_EVERY, SWEEP_SPANS, claimed_send,
    runtime_outcome,
};
use crate::delivery::outbox::queue::{self, ClaimedQueue, Outcome, seed_batch};
use crate::delivery::outbox::{
    CommandState, DeliveryStatus, Purged, Queue, RUNTIME, WEBHOOK, purge_in, read_command, read_row,
    retry_in, rows,
};
use crate::delivery::runtime::client::WireError;
use crate::delivery::runtime::wire::Batch;
use crate::delivery::slack::api::{self, ApiError};
use crate::delivery::slack::{self, BOT_TOKEN, Job, message};
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// One of the tenant's runtime commands.
    pub async fn command(&self, tenant: &TenantId, id: &str) -> Result<CommandState> {
        read_command(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "command" })
    }

    /// The tenant's runtime commands, newest first, optionally only those in `status`.
    pub async fn commands(
        &self,
        tenant: &TenantId,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<CommandState>> {
        rows(&self.store, tenant, RUNTIME, status).await
    }

    /// Queues a dead letter (a runtime command or a webhook message) again, with its
    /// attempts reset; anything else is a conflict. Its state after.
    pub async fn retry_delivery(
        &self,
        tenant: &TenantId,
        id: &str,
        actor: &str,
        via: Transport,
    ) -> Result<CommandState> {
        let (t, i, a) = (tenant.clone(), id.to_string(), actor.to_string());
        let max = self.config.outbox.max_queued;
        self.write_for(tenant, move |c| retry_in(c, &t, &i, &a, via, max)).await?;
        self.wake_delivery();
        read_row(&self.store, tenant, id, None).await?.ok_or(Error::NotFound { what: "delivery" })
    }
}

impl Gateway {
    /// Gives up on every command queued for the tenant's runtime (a runtime that is gone
    /// for good): they end `purged` and are never sent. How many.
    pub async fn purge_runtime_backlog(
        &self,
        tenant: &TenantId,
        actor: &str,
        via: Transport,
    ) -> Result<Purged> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write_for(tenant, move |c| purge_in(c, &t, RUNTIME, "", &a, via)).await
    }

    /// Gives up on every message queued for one webhook endpoint, and on its dead letters.
    pub async fn purge_webhook_backlog(
        &self,
        tenant: &TenantId,
        endpoint: &str,
        actor: &str,
        via: Transport,
    ) -> Result<Purged> {
        self.webhook(tenant, endpoint).await?;
        let (t, e, a) = (tenant.clone(), endpoint.to_string(), actor.to_string());
        self.write_for(tenant, move |c| purge_in(c, &t, WEBHOOK, &e, &a, via)).await
    }

    /// How many rows wait in each of the tenant's queues: the runtime's, then each endpoint's.
    pub async fn backlogs(&self, tenant: &TenantId) -> Result<Vec<Queue>> {
        queue::of_tenant(&self.store, tenant, self.config.outbox.max_queued).await
    }
}

impl Gateway {
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

    /// Test hook: one whole round of the outbox's retention sweep now, rather than at the
    /// delivery worker's next minute.
    #[doc(hidden)]
    pub async fn sweep_outbox_now(&self) {
        let mut after = self.sweep_finished(0).await;
        for _ in 0..1_000 {
            if after == 0 {
                return;
            }
            after = self.sweep_finished(after).await;
        }
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
            let mut claimed = Vec::new();
            for channel in crate::delivery::outbox::CHANNELS {
                let left = room - claimed.len();
                if left > 0 {
                    claimed.extend(queue::claim(c, channel, now, now + lease, &owner, left)?);
                }
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
        // The channel as a closed label, for the span and the counters.
        let channel = crate::delivery::outbox::label(q.channel);
        let span = trace::Span::start("outbox_delivery", || vec![KeyValue::new("channel", channel)]);
        let sending = span.wrap(self.send_queue(&q));
        let outcome = tokio::select! {
            outcome = sending => outcome,
            () = renewing => Outcome { failed: q.rows.clone(), failure: Some("outbox_lease_lost".into()), ..Default::default() },
        };
        drop(span);
        let (config, sent) = (self.config.outbox, q.rows.len() as u64);
        let tenant = q.tenant.clone();
        let q = Arc::new(q);
        let outcome = Arc::new(outcome);
        match self.write_for(&tenant, move |c| queue::settle(c, &q, &outcome, &config)).await {
            Ok((failed, dead)) => self.metrics.with(|f| {
                let ch = crate::audit::metrics::Channel { channel };
                f.delivery_attempts.get_or_create(&ch).inc_by(sent);
                f.delivery_failures.get_or_create(&ch).inc_by(failed);
                f.dead_letters.get_or_create(&ch).inc_by(dead);
            }),
            Err(e) => {
                tracing::warn!(error = %e, "recording an outbox delivery failed; its lease lapses and it is sent again")
            }
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
        match q.channel {
            crate::delivery::outbox::RUNTIME => self.send_to_runtime(q).await,
            crate::delivery::outbox::SLACK => self.send_slack(q).await,
            _ => self.send_webhooks(q).await,
        }
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

impl Gateway {
    /// One pass of the retention sweep from `after`; where the next starts (0 again once it
    /// reached rows too new to delete, so rows that ended late behind it are found).
    async fn sweep_finished(&self, mut after: i64) -> i64 {
        let now = Utc::now();
        let c = &self.config.outbox;
        let before =
            (now - Duration::seconds(c.retention_secs), now - Duration::seconds(c.dead_retention_secs));
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

impl Gateway {
    /// Benchmarks only: `rows` rows in one of `tenant`'s queues, all backing off until
    /// `retry_at`, as a destination that has been down a while leaves them. Written past the
    /// queue's bound, a batch at a time.
    #[doc(hidden)]
    pub async fn seed_stuck_queue(
        &self,
        tenant: &TenantId,
        channel: &'static str,
        destination: &str,
        rows: usize,
        retry_at: DateTime<Utc>,
    ) -> Result<()> {
        const BATCH_ROWS: usize = 5_000;
        for start in (0..rows).step_by(BATCH_ROWS) {
            let n = (rows - start).min(BATCH_ROWS);
            let (t, d) = (tenant.clone(), destination.to_string());
            self.write(move |c| seed_batch(c, &t, channel, &d, n, retry_at)).await?;
        }
        Ok(())
    }
}

impl Gateway {
    /// Sends a channel's claimed rows in order, stopping at the first that fails: each post
    /// records its message, each update rewrites every message posted for its approval in
    /// this channel, both rendered from the approval as it stands now.
    pub(crate) async fn send_slack(&self, q: &ClaimedQueue) -> Outcome {
        let token = match self.open_secret(&q.tenant, BOT_TOKEN).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(tenant = %q.tenant, error = %e, "the Slack bot token does not open");
                return failed_at(
                    q,
                    0,
                    ApiError::Failed("slack_token_unavailable".into()),
                    Outcome::default(),
                );
            }
        };
        let mut outcome = Outcome::default();
        for (i, row) in q.rows.iter().enumerate() {
            match self.send_slack_row(q, row, &token).await {
                Ok(()) => outcome.delivered.push(row.seq),
                Err(ApiError::Refused(code)) => {
                    outcome.rejected.push((row.clone(), format!("slack_{code}"), None));
                }
                Err(e) => return failed_at(q, i, e, outcome),
            }
        }
        outcome
    }

    async fn send_slack_row(
        &self,
        q: &ClaimedQueue,
        row: &Claimed,
        token: &str,
    ) -> std::result::Result<(), ApiError> {
        let corrupt = || ApiError::Refused("corrupt_row".into());
        let (job, id) = slack::job_in(&row.payload).map_err(|_| corrupt())?;
        let a = match crate::domain::approvals::read(&self.store, &q.tenant, &id).await {
            Ok(a) => a,
            Err(Error::NotFound { .. }) => return Err(ApiError::Refused("approval_gone".into())),
            Err(e) => return Err(ApiError::Failed(format!("slack_unreadable: {}", e.code()))),
        };
        let agent = self
            .profile(&q.tenant, &a.profile_id)
            .await
            .map_or_else(|_| a.profile_id.as_str().to_string(), |p| p.name);
        let mut body = message::render(&a, &agent, &self.config.public_url);
        body["channel"] = json!(q.destination);
        let base = &self.config.slack_api_url;
        match job {
            Job::Post => {
                let v = api::call(&self.egress, base, token, "chat.postMessage", &body).await?;
                let ts = v["ts"].as_str().unwrap_or_default().to_string();
                let (t, ch) = (q.tenant.clone(), q.destination.clone());
                self.write(move |c| slack::posted_in(c, &t, &id, &ch, &ts))
                    .await
                    .map_err(|e| ApiError::Failed(format!("slack_unrecorded: {}", e.code())))
            }
            Job::Update => {
                let posted = slack::posted(&self.store, &q.tenant, &id, &q.destination)
                    .await
                    .map_err(|e| ApiError::Failed(format!("slack_unreadable: {}", e.code())))?;
                for ts in posted {
                    body["ts"] = json!(ts);
                    api::call(&self.egress, base, token, "chat.update", &body).await?;
                }
                Ok(())
            }
        }
    }
}

/// The outcome of a queue whose row `i` failed: the ones before it as they went, it a failed
/// attempt (not before Slack's `Retry-After`), the rest left queued untried.
fn failed_at(q: &ClaimedQueue, i: usize, e: ApiError, mut outcome: Outcome) -> Outcome {
    if let ApiError::Wait(secs) = e {
        outcome.not_before = Some(chrono::Utc::now() + chrono::Duration::seconds(secs as i64));
    }
    outcome.failed = q.rows[i..=i].to_vec();
    outcome.failure = Some(e.code());
    outcome
}
