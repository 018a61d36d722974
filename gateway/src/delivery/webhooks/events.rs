//! Which activity entries are events, and queueing them for the endpoints that want them.

use serde_json::{Value, json};

use super::CHANNEL;
use crate::audit::activity::{Entry, Kind, Verdict};
use crate::delivery::outbox::{self, NewRow};
use crate::error::Result;
use crate::sql::Tx;
use crate::stored;

/// Every event an endpoint may subscribe to.
pub const EVENTS: [&str; 9] = [
    "approval.parked",
    "approval.decided",
    "approval.expired",
    "approval.escalated",
    "proposal.created",
    "budget.soft_cap_crossed",
    "budget.exhausted",
    "runtime.stopped",
    "profile.revoked",
];

/// The events an entry reports, each with its data.
fn events_of(e: &Entry) -> Vec<(&'static str, Value)> {
    let d = &e.detail;
    // Built only for an entry that is an event: most entries (every action) are not.
    let with = |extra: Value| {
        let mut v = json!({
            "tenant_id": e.tenant_id, "profile_id": e.profile_id, "action": e.action,
            "amount": e.amount, "actor": e.actor, "at": e.at, "activity_seq": e.seq,
        });
        if let (Some(o), Value::Object(x)) = (v.as_object_mut(), extra) {
            o.extend(x);
        }
        v
    };
    match (e.kind, e.verdict) {
        (Kind::Park, Some(Verdict::Park)) => {
            let data = with(
                json!({ "approval_id": d["approval_id"], "reason": d["reason"], "expires_at": d["expires_at"],
                    "needs": d["needs"], "justification": d["justification"] }),
            );
            let mut out = vec![("approval.parked", data.clone())];
            if d["reason"] == "soft_cap_crossed" || d["reason"] == "period_soft_cap_crossed" {
                out.push(("budget.soft_cap_crossed", data));
            }
            out
        }
        (Kind::Approval, Some(v)) => {
            approval_event(v, d).map(|(ev, data)| vec![(ev, with(data))]).unwrap_or_default()
        }
        (Kind::Writeback, Some(Verdict::Allow)) => vec![(
            "proposal.created",
            with(
                json!({ "writeback_id": d["writeback_id"], "run_id": d["run_id"], "proposals": d["proposals"] }),
            ),
        )],
        (Kind::Profile, Some(Verdict::RuntimeStopped)) => {
            let data = with(json!({ "reason": d["reason"] }));
            let mut out = vec![("runtime.stopped", data.clone())];
            if d["reason"] == "budget_exhausted" {
                out.insert(0, ("budget.exhausted", data));
            }
            out
        }
        (Kind::Revoke, Some(Verdict::Revoked)) => {
            vec![("profile.revoked", with(json!({ "cascade": d["cascade"] })))]
        }
        // Every kind is named, so a new kind must say whether it is an event.
        (
            Kind::Park
            | Kind::Approval
            | Kind::Writeback
            | Kind::Profile
            | Kind::Revoke
            | Kind::Settings
            | Kind::Shadow,
            _,
        ) => Vec::new(),
        (
            Kind::Action
            | Kind::Refusal
            | Kind::Hold
            | Kind::KitEdit
            | Kind::Key
            | Kind::Proposal
            | Kind::Console
            | Kind::Connector
            | Kind::Vault,
            _,
        ) => Vec::new(),
    }
}

/// The event an approval's entry with verdict `v` reports, if it is one, with its own data.
fn approval_event(v: Verdict, d: &Value) -> Option<(&'static str, Value)> {
    Some(match v {
        Verdict::Approved | Verdict::Denied | Verdict::Refused => (
            "approval.decided",
            json!({ "approval_id": d["approval_id"], "decision": v, "reason": d["reason"] }),
        ),
        Verdict::Escalated => (
            "approval.escalated",
            json!({ "approval_id": d["approval_id"], "expires_at": d["expires_at"], "progress": d["progress"],
                "fallback_role": d["fallback_role"], "fallback_group": d["fallback_group"], "justification": d["justification"] }),
        ),
        Verdict::Expired => {
            ("approval.expired", json!({ "approval_id": d["approval_id"], "on_expiry": "deny" }))
        }
        _ => return None,
    })
}

/// Queues the events `e` reports for every endpoint of its tenant that subscribes to them, in
/// the transaction that appends `e`; whether it queued any.
pub(crate) fn on_entry(c: &dyn Tx, e: &Entry) -> Result<bool> {
    let events = events_of(e);
    if events.is_empty() {
        return Ok(false);
    }
    let mut queued = false;
    let endpoints: Vec<(String, String)> = c
        .rows("SELECT id, events FROM webhook_endpoints WHERE tenant_id = ? ORDER BY id", &[&e.tenant_id])?
        .iter()
        .map(crate::sql::FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    for (endpoint, wanted) in endpoints {
        let wanted: Vec<String> = stored::decode("endpoint's events", &wanted)?;
        for (event, data) in events.iter().filter(|(ev, _)| wanted.iter().any(|w| w == ev)) {
            let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
            let payload = json!({ "type": event, "timestamp": e.at, "data": data }).to_string();
            let row = NewRow {
                id: &id,
                channel: CHANNEL,
                destination: &endpoint,
                key: &endpoint,
                kind: event,
                author: e.actor.as_str(),
                payload: &payload,
            };
            // A full endpoint never fails what the event reports: the message is kept as a
            // dead letter an admin can queue again.
            if outbox::insert(c, &e.tenant_id, &row, outbox::MAX_QUEUED)?.is_err() {
                outbox::insert_dead(c, &e.tenant_id, &row)?;
            } else {
                queued = true;
            }
        }
    }
    Ok(queued)
}
