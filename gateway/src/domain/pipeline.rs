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
use policy::{
    ActionRequest, CheckedArgs, DecisionInput, Envelope, Kit, Money, SubjectStatus, ToolSpec, derive_child,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Gateway;
use crate::delivery::connectors::{Call, Connector};
use crate::domain::keys::Subject;
use crate::domain::ledger;
use crate::domain::reserve::{self, Reserved};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

/// A governed call as a transport received it.
#[derive(Clone, Debug)]
pub struct ActionCall {
    pub token: String,
    pub action: String,
    pub args: Value,
    pub idempotency_key: Option<String>,
}

/// How a call ended, which transports map to their status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Executed,
    Parked,
    Refused,
    Unavailable,
    /// Not carried out because the tenant's outbox queue is at its bound (`outbox_full`):
    /// retryable once earlier commands are delivered.
    Full,
}

impl Disposition {
    pub(crate) fn as_i64(self) -> i64 {
        match self {
            Disposition::Executed => 1,
            Disposition::Parked => 2,
            Disposition::Refused => 3,
            Disposition::Unavailable => 4,
            Disposition::Full => 5,
        }
    }
    pub(crate) fn from_i64(v: i64) -> Option<Disposition> {
        Some(match v {
            1 => Disposition::Executed,
            2 => Disposition::Parked,
            3 => Disposition::Refused,
            4 => Disposition::Unavailable,
            5 => Disposition::Full,
            _ => return None,
        })
    }
}

/// The answer to a governed call: the result, or a verdict envelope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionResponse {
    pub disposition: Disposition,
    pub body: Value,
    /// True when this is the stored first answer to a repeated Idempotency-Key.
    pub replayed: bool,
}

impl ActionResponse {
    pub(crate) fn refused(env: &Envelope) -> ActionResponse {
        ActionResponse {
            disposition: Disposition::Refused,
            body: serde_json::to_value(env).expect("envelopes serialize"),
            replayed: false,
        }
    }
}

pub use policy::args::MAX_ARGS_BYTES;
/// The longest Idempotency-Key accepted.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 200;
/// How many times a call is decided again after finding a kit it used stale.
const STALE_RETRIES: usize = 3;

/// A reserved call on its way to its connector.
#[derive(Clone)]
pub(crate) struct Carry {
    pub subject: Subject,
    pub tool: ToolSpec,
    pub args: Value,
    pub hold: String,
    pub cost: Money,
    pub kit_version: u32,
    /// Who the record names as acting: the profile, or the human who approved the call.
    pub actor: String,
    /// What the upstream sees as the action's id ([`action_id`]).
    pub action_id: String,
}

impl Carry {
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
    carry: &Carry,
    connector: &Arc<dyn Connector>,
) -> Result<ActionResponse> {
    let outcome = connector
        .execute_in(c, &carry.call())?
        .ok_or_else(|| Error::internal("runtime_write_not_queued", "a runtime write has no command"))?;
    let (resp, _) = reserve::settle(
        c,
        &carry.subject,
        &carry.tool.name,
        &carry.hold,
        outcome,
        carry.cost,
        carry.kit_version,
        &carry.actor,
        connector.kind(),
    )?;
    Ok(resp)
}

/// The id an upstream sees for a call: the same for every resend of one Idempotency-Key by one
/// profile, so a retry after a timeout reaches the upstream as the action it may already
/// have carried out; without a key, the hold's id.
pub(crate) fn action_id(profile: &ProfileId, idem: Option<&str>, hold: &str) -> String {
    match idem {
        Some(k) => format!("act_{}", &digest(&json!([profile.as_str(), k]))[..32]),
        None => hold.to_string(),
    }
}

/// Checks `args` against `action`'s declaration: what the engine reads, or the refusal.
pub(crate) fn check_args(action: &str, args: &Value) -> Result<CheckedArgs> {
    let decl = policy::args::declaration(action)
        .ok_or_else(|| Error::internal("undeclared_action", format!("`{action}` declares no arguments")))?;
    decl.check(args).map_err(|e| Error::invalid(e.code, e.message))
}

/// The engine's view of a call's arguments.
pub(crate) fn request<'a>(tool: &'a ToolSpec, a: &'a CheckedArgs) -> ActionRequest<'a> {
    ActionRequest {
        tool,
        amount: a.amount,
        recipient: a.recipient.as_deref(),
        merchant: a.merchant.as_deref(),
        toolkit: a.toolkit.as_ref().map(|(k, t)| (k.as_str(), t.as_str())),
    }
}

/// SHA-256 of the canonical JSON, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call
/// whatever order serde_json keeps keys in (a dependency may turn on `preserve_order`).
pub(crate) fn digest(v: &Value) -> String {
    let mut out = String::new();
    canonical(v, &mut out);
    hex::encode(Sha256::digest(out.as_bytes()))
}

/// Writes `v` with object keys sorted, recursively.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// One link of the acting profile's chain, nearest first.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub tenant: TenantId,
    pub profile: ProfileId,
    /// The profile's own status; the chain's standing is [`chain_status`].
    pub status: SubjectStatus,
    /// The profile's effective kit: its own narrowed by every ancestor's. Its `name` and
    /// `version` are the profile's own kit's.
    pub kit: Kit,
}

/// The standing of the profile that acts: the first status in its chain that is not active
/// (its own, or any ancestor's), else active.
pub(crate) fn chain_status(links: &[Link]) -> SubjectStatus {
    links.iter().map(|l| l.status).find(|s| *s != SubjectStatus::Active).unwrap_or(SubjectStatus::Active)
}

/// Narrows each link's kit by its parent's, from the root down.
fn narrow(links: &mut [Link]) {
    for i in (0..links.len().saturating_sub(1)).rev() {
        let own = links[i].kit.clone();
        let mut derived = derive_child(&links[i + 1].kit, &own);
        derived.version = own.version;
        links[i].kit = derived;
    }
}

/// The recursive read of a profile's chain: id, kit name, status, nearest first.
const CHAIN_SQL: &str = "WITH RECURSIVE chain(id, parent, kit_name, status, depth) AS ( \
       SELECT id, parent_id, kit_name, status, 0 FROM agent_profiles WHERE id = ?1 AND tenant_id = ?2 \
       UNION ALL SELECT p.id, p.parent_id, p.kit_name, p.status, c.depth + 1 \
       FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
     SELECT id, kit_name, status FROM chain ORDER BY depth";

fn status_of(s: &str) -> SubjectStatus {
    SubjectStatus::parse(s).unwrap_or(SubjectStatus::Suspended)
}

/// One row of [`CHAIN_SQL`]: the profile's id, its kit's name, its status.
type ChainRow = (String, String, String);

/// The chain from its rows (nearest first) and each row's own kit, each level's kit narrowed
/// by its parent's.
fn chain(tenant: &TenantId, rows: Vec<ChainRow>, kits: Vec<Kit>) -> Result<Vec<Link>> {
    if rows.is_empty() {
        return Err(Error::NotFound { what: "agent profile" });
    }
    let mut links: Vec<Link> = rows
        .into_iter()
        .zip(kits)
        .map(|((id, _, status), kit)| Link {
            tenant: tenant.clone(),
            profile: ProfileId::from_db(id),
            status: status_of(&status),
            kit,
        })
        .collect();
    narrow(&mut links);
    Ok(links)
}

/// The chain with current kits, read on the writer's connection (for a decision made inside
/// a job, such as an approval).
pub(crate) fn load_links(
    c: &dyn crate::sql::Tx,
    tenant: &TenantId,
    profile: &ProfileId,
) -> Result<Vec<Link>> {
    let rows = c
        .rows(CHAIN_SQL, &[&profile.as_str(), &tenant.as_str()])?
        .iter()
        .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .collect::<Result<Vec<ChainRow>>>()?;
    let kits =
        rows.iter().map(|r| crate::domain::kits::current_kit_in(c, tenant, &r.1)).collect::<Result<_>>()?;
    chain(tenant, rows, kits)
}

impl Gateway {
    /// The profile and its ancestors with their effective kits, from the cache when possible.
    pub(crate) async fn cached_links(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
    ) -> Result<Arc<Vec<Link>>> {
        if let Some(l) = self.links_cache.get(profile)
            && &l[0].tenant == tenant
        {
            return Ok(l);
        }
        let generation = self.links_cache.generation();
        let links = Arc::new(self.links(tenant, profile).await?);
        self.links_cache.insert(generation, profile.clone(), links.clone());
        Ok(links)
    }

    /// The profile and its ancestors with their statuses and effective (narrowed) kits.
    pub(crate) async fn links(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<Link>> {
        let rows: Vec<ChainRow> = self.store.all(CHAIN_SQL, &[profile, tenant]).await?;
        let mut kits = Vec::with_capacity(rows.len());
        for (_, kit_name, _) in &rows {
            kits.push(self.cached_kit(tenant, kit_name).await?);
        }
        chain(tenant, rows, kits)
    }

    /// Each profile in `chain`'s effective kit, nearest first.
    pub async fn effective_kits(&self, tenant: &TenantId, chain: &[ProfileId]) -> Result<Vec<Kit>> {
        let Some(first) = chain.first() else { return Ok(Vec::new()) };
        Ok(self.links(tenant, first).await?.into_iter().map(|l| l.kit).collect())
    }

    pub(crate) fn tool(&self, action: &str) -> Result<ToolSpec> {
        self.catalog.get(action).cloned().ok_or_else(|| {
            Error::invalid(
                "unknown_action",
                format!("`{action}` is not a known action; actions look like `cards.charge` or `web.read`"),
            )
        })
    }

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
        let listing = action == crate::delivery::connectors::apps::LISTING;
        let mut resp = self.perform_unfiltered(subject, action, args, idem).await?;
        if listing && resp.disposition == Disposition::Executed {
            let links = self.cached_links(&subject.tenant, &subject.profile).await?;
            crate::delivery::connectors::apps::filter_listing(&links[0].kit, &mut resp.body["result"]);
        }
        Ok(resp)
    }

    async fn perform_unfiltered(
        &self,
        subject: &Subject,
        action: String,
        args: Value,
        idem: Option<String>,
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
        let mut job = Arc::new(reserve::ReserveJob {
            subject: subject.clone(),
            request_digest: digest(&json!([action, args])),
            args_digest: digest(&args),
            connector: connector.clone(),
            tool,
            args,
            checked,
            idem,
            ttl: Duration::seconds(self.config.approval_ttl_secs),
            answer: Arc::default(),
            lease: self.leases.lease(),
            links: self.cached_links(&subject.tenant, &subject.profile).await?,
        });
        for _ in 0..STALE_RETRIES {
            let j = job.clone();
            match self.write(move |c| j.run(c)).await? {
                Reserved::Final(resp) => {
                    if crate::delivery::connectors::runtime::queues_command(&job.tool) {
                        self.wake_delivery();
                    }
                    return Ok(resp);
                }
                Reserved::Hold { hold, cost, kit_version } => {
                    return self.carry_out(job.carry(&hold, cost, kit_version), connector).await;
                }
                // Another process saved a kit this call used: decide again on current kits.
                Reserved::Stale => {
                    self.kit_cache.invalidate();
                    self.links_cache.remove(&subject.profile);
                    let links = self.cached_links(&subject.tenant, &subject.profile).await?;
                    job = Arc::new(reserve::ReserveJob { links, ..(*job).clone() });
                }
            }
        }
        Err(Error::unavailable(
            "kit_changing",
            "the kit kept changing while this call was decided; send it again",
            1,
        ))
    }

    /// Carries out a reserved call on `connector` and settles its hold: post on success, void
    /// on failure. The hold is leased to this instance until it has settled.
    pub(crate) async fn carry_out(
        &self,
        carry: Carry,
        connector: Arc<dyn Connector>,
    ) -> Result<ActionResponse> {
        let _carrying = self.leases.carry(&carry.hold);
        let call = carry.call();
        let kind = connector.kind();
        if crate::delivery::connectors::runtime::queues_command(&carry.tool) {
            // A runtime write queues its command in the job that settles the hold.
            let resp = self.write(move |c| settle_in_job(c, &carry, &connector)).await?;
            self.wake_delivery();
            return Ok(resp);
        }
        let outcome = connector.execute(&call).await;
        let (s, name, hold, cost, v, actor) =
            (carry.subject, call.action, carry.hold, carry.cost, carry.kit_version, carry.actor);
        let (resp, _) = self
            .write(move |c| reserve::settle(c, &s, &name, &hold, outcome.clone(), cost, v, &actor, kind))
            .await?;
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
        let mut totals = Vec::with_capacity(links.len());
        for l in links.iter() {
            let (posted, pending): (i64, i64) = self
                .store
                .one(
                    "SELECT posted_units, pending_units FROM budget_accounts WHERE profile_id = ?",
                    &[&l.profile],
                )
                .await?;
            totals.push(ledger::Totals { posted: ledger::money(posted), pending: ledger::money(pending) });
        }
        let (credit, credit_pending): (i64, i64) = self
            .store
            .one("SELECT credit_units, credit_pending_units FROM tenants WHERE id = ?", &[&subject.tenant])
            .await?;
        let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        let budgets = ledger::views(&totals, &kits);
        Ok(policy::explain(&DecisionInput {
            subject: chain_status(&links),
            kit: &links[0].kit,
            action: request(&tool, &checked),
            budgets: &budgets,
            company_credit: ledger::money(credit).saturating_sub(ledger::money(credit_pending)),
        }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_ignore_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":{"y":1,"x":[2,{"q":1,"p":2}]},"a":"s"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":"s","b":{"x":[2,{"p":2,"q":1}],"y":1}}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&serde_json::json!({"a": "t"})));
    }
}
