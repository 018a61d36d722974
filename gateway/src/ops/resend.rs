//! Resending lost calls: the sweeper's claim of the calls whose carrying instance died
//! ([`crate::domain::in_flight`] says how and what it guarantees), the resend on the tenant's
//! connector with the same action id, and the settle on the upstream's answer.

use chrono::Utc;
use serde_json::{Value, json};

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::delivery::connectors::{ConnectorKind, Done, Failure};
use crate::domain::calls::{Disposition, ReservedCall};
use crate::domain::in_flight::claim;
use crate::error::Result;
use crate::sql::Tx;

/// Whether a failure means no answer came back, so the upstream may or may not have acted.
fn unanswered(detail: &str) -> bool {
    matches!(detail, "connector_timeout" | "connector_unreachable")
}

impl Gateway {
    /// Claims the lost calls due for a resend and sends each again in a task of its own (so a
    /// slow upstream does not hold up the sweeper, which keeps renewing their leases).
    /// Returns how many it claimed.
    pub async fn recover_lost_calls(&self) -> Result<usize> {
        let (catalog, lease) = (self.catalog.clone(), self.leases.lease());
        let claimed = self.write(move |c| claim(c, &catalog, Utc::now(), &lease)).await?;
        let n = claimed.len();
        for carry in claimed {
            let gw = self.clone();
            tokio::spawn(async move {
                let hold = carry.hold.clone();
                if let Err(e) = gw.resend(carry).await {
                    tracing::warn!(hold = %hold, error = %e, "recovering a lost call failed; retrying later");
                }
            });
        }
        Ok(n)
    }

    /// Sends a lost call again on its tenant's connector and settles its hold on the answer.
    async fn resend(&self, carry: ReservedCall) -> Result<()> {
        let _carrying = self.leases.carry(&carry.hold);
        let connector = self.connector_for(&carry.subject.tenant, &carry.tool).await?;
        let outcome = connector.execute(&carry.call()).await;
        if let Err(f) = &outcome
            && unanswered(&f.detail)
        {
            tracing::warn!(hold = %carry.hold, code = %f.detail, "a lost call got no answer again; retrying later");
            return Ok(());
        }
        let (kind, tenant) = (connector.kind(), carry.subject.tenant.clone());
        self.write_for(&tenant, move |c| settle_recovered(c, &carry, outcome.clone(), kind)).await
    }
}

/// Settles a recovered call and records that it was recovered, in one job.
fn settle_recovered(
    c: &dyn Tx,
    carry: &ReservedCall,
    outcome: std::result::Result<Done, Failure>,
    kind: ConnectorKind,
) -> Result<()> {
    let (s, name) = (&carry.subject, &carry.tool.name);
    let (resp, _) = crate::domain::reserve::settle(c, &carry.settling(kind), outcome, carry.cost)?;
    let ran = resp.disposition == Disposition::Executed;
    let ended = if ran { "posted" } else { "voided" };
    finish_approval(c, &carry.hold, &resp.json(), ran)?;
    activity::append(
        c,
        NewEntry::new(&s.tenant, activity::SYSTEM_ACTOR, Kind::Hold)
            .profile(&s.profile)
            .action(name)
            .verdict(Verdict::Recovered)
            .amount(carry.cost)
            .detail(json!({
                "hold_id": carry.hold,
                "action_id": carry.action_id,
                "hold": ended,
                "connector": kind,
                "reason": "the instance carrying this call stopped before it settled; the call was sent again with its action id and the hold settled on the upstream's answer",
            })),
    )?;
    Ok(())
}

/// An approved call recovered: its approval gets the answer and a trail step, as if the
/// approver's request had lived to see it.
fn finish_approval(c: &dyn Tx, hold: &str, body: &Value, ran: bool) -> Result<()> {
    let Some(id) = crate::domain::approvals::awaiting_result(c, hold)? else { return Ok(()) };
    let step = if ran { "executed" } else { "failed" };
    let note = "recovered after the approving instance stopped";
    crate::domain::approvals::record_result(c, &id, body, activity::SYSTEM_ACTOR, step, Some(note))
}
