//! The simulator: decides a sample action for a profile under a kit exactly as the gateway's
//! engine would ([`policy::evaluate`]), and builds the envelope the agent would receive, in
//! the browser with no round trip.

use policy::{
    ActionRequest, ApprovalHandle, BudgetView, Catalog, DecisionInput, EngineVerdict, Envelope, Kit, Money,
    PeriodView, RateView, SubjectStatus,
};
use serde::{Deserialize, Serialize};

/// A profile the simulator can act as: its spend so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimProfile {
    /// Its id; empty for "a new agent".
    pub id: String,
    pub name: String,
    pub posted: Money,
    pub pending: Money,
}

/// What the simulator shows for one action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimOutcome {
    /// `allow`, `park` or `deny`.
    pub verdict: String,
    pub reason: Option<String>,
    pub cost: Money,
    /// The envelope the agent would get (for `allow`, what executing reserves).
    pub envelope: String,
    /// For a park: who would have to approve it, and within what window.
    pub who: Option<String>,
}

/// A sample action for the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct SimAction {
    pub tool: String,
    pub amount: Money,
    pub merchant: Option<String>,
    pub recipient: Option<String>,
}

/// What the simulator shows for an allowed action: it executes at once, so there is no
/// envelope; this is what executing reserves.
#[derive(Serialize)]
struct AllowPreview<'a> {
    ok: bool,
    verdict: &'static str,
    action: &'a str,
    hold: Money,
    note: &'static str,
}

/// Whether deciding under `kit` takes facts only the server has: a period limit (the
/// tenant's calendar, the profile's spend per day) or a rate limit (its windows' counts).
pub fn needs_server(kit: &Kit) -> bool {
    !kit.limits.budget.periods.is_empty() || !kit.limits.rate.is_empty()
}

/// Decides `action` for `profile` under `kit`, exactly as the gateway's engine would, on the
/// period and rate views the server computed (none for a kit without such limits), and
/// builds the envelope the agent would receive.
pub fn simulate(
    kit: &Kit,
    profile: &SimProfile,
    credit: Money,
    action: &SimAction,
    (periods, rates): (&[PeriodView], &[RateView]),
) -> Result<SimOutcome, String> {
    let catalog = Catalog::builtin();
    let tool = catalog.get(&action.tool).ok_or_else(|| format!("unknown tool {}", action.tool))?;
    let request = ActionRequest {
        tool,
        amount: action.amount,
        recipient: action.recipient.as_deref(),
        merchant: action.merchant.as_deref(),
        toolkit: None,
    };
    let budgets = [BudgetView::from_kit(kit, profile.posted, profile.pending)];
    let decision = policy::evaluate(&DecisionInput {
        subject: SubjectStatus::Active,
        kit,
        action: request,
        budgets: &budgets,
        company_credit: credit,
        periods,
        rates,
    });
    let pretty = |e: &Envelope| serde_json::to_string_pretty(e).unwrap_or_default();
    Ok(match (decision.verdict, decision.refusal) {
        (EngineVerdict::Deny, Some(r)) => SimOutcome {
            verdict: "deny".into(),
            reason: Some(r.detail().to_string()),
            cost: decision.cost,
            envelope: pretty(&Envelope::deny(kit, &request, r, 1, Vec::new())),
            who: None,
        },
        (EngineVerdict::Freeze, Some(r)) => {
            let handle = ApprovalHandle {
                approval_id: "apr_… (issued when the agent calls)".into(),
                expires_at: "(when the approval window ends)".into(),
            };
            SimOutcome {
                verdict: "park".into(),
                reason: Some(r.detail().to_string()),
                cost: decision.cost,
                envelope: pretty(&Envelope::park(kit, &request, r, handle)),
                who: Some(approvers(kit, decision.rule)),
            }
        }
        _ => SimOutcome {
            verdict: "allow".into(),
            reason: None,
            cost: decision.cost,
            envelope: serde_json::to_string_pretty(&AllowPreview {
                ok: true,
                verdict: "allow",
                action: &action.tool,
                hold: decision.cost,
                note: "executes at once; the hold settles to what the call really cost",
            })
            .unwrap_or_default(),
            who: None,
        },
    })
}

/// Who must approve a parked call under `kit`'s rule `rule`, and within what window: "2
/// approvers, one of them with role finance, within 4h".
pub fn approvers(kit: &Kit, rule: Option<usize>) -> String {
    match rule.and_then(|i| kit.limits.approve.rules.get(i)) {
        Some(r) => {
            let window = r.window.map_or_else(|| "the default window".to_string(), |w| w.to_string());
            let escalate =
                r.escalate.as_ref().map(|e| format!("; escalates after {}", e.after)).unwrap_or_default();
            format!("{} within {window}{escalate} (rule {})", r.who(), rule.unwrap_or_default() + 1)
        }
        None => "1 approver within the default window (no approval rule matches)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::kit_editor::KitText;
    use crate::components::kit_editor::sample_kit as kit;
    use policy::KitDiff;

    #[test]
    fn lowering_the_hard_cap_changes_the_simulated_verdict() {
        let k = kit();
        let p = SimProfile {
            id: String::new(),
            name: "bot".into(),
            posted: Money::parse("460").unwrap(),
            pending: Money::ZERO,
        };
        let charge = SimAction {
            tool: "cards.charge".into(),
            amount: Money::parse("30").unwrap(),
            merchant: Some("globex-parts".into()),
            recipient: None,
        };
        let credit = Money::parse("1000").unwrap();
        // 460 + 30 crosses the soft cap of 400: it parks.
        assert_eq!(simulate(&k, &p, credit, &charge, (&[], &[])).unwrap().verdict, "park");
        let mut t = KitText::of(&k);
        t.hard_cap = "480".into();
        t.soft_cap = String::new();
        let lower = t.to_kit(&k.name, k.version).unwrap();
        let out = simulate(&lower, &p, credit, &charge, (&[], &[])).unwrap();
        assert_eq!((out.verdict.as_str(), out.reason.as_deref()), ("deny", Some("hard_cap_exceeded")));
        assert!(out.envelope.contains("\"reason\": \"budget_exceeded\""), "{}", out.envelope);
        assert!(KitDiff::between(&k, &lower).narrows().count() > 0);
    }
}
