//! Deciding parked calls: the inbox's reads, approve (the decider checked, the call decided
//! again under the kits and caps in force, then run once), deny, and the sweeper task that
//! runs [`crate::domain::sweep`] (overdue approvals expired, orphaned holds ended). The
//! approvals table itself is written by [`crate::domain::approvals`] alone.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use policy::Money;
use serde_json::json;

use crate::Gateway;
use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::audit::metrics::One;
use crate::audit::trace;
use crate::domain::approvals::{self, Approval, ApprovalQuery, ApprovalStatus, SweepReport};
use crate::domain::calls::{ActionResponse, Disposition};
use crate::domain::ledger::{self, HoldEnd};
use crate::domain::principal::{APPROVERS, Human, Subject};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use opentelemetry::KeyValue;

impl Gateway {
    /// One approval with its trail.
    pub async fn approval(&self, tenant: &TenantId, id: &str) -> Result<Approval> {
        approvals::read(&self.store, tenant, id).await
    }

    /// An agent polling its own approval: another profile's approval does not exist for it.
    pub async fn approval_for_subject(&self, subject: &Subject, id: &str) -> Result<Approval> {
        let a = self.approval(&subject.tenant, id).await?;
        if a.profile_id != subject.profile {
            return Err(Error::NotFound { what: "approval" });
        }
        Ok(a)
    }

    /// Approvals, newest first, without trails.
    /// How many pending approvals `user` may decide (none of their own agents', or their
    /// sub-agents'), and when the soonest of them expires.
    pub async fn waiting_for(
        &self,
        tenant: &TenantId,
        user: &crate::UserId,
    ) -> Result<(u64, Option<DateTime<Utc>>)> {
        approvals::waiting_for(&self.store, tenant, user).await
    }

    pub async fn approvals(&self, tenant: &TenantId, q: &ApprovalQuery) -> Result<Vec<Approval>> {
        approvals::list(&self.store, tenant, q).await
    }

    /// The approvals `q` matches, with their whole trails, as CSV (one line per step).
    pub async fn export_approvals(&self, tenant: &TenantId, q: &ApprovalQuery) -> Result<String> {
        approvals::export_csv(&self.store, tenant, q).await
    }

    /// Records `by`'s approval; when it is the last one the approval needs, executes the
    /// bound call exactly once, if the kit and caps in force now still allow it. The hold a
    /// parked call keeps is a reservation, not a licence: the call is decided again, in the
    /// job that approves it, on the current kits, statuses and totals (its own hold given
    /// back). If they refuse it now, the approval ends refused with the reason, its hold is
    /// voided, and the answer is the refusal envelope. Before the last approval the answer
    /// is the approval, still pending, with the approvals it has.
    pub async fn approve(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Human,
        note: Option<&str>,
    ) -> Result<Decided> {
        let span = self.decision_span(tenant, id, "approve").await;
        span.wrap(self.approve_traced(tenant, id, by, note)).await
    }

    /// The span of a human's decision on approval `id`, linked to the span of the call it
    /// parked when that call was traced.
    async fn decision_span(&self, tenant: &TenantId, id: &str, decision: &'static str) -> trace::Span {
        let span = trace::Span::start("approval_decision", || vec![KeyValue::new("decision", decision)]);
        if span.is_recording() {
            let parked = crate::domain::approvals::traceparent(&self.store, tenant, id).await.ok().flatten();
            span.link_to(parked.as_deref());
        }
        span
    }

    async fn approve_traced(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Human,
        note: Option<&str>,
    ) -> Result<Decided> {
        let note = approvals::optional_note(note)?;
        let (t, id_, by_, catalog) = (tenant.clone(), id.to_string(), by.clone(), self.catalog.clone());
        let (lease, now) = (self.leases.lease(), self.now());
        let decided = self
            .write_for(tenant, move |c| {
                approve_job(c, &catalog, (&t, &id_), &by_, note.as_deref(), &lease, now)
            })
            .await?;
        let kind = match &decided {
            Approved::Refused(_) => "refused_at_approval",
            Approved::Waiting => "voted",
            Approved::Run { .. } => "approved",
        };
        self.metrics.with(|f| f.approvals_decided.get_or_create(&One { kind }).inc());
        let (a, kit_version) = match decided {
            Approved::Refused(resp) => {
                return Ok(Decided::Ran(resp));
            }
            Approved::Waiting => return Ok(Decided::Waiting(Box::new(self.approval(tenant, id).await?))),
            Approved::Run { approval, kit_version } => (*approval, kit_version),
        };
        let resp = self.run_approved(&a, by, kit_version).await?;
        let (id_, body, d) = (a.id.clone(), resp.json(), resp.disposition);
        let actor = by.username.clone();
        self.write_for(tenant, move |c| {
            let step = if d == Disposition::Executed { "executed" } else { "failed" };
            approvals::record_result(c, &id_, &body, &actor, step, None)
        })
        .await?;
        Ok(Decided::Ran(resp))
    }

    /// Decides several approvals with one note, each on its own exactly as if alone
    /// ([`Gateway::approve`], [`Gateway::deny`]): one that cannot be decided (another
    /// tenant's, already decided, expired, not this person's to decide) gets its own refusal
    /// and leaves the others as they are. The answer has one outcome per id, in order.
    pub async fn decide_many(
        &self,
        tenant: &TenantId,
        ids: &[String],
        decision: BulkDecision,
        by: &Human,
        note: Option<&str>,
    ) -> Result<Vec<BulkOutcome>> {
        if ids.is_empty() || ids.len() > MAX_BULK {
            return Err(Error::invalid(
                "invalid_bulk",
                format!("name 1 to {MAX_BULK} approvals; send more in further requests"),
            ));
        }
        if let Some(dup) = ids.iter().enumerate().find(|(i, id)| ids[..*i].contains(id)) {
            return Err(Error::invalid(
                "duplicate_approval",
                format!("{} is named twice; name each approval once", dup.1),
            ));
        }
        if decision == BulkDecision::Deny {
            approvals::required_reason(note.unwrap_or_default(), "a denial")?;
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let outcome = match decision {
                BulkDecision::Approve => self.approve(tenant, id, by, note).await.map(|d| d.outcome()),
                BulkDecision::Deny => self
                    .deny(tenant, id, by, note.unwrap_or_default())
                    .await
                    .map(|a| (a.status.as_str().to_string(), None)),
            };
            out.push(BulkOutcome::of(id, outcome));
        }
        Ok(out)
    }

    /// Carries out the call an approval bound: a brain accept canonizes, anything else runs
    /// through its connector and settles its hold.
    async fn run_approved(&self, a: &Approval, by: &Human, kit_version: u32) -> Result<ActionResponse> {
        if let Some((proposal, because)) = crate::domain::approvals::proposal_in(a) {
            return self
                .canonize(&a.tenant_id, &proposal, &by.username, &because, Some(&by.credential), by.via)
                .await;
        }
        let subject = Subject {
            tenant: a.tenant_id.clone(),
            profile: a.profile_id.clone(),
            key: crate::ids::KeyId::from_db("approval".into()),
            via: by.via,
            connection: None,
        };
        let tool = self.tool(&a.action)?;
        let hold = a
            .hold_id
            .clone()
            .ok_or_else(|| Error::internal("approval_without_hold", "a parked call has no hold"))?;
        let connector = self.connector_for(&subject.tenant, &tool).await?;
        let carry = crate::domain::calls::ReservedCall {
            subject,
            tool,
            args: a.args.clone(),
            action_id: hold.clone(),
            hold,
            cost: a.amount,
            kit_version,
            actor: by.username.clone(),
        };
        if connector.kind() == crate::delivery::connectors::ConnectorKind::Http {
            let recorded = carry.clone();
            self.write(move |c| crate::domain::in_flight::record(c, &recorded)).await?;
        }
        self.carry_out(carry, connector).await
    }

    /// Why `by` may not decide `a`, as the error approving or denying it would give: the
    /// roles their credential carries, and that they own neither the profile that asked nor
    /// one above it (nor, for an agent's accept, the proposer's). The console asks before
    /// showing the buttons; the deciding job checks again in its transaction.
    pub async fn may_decide(&self, a: &Approval, by: &Human) -> Result<()> {
        if by.require(APPROVERS).is_err() && !self.named_by(a, by).await? {
            by.require(APPROVERS)?;
        }
        if a.quorum.votes.iter().any(|v| v.username == by.username) {
            return Err(Error::Conflict {
                code: "already_approved",
                message: format!(
                    "you have approved this; it needs {} from someone else",
                    a.quorum.still_needed()
                ),
            });
        }
        self.ensure_not_owner(&a.profile_id, by).await?;
        if let Some((proposal, _)) = crate::domain::approvals::proposal_in(a)
            && let Some(proposer) = self.proposer(&proposal).await?
        {
            self.ensure_not_owner(&proposer, by).await?;
        }
        Ok(())
    }

    /// Whether `by` holds the role, or is in the group, that `a` names (or its fallback's,
    /// once escalated): who may decide it without the approver role.
    async fn named_by(&self, a: &Approval, by: &Human) -> Result<bool> {
        if !a.quorum.names_anyone() {
            return Ok(false);
        }
        let groups = match by.groups {
            true => crate::domain::groups::of_user_now(&self.store, &a.tenant_id, &by.user_id).await?,
            false => Vec::new(),
        };
        Ok(a.quorum.names(&by.roles, &groups))
    }

    /// Denies with a required reason; voids the hold. One deny ends the approval, however
    /// many approvals it had.
    pub async fn deny(&self, tenant: &TenantId, id: &str, by: &Human, reason: &str) -> Result<Approval> {
        let span = self.decision_span(tenant, id, "deny").await;
        span.wrap(self.deny_traced(tenant, id, by, reason)).await
    }

    async fn deny_traced(&self, tenant: &TenantId, id: &str, by: &Human, reason: &str) -> Result<Approval> {
        let reason = approvals::required_reason(reason, "a denial")?;
        let (t, id_, by_) = (tenant.clone(), id.to_string(), by.clone());
        self.write_for(tenant, move |c| {
            let a = approvals::load(c, &t, &id_)?;
            approvals::voter(c, &a, &by_)?;
            check_decider(c, &a, &by_)?;
            approvals::close(c, &a, ApprovalStatus::Denied, &by_.username, Some(&by_), &reason)
        })
        .await?;
        self.metrics.with(|f| f.approvals_decided.get_or_create(&One { kind: "denied" }).inc());
        self.approval(tenant, id).await
    }

    /// Expires overdue approvals (into denials), ends orphaned holds and deletes expired
    /// console sessions, ended sign-in windows and unclaimed new secrets, in one job. A hold is orphaned when no pending approval keeps it and
    /// no instance holds a live lease on it ([`crate::domain::ledger::leases`]): the instance carrying out
    /// its call crashed, or lost the call. Every instance may sweep; each hold ends once.
    /// A backlog larger than one job's batch is drained in several jobs, up to
    /// [`approvals::MAX_SWEEP_JOBS`] of them.
    pub async fn sweep(&self) -> Result<SweepReport> {
        let mut total = SweepReport::default();
        for _ in 0..approvals::MAX_SWEEP_JOBS {
            let now = crate::domain::sweep::Now { wall: Utc::now(), clock: self.now() };
            let r = self.write(move |c| crate::domain::sweep::sweep_once(c, now)).await?;
            total.approvals_expired += r.approvals_expired;
            total.holds_expired += r.holds_expired;
            total.escalated += r.escalated;
            self.metrics.with(|f| {
                f.expiries.get_or_create(&One { kind: "approval" }).inc_by(r.approvals_expired as u64);
                f.expiries.get_or_create(&One { kind: "hold" }).inc_by(r.holds_expired as u64);
            });
            if !r.full() {
                break;
            }
        }
        Ok(total)
    }

    /// Renews this instance's leases on the holds it is carrying out now.
    pub async fn renew_leases(&self) -> Result<usize> {
        let holds = self.leases.carried();
        if holds.is_empty() {
            return Ok(0);
        }
        let lease = self.leases.lease();
        self.write(move |c| crate::domain::ledger::leases::renew(c, &holds, &lease)).await
    }

    /// Every [`approvals::SWEEP_INTERVAL_MS`] until the handle is stopped or dropped: renews this
    /// instance's leases, then runs [`Gateway::sweep`].
    pub fn start_sweeper(&self) -> SweeperHandle {
        let gw = self.clone();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(StdDuration::from_millis(approvals::SWEEP_INTERVAL_MS));
            for n in 0u64.. {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => break,
                }
                gw.sweep_tick(n).await;
            }
        });
        SweeperHandle { task: Some(task), stop }
    }

    /// One tick of the sweeper; a failure is logged and the next tick tries again.
    async fn sweep_tick(&self, n: u64) {
        if let Err(e) = self.renew_leases().await {
            tracing::warn!(error = %e, "renewing leases failed; retrying next tick");
        }
        if let Err(e) = self.sweep().await {
            tracing::warn!(error = %e, "sweep failed; retrying next tick");
        }
        if let Err(e) = self.recover_lost_calls().await {
            tracing::warn!(error = %e, "claiming lost calls failed; retrying next tick");
        }
        // Stored Idempotency-Key responses age out far more slowly than approvals.
        if n.is_multiple_of(600)
            && let Err(e) = self.forget_old_requests().await
        {
            tracing::warn!(error = %e, "forgetting old idempotency keys failed; retrying later");
        }
    }
}

/// The running sweeper. [`SweeperHandle::stop`] lets a sweep in progress finish and waits for
/// it; dropping the handle aborts the task instead. Each sweep is one atomic job, so neither
/// leaves anything half done, but an aborted task does not wait: on PostgreSQL its last job
/// may still be running (holding its rows) on a runner thread when the drop returns.
pub struct SweeperHandle {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl SweeperHandle {
    /// A handle that says whether the sweeper still runs, for readiness.
    pub fn watch(&self) -> Option<tokio::task::AbortHandle> {
        self.task.as_ref().map(tokio::task::JoinHandle::abort_handle)
    }

    /// Stops ticking, and returns once the sweep in progress, if any, has committed.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SweeperHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Neither the requesting agent nor the human who owns its profile (or an ancestor's) may
/// decide; for an agent's parked accept of a proposal, nor the owner of the profile that
/// proposed it.
fn check_decider(c: &dyn Tx, a: &Approval, by: &Human) -> Result<()> {
    crate::domain::profiles::ensure_not_owner(c, &a.profile_id, by)?;
    if let Some((proposal, _)) = crate::domain::approvals::proposal_in(a)
        && let Some(proposer) = crate::domain::brain::proposer(c, &proposal)?
    {
        crate::domain::profiles::ensure_not_owner(c, &proposer, by)?;
    }
    Ok(())
}

/// The most approvals one bulk decision names.
pub const MAX_BULK: usize = 200;

/// What a bulk request does to each approval it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BulkDecision {
    Approve,
    Deny,
}

/// What became of one approval in a bulk decision.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkOutcome {
    pub id: String,
    /// Whether this decision was recorded.
    pub ok: bool,
    /// `executed`, `refused`, `failed` (the call ran and its connector failed), `waiting`
    /// (more approvals are needed), `denied`; or the error's code when `ok` is false.
    pub outcome: String,
    /// Why, when it did not go through or the call was refused: the stable code's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl BulkOutcome {
    fn of(id: &str, r: Result<(String, Option<String>)>) -> BulkOutcome {
        match r {
            Ok((outcome, message)) => BulkOutcome { id: id.to_string(), ok: true, outcome, message },
            Err(e) => BulkOutcome {
                id: id.to_string(),
                ok: false,
                outcome: e.code().to_string(),
                message: Some(e.to_string()),
            },
        }
    }
}

/// What an approval did: the call ran (or was refused, or failed) and here is its answer, or
/// it waits for more approvals.
#[derive(Debug)]
pub enum Decided {
    Ran(ActionResponse),
    Waiting(Box<Approval>),
}

impl Decided {
    /// The call's answer, if this approval was the last one needed.
    pub fn ran(self) -> Option<ActionResponse> {
        match self {
            Decided::Ran(r) => Some(r),
            Decided::Waiting(_) => None,
        }
    }

    /// What a bulk answer says of it.
    fn outcome(self) -> (String, Option<String>) {
        match self {
            Decided::Waiting(a) => ("waiting".into(), Some(a.quorum.progress())),
            Decided::Ran(r) => match r.disposition {
                Disposition::Executed => ("executed".into(), None),
                Disposition::Refused => ("refused".into(), r.envelope().map(|e| e.message.clone())),
                _ => ("failed".into(), r.envelope().map(|e| e.message.clone())),
            },
        }
    }
}

/// What the approving job found.
enum Approved {
    /// The kit or caps in force refuse the call now; the approval ended refused.
    Refused(ActionResponse),
    /// The approval was recorded; more are needed.
    Waiting,
    /// Approved under the kit version given: run the bound call.
    Run { approval: Box<Approval>, kit_version: u32 },
}

/// Decides an approval in one job: the decider may decide, it is still pending, and the call
/// is allowed under the kits, statuses and totals in force now (its own hold given back).
fn approve_job(
    c: &dyn Tx,
    catalog: &policy::Catalog,
    (tenant, id): (&TenantId, &str),
    by: &Human,
    note: Option<&str>,
    lease: &crate::domain::ledger::leases::Lease,
    now: chrono::DateTime<Utc>,
) -> Result<Approved> {
    let a = approvals::load(c, tenant, id)?;
    let named = approvals::voter(c, &a, by)?;
    check_decider(c, &a, by)?;
    ensure_open(&a, now)?;
    if let approvals::Counted::Waiting = approvals::vote(c, &a, by, note, named)? {
        log_vote(c, &a, by)?;
        return Ok(Approved::Waiting);
    }
    let links = crate::domain::chain::load_links(c, &a.tenant_id, &a.profile_id)?;
    let tool = catalog
        .get(&a.action)
        .cloned()
        .ok_or_else(|| Error::internal("unknown_tool", format!("{} is not in the catalog", a.action)))?;
    let checked = crate::domain::calls::check_args(&a.action, &a.args)?;
    let own = match &a.hold_id {
        Some(h) => Some(held(c, h, a.amount)?),
        None => None,
    };
    let facts = crate::domain::reserve::Facts::parked(c, &a.tenant_id, &links, own, now)?;
    let kit = &links[0].kit;
    let request = crate::domain::calls::request(&tool, &checked);
    let budgets = facts.budgets(&links);
    let rates = crate::domain::decision::Rates::CountedWhenParked;
    let d = policy::evaluate(&facts.input(kit, request, &budgets, rates));
    if let (policy::EngineVerdict::Deny, Some(refusal)) = (d.verdict, d.refusal) {
        let env = policy::Envelope::deny(kit, &request, refusal, 1, Vec::new());
        refuse_approved(c, &a, by, &env, kit.version.0)?;
        return Ok(Approved::Refused(ActionResponse::refused(&env)));
    }
    approvals::mark_approved(c, &a, by, note)?;
    if let Some(h) = &a.hold_id {
        crate::domain::ledger::leases::take(c, h, lease)?;
    }
    activity::append(
        c,
        NewEntry::new(&a.tenant_id, &by.username, Kind::Approval)
            .via(by.via)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(Verdict::Approved)
            .amount(a.amount)
            .kit_version(kit.version.0)
            .detail(json!({ "approval_id": a.id, "credential": by.credential })),
    )?;
    Ok(Approved::Run { approval: Box::new(a), kit_version: kit.version.0 })
}

/// `a` still waits for a decision at `now`: neither decided nor past its window.
fn ensure_open(a: &Approval, now: chrono::DateTime<Utc>) -> Result<()> {
    if a.status != ApprovalStatus::Pending {
        return Err(Error::Conflict {
            code: "approval_already_decided",
            message: format!("this approval is already {}", a.status.as_str()),
        });
    }
    if a.expires_at <= now {
        return Err(Error::Conflict {
            code: "approval_expired",
            message: "this approval has expired; the agent must ask again".into(),
        });
    }
    Ok(())
}

/// Records in the log an approval that did not yet release its call.
fn log_vote(c: &dyn Tx, a: &Approval, by: &Human) -> Result<Entry> {
    activity::append(
        c,
        NewEntry::new(&a.tenant_id, &by.username, Kind::Approval)
            .via(by.via)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(Verdict::Voted)
            .amount(a.amount)
            .kit_version(a.kit_version)
            .detail(
                json!({ "approval_id": a.id, "credential": by.credential, "progress": a.quorum.required }),
            ),
    )
}

/// What a pending hold of `amount` holds: its platform-credit part and its day. A hold that
/// has ended is a conflict.
fn held(c: &dyn Tx, hold: &str, amount: Money) -> Result<crate::domain::reserve::Own> {
    let (credit, day) = ledger::pending_part(c, hold)?.ok_or_else(|| Error::Conflict {
        code: "hold_already_ended",
        message: "this approval's hold has already ended; the agent must ask again".into(),
    })?;
    Ok(crate::domain::reserve::Own { amount, credit, day })
}

/// Ends an approval refused at decision time: denied with the refusal as its reason and
/// result, its hold voided, the trail and the log saying why.
fn refuse_approved(
    c: &dyn Tx,
    a: &Approval,
    by: &Human,
    env: &policy::Envelope,
    kit_version: u32,
) -> Result<Vec<Entry>> {
    let reason = format!("refused when approved: {}", env.message);
    approvals::mark_refused(c, a, by, &reason, env)?;
    if let Some(h) = &a.hold_id {
        ledger::end(c, &a.tenant_id, h, HoldEnd::Voided, Money::ZERO, Some(kit_version))?;
    }
    crate::domain::brain::return_parked(c, &a.id, &by.username, &reason)?;
    Ok(vec![activity::append(
        c,
        NewEntry::new(&a.tenant_id, &by.username, Kind::Approval)
            .via(by.via)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(Verdict::Refused)
            .amount(a.amount)
            .kit_version(kit_version)
            .detail(json!({ "approval_id": a.id, "reason": env.error.details.reason, "hold_id": a.hold_id, "hold": "voided", "credential": by.credential })),
    )?])
}
