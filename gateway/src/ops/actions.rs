//! The governed action pipeline: one function every transport calls.
//!
//! authenticate → revocation (the whole ancestry) → arguments checked against the action's
//! declaration → `policy` decision → hold → execute or park → settle → record → emit.
//!
//! Order matters, and is the same for every transport: a revoked or suspended profile (or one
//! beneath a revoked ancestor) is refused `agent_profile_revoked` before anything else about
//! its call is looked at, so it learns nothing from a malformed request; bad input (an unknown
//! action, arguments the declaration refuses) is refused before any write.
//!
//! The decision and the reservation happen in one writer job ([`crate::domain::reserve`]) on totals,
//! statuses and kit versions read in that job, so concurrent calls can never overspend a cap,
//! a revoke is never missed, and a decision never uses a kit older than the one in force: a
//! job that finds a cached kit stale answers `Stale`, and the call is decided again on fresh
//! ones. Execution happens outside any transaction (a connector may be slow); settling is a
//! second job. Every job appends its activity entries in the same transaction, and they are
//! published only after commit. A repeated `Idempotency-Key` from the same subject returns the
//! first response and causes no second effect.

use std::sync::Arc;

use chrono::Duration;
use opentelemetry::KeyValue;
use policy::{Envelope, SubjectStatus, ToolSpec};
use serde_json::{Value, json};

use crate::Gateway;
use crate::audit::trace;
use crate::delivery::connectors::{Call, Connector};
use crate::domain::calls::{
    ActionCall, ActionResponse, Answer, MAX_IDEMPOTENCY_KEY_LEN, ReservedCall, check_args, digest, request,
};
use crate::domain::chain::chain_status;
use crate::domain::principal::Subject;
use crate::domain::reserve::{self, Reserved};
use crate::error::{Error, Result};

/// How many times a call is decided again after finding a kit it used stale.
const STALE_RETRIES: usize = 3;

fn kit_changing() -> Error {
    Error::unavailable("kit_changing", "the kit kept changing while this call was decided; send it again", 1)
}

impl ReservedCall {
    /// The call its connector is sent (again, after a crash: the same action id).
    pub(crate) fn call(&self) -> Call {
        Call {
            action: self.tool.name.clone(),
            primitive: self.tool.primitive,
            args: self.args.clone(),
            reserved: self.cost,
            price: self.tool.price.min(self.cost),
            action_id: self.action_id.clone(),
            actor: self.actor.clone(),
        }
    }
}

/// Settles an approved runtime write in one job: its command is queued where its hold posts.
fn settle_in_job(
    c: &dyn crate::sql::Tx,
    carry: &ReservedCall,
    connector: &Arc<dyn Connector>,
) -> Result<ActionResponse> {
    let outcome = connector
        .execute_in(c, &carry.call())?
        .ok_or_else(|| Error::internal("runtime_write_not_queued", "a runtime write has no command"))?;
    let (resp, _) = reserve::settle(c, &carry.settling(connector.kind()), outcome, carry.cost)?;
    Ok(resp)
}

impl Gateway {
    /// Runs one governed call through the whole pipeline.
    pub async fn perform(&self, call: ActionCall) -> Result<ActionResponse> {
        let subject = self.authenticate(&call.token).await?.ok_or_else(|| Error::Unauthenticated {
            message: "the key is missing, malformed, unknown, revoked or expired; ask for a new scoped key"
                .into(),
        })?;
        self.perform_as(&subject, call.action, call.args, call.idempotency_key).await
    }

    /// The pipeline after authentication. A listing of connected-app tools shows only what
    /// the caller's kit permits, with `withheld_by_policy` ([`crate::delivery::connectors::apps`]).
    pub async fn perform_as(
        &self,
        subject: &Subject,
        action: String,
        args: Value,
        idem: Option<String>,
    ) -> Result<ActionResponse> {
        self.perform_justified(subject, action, args, idem, None).await
    }

    /// [`Gateway::perform_as`] with the agent's justification: if the call parks, the
    /// approval, its notification and its trail carry it ([`approvals::justification`](crate::domain::approvals::justification)
    /// bounds it; nothing else reads it).
    pub async fn perform_justified(
        &self,
        subject: &Subject,
        action: String,
        args: Value,
        idem: Option<String>,
        justification: Option<&str>,
    ) -> Result<ActionResponse> {
        let started = std::time::Instant::now();
        let labelled = crate::audit::metrics::action_label(&self.catalog, &action);
        let span = trace::Span::start("governed_call", || {
            vec![KeyValue::new("transport", subject.via.as_str()), KeyValue::new("action", labelled.clone())]
        });
        let resp = span.wrap(self.perform_listed(subject, (action, args), idem, justification)).await;
        let (verdict, reason) = match &resp {
            Ok(r) if r.replayed => return resp,
            Ok(r) => (r.disposition.as_str(), r.reason()),
            Err(e) => ("error", e.code()),
        };
        if span.is_recording() {
            span.record("verdict", verdict);
            span.record("reason", reason.to_string());
        }
        self.metrics.call(subject.via, labelled, verdict, reason, started.elapsed());
        resp
    }

    async fn perform_listed(
        &self,
        subject: &Subject,
        (action, args): (String, Value),
        idem: Option<String>,
        justification: Option<&str>,
    ) -> Result<ActionResponse> {
        let justification = crate::domain::approvals::justification(justification)?;
        let listing = action == crate::delivery::connectors::apps::LISTING;
        let mut resp = self.perform_unfiltered(subject, (action, args), idem, justification).await?;
        if let (true, Answer::Executed(ran)) = (listing, &mut resp.body) {
            let links = self.cached_links(&subject.tenant, &subject.profile).await?;
            crate::delivery::connectors::apps::filter_listing(&links[0].kit, &mut ran.result);
        }
        Ok(resp)
    }

    async fn perform_unfiltered(
        &self,
        subject: &Subject,
        (action, args): (String, Value),
        idem: Option<String>,
        justification: Option<String>,
    ) -> Result<ActionResponse> {
        if let Some(env) = self.inactive_refusal(subject, &action).await? {
            return Ok(ActionResponse::refused(&env));
        }
        let tool = self.tool(&action)?;
        let checked = check_args(&action, &args)?;
        // One snapshot of the tenant's connectors both classifies a connected app's tool and
        // carries the call out, so a setting that changes in between cannot split the two.
        let connectors = self.tenant_connectors(&subject.tenant).await?;
        let tool = self.connected_tool(subject, tool, &checked, &connectors.apps).await?;
        if let Some(k) = &idem
            && (k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY_LEN)
        {
            return Err(Error::invalid(
                "invalid_idempotency_key",
                format!("an Idempotency-Key is 1 to {MAX_IDEMPOTENCY_KEY_LEN} characters"),
            ));
        }
        let connector = connectors.pick(&tool, &self.sandbox);
        let mut prepared = self.reserve_job(subject, (action, args), checked, tool, idem, &connector).await?;
        prepared.justification = justification;
        let mut job = Arc::new(prepared);
        for _ in 0..STALE_RETRIES {
            let j = job.clone();
            let deciding = std::time::Instant::now();
            trace::record_current("kit_version", i64::from(job.links[0].kit.version.0));
            // Only a PostgreSQL batch reads what its calls want ahead of them.
            let want = matches!(self.writes, crate::Writes::Postgres { .. }).then(|| j.want());
            let committing = self.write_wanting(&subject.tenant, want, move |c| j.run(c));
            let reserved =
                trace::within("commit", || vec![KeyValue::new("step", "decide")], committing).await?;
            self.metrics.with(|f| f.decision_seconds.observe(deciding.elapsed().as_secs_f64()));
            match reserved {
                Reserved::Final(resp) => {
                    if crate::delivery::connectors::runtime::queues_command(&job.tool) {
                        self.wake_delivery();
                    }
                    return Ok(resp);
                }
                Reserved::Hold { hold, cost, kit_version } => {
                    return self.carry_out(job.carry(&hold, cost, kit_version), connector).await;
                }
                // Another process saved a kit this call used, or the tenant's calendar: decide again
                // on current ones.
                Reserved::Stale => job = Arc::new(self.refreshed(subject, &job).await?),
            }
        }
        Err(kit_changing())
    }

    /// `job` again on the current kits and calendar, after it found the cached ones changed.
    async fn refreshed(&self, subject: &Subject, job: &reserve::ReserveJob) -> Result<reserve::ReserveJob> {
        self.kit_cache.invalidate();
        self.links_cache.remove(&subject.profile);
        self.forget_tenant_clock(&subject.tenant);
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        let clock = self.tenant_clock(&subject.tenant).await?;
        Ok(reserve::ReserveJob { links, clock, ..job.clone() })
    }

    /// A governed call that holds nothing and that `then` carries out in the job that decides
    /// it (the brain's governance tools): decided on the same facts as every call and counted
    /// in its rate windows ([`reserve::ReserveJob::gate`]), refused and recorded the same way.
    /// `then` gets what the call was decided on, for its entry. `recorded`: see `gate`.
    pub(crate) async fn governed_in_job<T, F>(
        &self,
        subject: &Subject,
        (tool, args): (ToolSpec, Value),
        recorded: bool,
        then: F,
    ) -> Result<std::result::Result<T, ActionResponse>>
    where
        T: Send + 'static,
        F: Fn(&dyn crate::sql::Tx, String) -> Result<T> + Send + Sync + 'static,
    {
        let sandbox: Arc<dyn Connector> = self.sandbox.clone();
        let call = (tool.name.clone(), args);
        let mut job =
            Arc::new(self.reserve_job(subject, call, Default::default(), tool, None, &sandbox).await?);
        let then = Arc::new(then);
        for _ in 0..STALE_RETRIES {
            let (j, then) = (job.clone(), then.clone());
            let decided = self
                .write_for(&subject.tenant, move |c| match j.gate(c, recorded)? {
                    reserve::Gated::Allowed { inputs } => Ok(Some(Ok(then(c, inputs)?))),
                    reserve::Gated::Refused(resp) => Ok(Some(Err(resp))),
                    reserve::Gated::Stale => Ok(None),
                })
                .await?;
            match decided {
                Some(d) => return Ok(d),
                None => job = Arc::new(self.refreshed(subject, &job).await?),
            }
        }
        Err(kit_changing())
    }

    /// The reservation job for one call, with the cached chain and calendar it is decided on.
    async fn reserve_job(
        &self,
        subject: &Subject,
        (action, args): (String, Value),
        checked: policy::CheckedArgs,
        tool: ToolSpec,
        idem: Option<String>,
        connector: &Arc<dyn Connector>,
    ) -> Result<reserve::ReserveJob> {
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        Ok(reserve::ReserveJob {
            subject: subject.clone(),
            request_digest: digest(&json!([action, args])),
            args_digest: digest(&args),
            connector: connector.clone(),
            tool,
            args,
            checked,
            idem,
            ttl: Duration::seconds(self.config.approval_ttl_secs),
            justification: None,
            answer: Arc::default(),
            lease: self.leases.lease(),
            now: self.now(),
            clock: self.tenant_clock(&subject.tenant).await?,
            shadows: self.shadows_on(&subject.tenant, &links).await?,
            traceparent: trace::current(),
            links,
        })
    }

    /// Carries out a reserved call on `connector` and settles its hold: post on success, void
    /// on failure. The hold is leased to this instance until it has settled.
    pub(crate) async fn carry_out(
        &self,
        carry: ReservedCall,
        connector: Arc<dyn Connector>,
    ) -> Result<ActionResponse> {
        let _carrying = self.leases.carry(&carry.hold);
        let call = carry.call();
        let (kind, tenant) = (connector.kind(), carry.subject.tenant.clone());
        if crate::delivery::connectors::runtime::queues_command(&carry.tool) {
            // A runtime write queues its command in the job that settles the hold.
            let resp = self.write_for(&tenant, move |c| settle_in_job(c, &carry, &connector)).await?;
            self.wake_delivery();
            return Ok(resp);
        }
        let started = std::time::Instant::now();
        let outcome = trace::within(
            "connector",
            || vec![KeyValue::new("kind", kind.as_str())],
            connector.execute(&call),
        )
        .await;
        // The sandbox reaches nothing: its calls are not connector traffic.
        if kind != crate::delivery::connectors::ConnectorKind::Sandbox {
            self.metrics.connector(kind.as_str(), started.elapsed(), outcome.is_err());
        }
        let settling = self.write_for(&tenant, move |c| {
            reserve::settle(c, &carry.settling(kind), outcome.clone(), carry.cost)
        });
        let (resp, _) = trace::within("commit", || vec![KeyValue::new("step", "settle")], settling).await?;
        Ok(resp)
    }

    /// A dry run of the pipeline for `action`: every reason that would apply now, with the
    /// cost. Reserves nothing and writes nothing (explain answers allow | deny | park).
    pub async fn explain_call(
        &self,
        subject: &Subject,
        action: &str,
        args: &Value,
    ) -> Result<policy::Explanation> {
        let tool = self.tool(action)?;
        let checked = check_args(action, args)?;
        let apps = self.apps_for(&subject.tenant).await?;
        let tool = self.connected_tool(subject, tool, &checked, &apps).await?;
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        let clock = self.tenant_clock(&subject.tenant).await?;
        let (tenant, now, name) = (subject.tenant.clone(), self.now(), tool.name.clone());
        let read = links.clone();
        let facts = self
            .write_for(&subject.tenant, move |c| {
                crate::audit::activity::lock_tenant(c, &tenant)?;
                reserve::Facts::read(c, &tenant, &read, clock.rate, (&name, now), &[])
            })
            .await?;
        let (budgets, rates) = (facts.budgets(&links), facts.rates());
        let rates = crate::domain::decision::Rates::Counted(&rates);
        Ok(policy::explain(&facts.input(&links[0].kit, request(&tool, &checked), &budgets, rates)))
    }

    /// The catalog tools `subject` may see now, for a tool list: `None` when its profile (or
    /// an ancestor) is not active, otherwise each tool whose primitive its effective kit
    /// enables. A listed tool may still refuse a call; that is decided per call.
    pub async fn visible_tools(&self, subject: &Subject) -> Result<Option<Vec<ToolSpec>>> {
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        if chain_status(&links) != SubjectStatus::Active {
            return Ok(None);
        }
        let kit = &links[0].kit;
        Ok(Some(self.catalog.iter().filter(|t| kit.primitives.contains(t.primitive)).cloned().collect()))
    }

    /// The refusal every route gives a profile that is revoked or suspended, itself or through
    /// an ancestor (reads too), or `None` when the whole chain is active.
    pub async fn inactive_refusal(&self, subject: &Subject, action: &str) -> Result<Option<Envelope>> {
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        let status = chain_status(&links);
        if status == SubjectStatus::Active {
            return Ok(None);
        }
        Ok(Some(Envelope::deny_with(
            action,
            policy::Layer::Subject,
            "agent_profile_revoked",
            if status == SubjectStatus::Suspended { "profile_suspended" } else { "profile_revoked" },
            format!("Agent profile is {}: every call is refused", status.as_str()),
            policy::RecoveryStep::ReinstateProfile {
                change: "An admin must reinstate this agent profile.".into(),
                human_action: "Tell the user this agent has been stopped by an admin, and stop.".into(),
            },
            1,
        )))
    }
}
