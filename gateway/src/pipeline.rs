//! The governed action pipeline (SPEC §5): one function every transport calls.
//!
//! authenticate → revocation → `policy` decision → hold → execute or park → settle → record
//! → emit. The decision and the reservation happen in one writer job, on totals read in that
//! job, so concurrent calls can never overspend a cap. Execution happens outside any
//! transaction (a connector may be slow); settling is a second job. Every job appends its
//! activity entries in the same transaction, and they are published only after commit.
//!
//! Bad input (an unknown action, malformed or oversize arguments, invalid money) is refused
//! before any write. A repeated `Idempotency-Key` from the same subject returns the first
//! response and causes no second effect.

use std::sync::Arc;

use chrono::{Duration, Utc};
use policy::{
    ActionRequest, ApprovalHandle, DecisionInput, EngineVerdict, Envelope, Kit, Money, Refusal,
    SubjectStatus, ToolSpec, derive_child, evaluate,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Gateway;
use crate::activity::{self, Entry, Kind, NewEntry};
use crate::connectors::{Call, Connector};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::keys::Subject;
use crate::ledger::{self, HoldEnd, NewHold};

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
}

impl Disposition {
    fn as_i64(self) -> i64 {
        match self {
            Disposition::Executed => 1,
            Disposition::Parked => 2,
            Disposition::Refused => 3,
            Disposition::Unavailable => 4,
        }
    }
    fn from_i64(v: i64) -> Option<Disposition> {
        Some(match v {
            1 => Disposition::Executed,
            2 => Disposition::Parked,
            3 => Disposition::Refused,
            4 => Disposition::Unavailable,
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

/// The largest argument object accepted, serialized.
pub const MAX_ARGS_BYTES: usize = 16 * 1024;
/// The longest Idempotency-Key accepted.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 200;

/// Arguments the decision needs, parsed once at the edge.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParsedArgs {
    pub amount: Money,
    pub recipient: Option<String>,
    pub merchant: Option<String>,
    pub toolkit: Option<(String, String)>,
}

pub(crate) fn parse_args(args: &Value) -> Result<ParsedArgs> {
    let size = args.to_string().len();
    if size > MAX_ARGS_BYTES {
        return Err(Error::invalid(
            "args_too_large",
            format!("arguments are {size} bytes; the limit is {MAX_ARGS_BYTES}"),
        ));
    }
    let Some(obj) = args.as_object() else {
        return Err(Error::invalid("invalid_args", "arguments must be a JSON object"));
    };
    let text = |k: &str| -> Result<Option<String>> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::invalid("invalid_args", format!("`{k}` must be a string"))),
        }
    };
    let amount = match obj.get("amount") {
        None | Some(Value::Null) => Money::ZERO,
        Some(v) => serde_json::from_value::<Money>(v.clone()).map_err(|e| {
            Error::invalid("invalid_amount", format!("`amount`: {e}; write it as a string such as \"48.00\""))
        })?,
    };
    let toolkit = match (text("toolkit")?, text("tool")?) {
        (Some(k), Some(t)) => Some((k, t)),
        (Some(_), None) => {
            return Err(Error::invalid("invalid_args", "`toolkit` needs `tool` naming the tool within it"));
        }
        _ => None,
    };
    Ok(ParsedArgs { amount, recipient: text("to")?, merchant: text("merchant")?, toolkit })
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

/// One link of the acting profile's chain, nearest first.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub tenant: TenantId,
    pub profile: ProfileId,
    pub status: SubjectStatus,
    pub kit: Kit,
}

enum Reserved {
    Final(ActionResponse, Vec<Entry>),
    Hold { hold: String, cost: Money, kit_version: u32, entries: Vec<Entry> },
}

impl Gateway {
    /// The profile and its ancestors with their effective kits, from the cache when possible.
    pub(crate) async fn cached_links(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
    ) -> Result<Arc<Vec<Link>>> {
        if let Some(l) = self.links_cache.read().expect("links cache lock").get(profile)
            && &l[0].tenant == tenant
        {
            return Ok(l.clone());
        }
        let links = Arc::new(self.links(tenant, profile).await?);
        let mut cache = self.links_cache.write().expect("links cache lock");
        if cache.len() >= crate::MAX_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(profile.clone(), links.clone());
        Ok(links)
    }

    /// The profile and its ancestors with their statuses and effective (narrowed) kits.
    pub(crate) async fn links(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<Link>> {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "WITH RECURSIVE chain(id, parent, kit_name, status, depth) AS ( \
               SELECT id, parent_id, kit_name, status, 0 FROM agent_profiles WHERE id = ? AND tenant_id = ? \
               UNION ALL SELECT p.id, p.parent_id, p.kit_name, p.status, c.depth + 1 \
               FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
             SELECT id, kit_name, status FROM chain ORDER BY depth",
        )
        .bind(profile.as_str())
        .bind(tenant.as_str())
        .fetch_all(self.store.pool())
        .await?;
        if rows.is_empty() {
            return Err(Error::NotFound { what: "agent profile" });
        }
        let mut links = Vec::with_capacity(rows.len());
        for (id, kit_name, status) in rows {
            links.push(Link {
                tenant: tenant.clone(),
                profile: ProfileId::from_db(id),
                status: SubjectStatus::parse(&status).unwrap_or(SubjectStatus::Suspended),
                kit: self.cached_kit(tenant, &kit_name).await?,
            });
        }
        // Narrow from the root down: each level's effective kit is derived from its parent's.
        for i in (0..links.len().saturating_sub(1)).rev() {
            let own = links[i].kit.clone();
            let mut derived = derive_child(&links[i + 1].kit, &own);
            derived.version = own.version;
            links[i].kit = derived;
        }
        Ok(links)
    }

    /// Each profile in `chain`'s effective kit, nearest first.
    pub async fn effective_kits(&self, tenant: &TenantId, chain: &[ProfileId]) -> Result<Vec<Kit>> {
        let Some(first) = chain.first() else { return Ok(Vec::new()) };
        Ok(self.links(tenant, first).await?.into_iter().map(|l| l.kit).collect())
    }

    fn tool(&self, action: &str) -> Result<ToolSpec> {
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

    /// The pipeline after authentication.
    pub async fn perform_as(
        &self,
        subject: &Subject,
        action: String,
        args: Value,
        idem: Option<String>,
    ) -> Result<ActionResponse> {
        let tool = self.tool(&action)?;
        let parsed = parse_args(&args)?;
        if let Some(k) = &idem
            && (k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY_LEN)
        {
            return Err(Error::invalid(
                "invalid_idempotency_key",
                format!("an Idempotency-Key is 1 to {MAX_IDEMPOTENCY_KEY_LEN} characters"),
            ));
        }
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        let args_digest = digest(&args);
        let request_digest = digest(&json!([action, args]));
        let ttl = Duration::seconds(self.config.approval_ttl_secs);
        let (s, t, a, ar) = (subject.clone(), tool.clone(), args.clone(), args_digest.clone());
        let connector = self.connectors.get(tool.primitive).clone();
        // The writer may run the job twice; the connector is asked once.
        let answer = std::sync::OnceLock::new();
        let reserved = self
            .writer
            .run(move |c| {
                reserve_job(
                    c,
                    &s,
                    &t,
                    &a,
                    &ar,
                    &parsed,
                    &links,
                    idem.as_deref(),
                    &request_digest,
                    ttl,
                    &*connector,
                    &answer,
                )
            })
            .await?;
        match reserved {
            Reserved::Final(resp, entries) => {
                self.bus.publish(entries);
                Ok(resp)
            }
            Reserved::Hold { hold, cost, kit_version, entries } => {
                self.bus.publish(entries);
                self.execute_and_settle(
                    subject,
                    &tool,
                    args,
                    hold,
                    cost,
                    kit_version,
                    subject.profile.as_str(),
                )
                .await
            }
        }
    }

    /// Carries out a reserved call and settles its hold: post on success, void on failure.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn execute_and_settle(
        &self,
        subject: &Subject,
        tool: &ToolSpec,
        args: Value,
        hold: String,
        cost: Money,
        kit_version: u32,
        actor: &str,
    ) -> Result<ActionResponse> {
        let call = Call { action: tool.name.clone(), primitive: tool.primitive, args, reserved: cost };
        let outcome = self.connectors.get(tool.primitive).execute(&call).await;
        let (s, name, actor) = (subject.clone(), tool.name.clone(), actor.to_string());
        let (resp, entries) = self
            .writer
            .run(move |c| settle(c, &s, &name, &hold, outcome.clone(), cost, kit_version, &actor))
            .await?;
        self.bus.publish(entries);
        Ok(resp)
    }
}

type ConnectorOutcome = std::result::Result<crate::connectors::Done, crate::connectors::Failure>;

/// Settles a reserved hold with the connector's outcome: post and record on success; on
/// failure void the hold, record the outage and forget the idempotency claim (an outage is
/// retryable with the same key).
#[allow(clippy::too_many_arguments)]
fn settle(
    c: &Connection,
    s: &Subject,
    name: &str,
    hold: &str,
    outcome: ConnectorOutcome,
    cost: Money,
    kit_version: u32,
    actor: &str,
) -> Result<(ActionResponse, Vec<Entry>)> {
    match outcome {
        Ok(done) => {
            let posted = ledger::end(c, hold, HoldEnd::Posted, done.cost)?;
            let (resp, e) = executed(c, s, name, hold, done.result, posted, kit_version, actor)?;
            finish_idempotency(c, hold, Disposition::Executed, &resp.body)?;
            Ok((resp, vec![e]))
        }
        Err(f) => {
            ledger::end(c, hold, HoldEnd::Voided, Money::ZERO)?;
            let env = Envelope::unavailable(name, &f.detail, f.retry_after_secs, 1);
            let e = activity::append(
                c,
                NewEntry::new(&s.tenant, actor, Kind::Refusal)
                    .profile(&s.profile)
                    .action(name)
                    .verdict("unavailable")
                    .amount(cost)
                    .kit_version(kit_version)
                    .detail(json!({ "hold_id": hold, "hold": "voided", "reason": f.detail })),
            )?;
            c.prepare_cached("DELETE FROM idempotency WHERE status = 0 AND response = ?")?.execute([hold])?;
            let body = serde_json::to_value(&env).expect("envelopes serialize");
            Ok((ActionResponse { disposition: Disposition::Unavailable, body, replayed: false }, vec![e]))
        }
    }
}

/// Records a carried-out call whose hold has posted, and builds the agent's answer.
#[allow(clippy::too_many_arguments)]
fn executed(
    c: &Connection,
    s: &Subject,
    name: &str,
    hold: &str,
    result: Value,
    posted: Money,
    kit_version: u32,
    actor: &str,
) -> Result<(ActionResponse, Entry)> {
    let body = json!({ "ok": true, "action": name, "result": result, "cost": posted, "hold_id": hold });
    let e = activity::append(
        c,
        NewEntry::new(&s.tenant, actor, Kind::Action)
            .profile(&s.profile)
            .action(name)
            .verdict("allow")
            .amount(posted)
            .kit_version(kit_version)
            .detail(json!({ "hold_id": hold, "hold": "posted" })),
    )?;
    Ok((ActionResponse { disposition: Disposition::Executed, body, replayed: false }, e))
}

/// Replaces an in-progress idempotency claim (which holds the hold id) with the response.
fn finish_idempotency(c: &Connection, hold: &str, d: Disposition, body: &Value) -> Result<()> {
    c.prepare_cached("UPDATE idempotency SET status = ?, response = ? WHERE status = 0 AND response = ?")?
        .execute(params![d.as_i64(), body.to_string(), hold])?;
    Ok(())
}

fn store_idempotency(
    c: &Connection,
    profile: &ProfileId,
    key: Option<&str>,
    digest: &str,
    d: Option<Disposition>,
    body: &str,
) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    c.prepare_cached(
        "INSERT INTO idempotency (profile_id, idempotency_key, request_digest, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )?
    .execute(params![profile.as_str(), key, digest, d.map_or(0, Disposition::as_i64), body, db::ts(Utc::now())])?;
    Ok(())
}

/// Counts an identical refusal and returns how many there have been.
pub(crate) fn count_repeat(
    c: &Connection,
    profile: &ProfileId,
    action: &str,
    args_digest: &str,
) -> Result<u32> {
    let n: i64 = c
        .prepare_cached(
            "INSERT INTO refusal_repeats (profile_id, action, args_digest, count, last_at) VALUES (?, ?, ?, 1, ?) \
             ON CONFLICT(profile_id, action, args_digest) DO UPDATE SET count = count + 1, last_at = excluded.last_at RETURNING count",
        )?
        .query_row(params![profile.as_str(), action, args_digest, db::ts(Utc::now())], |r| r.get(0))?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

#[allow(clippy::too_many_arguments)]
fn reserve_job(
    c: &Connection,
    s: &Subject,
    tool: &ToolSpec,
    args: &Value,
    args_digest: &str,
    parsed: &ParsedArgs,
    links: &[Link],
    idem: Option<&str>,
    request_digest: &str,
    ttl: Duration,
    connector: &dyn Connector,
    answer: &std::sync::OnceLock<Option<ConnectorOutcome>>,
) -> Result<Reserved> {
    if let Some(key) = idem {
        let row: Option<(String, i64, String)> = c
            .prepare_cached("SELECT request_digest, status, response FROM idempotency WHERE profile_id = ? AND idempotency_key = ?")?
            .query_row(params![s.profile.as_str(), key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((digest, status, response)) = row {
            if digest != request_digest {
                return Err(Error::Conflict {
                    code: "idempotency_key_reused",
                    message:
                        "this Idempotency-Key was used for a different call; use a new key for a new call"
                            .into(),
                });
            }
            let Some(d) = Disposition::from_i64(status) else {
                return Err(Error::Conflict {
                    code: "idempotency_in_progress",
                    message: "the first call with this Idempotency-Key is still running; poll again shortly"
                        .into(),
                });
            };
            let body = serde_json::from_str(&response).unwrap_or(Value::Null);
            return Ok(Reserved::Final(ActionResponse { disposition: d, body, replayed: true }, Vec::new()));
        }
    }
    // Status is read here, in the deciding job, so a revoke is never missed by a cache.
    let status: String = c
        .prepare_cached("SELECT status FROM agent_profiles WHERE id = ?")?
        .query_row([s.profile.as_str()], |r| r.get(0))?;
    let status = SubjectStatus::parse(&status).unwrap_or(SubjectStatus::Suspended);
    let chain: Vec<ProfileId> = links.iter().map(|l| l.profile.clone()).collect();
    let totals = ledger::totals(c, &chain)?;
    let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
    let budgets = ledger::views(&totals, &kits);
    let credit = ledger::credit_available(c, &s.tenant)?;
    let kit = &links[0].kit;
    let request = ActionRequest {
        tool,
        amount: parsed.amount,
        recipient: parsed.recipient.as_deref(),
        merchant: parsed.merchant.as_deref(),
        toolkit: parsed.toolkit.as_ref().map(|(k, t)| (k.as_str(), t.as_str())),
    };
    let decision = evaluate(&DecisionInput {
        subject: status,
        kit,
        action: request,
        budgets: &budgets,
        company_credit: credit,
    });
    let kit_version = kit.version.0;
    // Both an allowed and a parked action hold their cost; a denied one holds nothing.
    let reserve_hold = || {
        let hold = NewHold {
            tenant: s.tenant.clone(),
            chain: chain.clone(),
            action: tool.name.clone(),
            amount: decision.cost,
            credit: tool.price,
            kit_version,
        };
        ledger::reserve(c, &hold)
    };
    let actor = s.profile.as_str().to_string();
    match (decision.verdict, decision.refusal) {
        (EngineVerdict::Deny, Some(refusal)) => {
            let repeat = count_repeat(c, &s.profile, &tool.name, args_digest)?;
            let env = Envelope::deny(kit, &request, refusal, repeat, Vec::new());
            let body = serde_json::to_value(&env).expect("envelopes serialize");
            let mut entries = vec![activity::append(
                c,
                NewEntry::new(&s.tenant, &actor, Kind::Refusal)
                    .profile(&s.profile)
                    .action(&tool.name)
                    .verdict("deny")
                    .amount(decision.cost)
                    .kit_version(kit_version)
                    .detail(
                        json!({ "reason": env.reason, "detail": env.error.details.reason, "repeat": repeat }),
                    ),
            )?];
            if matches!(refusal, Refusal::HardCapExceeded { .. } | Refusal::CompanyCreditExhausted { .. }) {
                entries.extend(stop_runtime(c, &s.tenant, &s.profile, "budget_exhausted")?);
            }
            store_idempotency(
                c,
                &s.profile,
                idem,
                request_digest,
                Some(Disposition::Refused),
                &body.to_string(),
            )?;
            Ok(Reserved::Final(
                ActionResponse { disposition: Disposition::Refused, body, replayed: false },
                entries,
            ))
        }
        (EngineVerdict::Freeze, Some(refusal)) => {
            let hold = reserve_hold()?;
            let approval = format!("apr_{}", uuid::Uuid::now_v7().simple());
            let now = Utc::now();
            let expires = now + ttl;
            c.prepare_cached(
                "INSERT INTO approvals (id, tenant_id, profile_id, hold_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, status, requested_at, expires_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            )?
            .execute(params![
                approval,
                s.tenant.as_str(),
                s.profile.as_str(),
                hold,
                tool.name,
                args.to_string(),
                args_digest,
                decision.cost.units(),
                kit.name,
                i64::from(kit_version),
                refusal.detail(),
                db::ts(now),
                db::ts(expires)
            ])?;
            crate::approvals::trail(c, &approval, &actor, "requested", Some(refusal.detail()))?;
            let env = Envelope::park(
                kit,
                &request,
                refusal,
                ApprovalHandle {
                    approval_id: approval.clone(),
                    expires_at: expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                },
            );
            let body = serde_json::to_value(&env).expect("envelopes serialize");
            let e = activity::append(
                c,
                NewEntry::new(&s.tenant, &actor, Kind::Park)
                    .profile(&s.profile)
                    .action(&tool.name)
                    .verdict("park")
                    .amount(decision.cost)
                    .kit_version(kit_version)
                    .detail(json!({ "approval_id": approval, "hold_id": hold, "reason": refusal.detail(), "expires_at": expires })),
            )
            ?;
            store_idempotency(
                c,
                &s.profile,
                idem,
                request_digest,
                Some(Disposition::Parked),
                &body.to_string(),
            )?;
            Ok(Reserved::Final(
                ActionResponse { disposition: Disposition::Parked, body, replayed: false },
                vec![e],
            ))
        }
        _ => {
            // An in-process connector answers now: settle in this same transaction.
            let call = Call {
                action: tool.name.clone(),
                primitive: tool.primitive,
                args: args.clone(),
                reserved: decision.cost,
            };
            match answer.get_or_init(|| connector.execute_now(&call)).clone() {
                Some(Ok(done)) => {
                    let hold = NewHold {
                        tenant: s.tenant.clone(),
                        chain: chain.clone(),
                        action: tool.name.clone(),
                        amount: decision.cost,
                        credit: tool.price,
                        kit_version,
                    };
                    let (hold, posted) = ledger::post_now(c, &hold, done.cost)?;
                    let (resp, e) =
                        executed(c, s, &tool.name, &hold, done.result, posted, kit_version, &actor)?;
                    let body = resp.body.to_string();
                    store_idempotency(
                        c,
                        &s.profile,
                        idem,
                        request_digest,
                        Some(Disposition::Executed),
                        &body,
                    )?;
                    Ok(Reserved::Final(resp, vec![e]))
                }
                Some(Err(failure)) => {
                    let hold = reserve_hold()?;
                    store_idempotency(c, &s.profile, idem, request_digest, None, &hold)?;
                    let (resp, entries) =
                        settle(c, s, &tool.name, &hold, Err(failure), decision.cost, kit_version, &actor)?;
                    Ok(Reserved::Final(resp, entries))
                }
                None => {
                    let hold = reserve_hold()?;
                    store_idempotency(c, &s.profile, idem, request_digest, None, &hold)?;
                    Ok(Reserved::Hold { hold, cost: decision.cost, kit_version, entries: Vec::new() })
                }
            }
        }
    }
}

/// Stops a profile's hosted runtime, recording why. Idempotent.
pub(crate) fn stop_runtime(
    c: &Connection,
    tenant: &TenantId,
    profile: &ProfileId,
    reason: &str,
) -> Result<Vec<Entry>> {
    let changed = c
        .prepare_cached(
            "UPDATE agent_profiles SET runtime_state = 'stopped', runtime_reason = ? WHERE id = ? AND tenant_id = ? AND runtime_state = 'running'",
        )?
        .execute(params![reason, profile.as_str(), tenant.as_str()])?;
    if changed == 0 {
        return Ok(Vec::new());
    }
    Ok(vec![activity::append(
        c,
        NewEntry::new(tenant, "system", Kind::Profile)
            .profile(profile)
            .verdict("runtime_stopped")
            .detail(json!({ "reason": reason })),
    )?])
}

impl Gateway {
    /// A dry run of the pipeline for `action`: every reason that would apply now, with the
    /// cost. Reserves nothing and writes nothing (SPEC §8: explain answers allow | deny | park).
    pub async fn explain_call(
        &self,
        subject: &Subject,
        action: &str,
        args: &Value,
    ) -> Result<policy::Explanation> {
        let tool = self.tool(action)?;
        let parsed = parse_args(args)?;
        let links = self.links(&subject.tenant, &subject.profile).await?;
        let mut totals = Vec::with_capacity(links.len());
        for l in links.iter() {
            let (posted, pending): (i64, i64) = sqlx::query_as(
                "SELECT posted_units, pending_units FROM budget_accounts WHERE profile_id = ?",
            )
            .bind(l.profile.as_str())
            .fetch_one(self.store.pool())
            .await?;
            totals.push(ledger::Totals {
                posted: Money::from_units(posted).unwrap_or(Money::ZERO),
                pending: Money::from_units(pending).unwrap_or(Money::ZERO),
            });
        }
        let (credit, credit_pending): (i64, i64) =
            sqlx::query_as("SELECT credit_units, credit_pending_units FROM tenants WHERE id = ?")
                .bind(subject.tenant.as_str())
                .fetch_one(self.store.pool())
                .await?;
        let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        let budgets = ledger::views(&totals, &kits);
        let request = ActionRequest {
            tool: &tool,
            amount: parsed.amount,
            recipient: parsed.recipient.as_deref(),
            merchant: parsed.merchant.as_deref(),
            toolkit: parsed.toolkit.as_ref().map(|(k, t)| (k.as_str(), t.as_str())),
        };
        Ok(policy::explain(&DecisionInput {
            subject: links[0].status,
            kit: &links[0].kit,
            action: request,
            budgets: &budgets,
            company_credit: Money::from_units(credit - credit_pending).unwrap_or(Money::ZERO),
        }))
    }

    /// The refusal every route gives a revoked or suspended profile (SPEC §5.2: reads too),
    /// or `None` when the profile is active.
    pub async fn inactive_refusal(&self, subject: &Subject, action: &str) -> Result<Option<Envelope>> {
        let p = self.profile(&subject.tenant, &subject.profile).await?;
        if p.status == SubjectStatus::Active {
            return Ok(None);
        }
        Ok(Some(Envelope::deny_with(
            action,
            policy::Layer::Subject,
            "agent_profile_revoked",
            if p.status == SubjectStatus::Suspended { "profile_suspended" } else { "profile_revoked" },
            format!("Agent profile is {}: every call is refused", p.status.as_str()),
            policy::RecoveryStep::ReinstateProfile {
                change: "An admin must reinstate this agent profile.".into(),
                human_action: "Tell the user this agent has been stopped by an admin, and stop.".into(),
            },
            1,
        )))
    }
}
