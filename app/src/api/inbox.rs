//! Server functions behind the approval inbox: the parked actions with whether this user may
//! decide each, and the approve and deny form posts.
//!
//! Guarantees: a decision is an approver's or an admin's, never the agent owner's (the
//! gateway refuses it too, and the row says why before anyone tries); approving runs the
//! bound call once and settles its hold, denying voids it, and the page says which in words.

use leptos::prelude::*;
use policy::Money;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_view,
};

/// The most inbox items one page shows.
pub const INBOX_PAGE: usize = 100;

/// A parked action waiting in the inbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxRow {
    pub id: String,
    pub agent: String,
    /// The agent's profile id, shown on hover.
    pub agent_id: String,
    pub action: String,
    pub summary: String,
    pub amount: Money,
    pub kit: String,
    pub reason: String,
    pub requested_at: String,
    pub expires_at: String,
    pub seconds_left: i64,
    /// Whether the signed-in user may decide it, and if not, why (shown on the row).
    pub can_decide: bool,
    pub why_not: Option<String>,
    /// For a call that needs several people: "1 of 2, approved by carol".
    pub progress: Option<String>,
    /// Who may still decide it: "1 more approver, one of them with role finance".
    pub needs: Option<String>,
    /// The agent's own words on why it asks (plain text).
    pub justification: Option<String>,
}

/// The inbox's filters, as the URL carries them (each empty when not given).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InboxFilter {
    pub status: String,
    /// An agent's name.
    pub agent: String,
    /// An action or a pattern (`cards.*`).
    pub action: String,
    /// The least amount, in dollars.
    pub min: String,
    /// Only items waiting at least this many minutes.
    pub age: String,
    /// Words in the action, the justification, the decider or their reason.
    pub q: String,
}

impl InboxFilter {
    /// The query string for these filters, for links that keep them (the CSV export).
    pub fn query(&self) -> String {
        let pairs = [
            ("status", &self.status),
            ("agent", &self.agent),
            ("action", &self.action),
            ("min", &self.min),
            ("age", &self.age),
            ("q", &self.q),
        ];
        let enc = |v: &str| {
            v.bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-_.*".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect::<String>()
        };
        pairs
            .iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(k, v)| format!("{k}={}", enc(v.trim())))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The gateway's query for these filters, agents named among `profiles`.
    #[cfg(feature = "ssr")]
    pub fn to_query(
        &self,
        profiles: &[gateway::domain::profiles::Profile],
        limit: i64,
    ) -> Result<gateway::domain::approvals::ApprovalQuery, ServerFnError> {
        use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
        let bad = |m: &str| ServerFnError::new(format!("invalid_filter: {m}"));
        let given = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
        let status = match self.status.trim() {
            "" => ApprovalStatus::Pending,
            s => ApprovalStatus::parse(s)
                .ok_or_else(|| bad("status is pending, approved, denied or expired"))?,
        };
        let profile = match given(&self.agent) {
            None => None,
            Some(name) => Some(
                profiles
                    .iter()
                    .find(|p| p.name.eq_ignore_ascii_case(&name))
                    .ok_or_else(|| bad(&format!("no agent is named \"{name}\"")))?
                    .id
                    .clone(),
            ),
        };
        let min_amount = given(&self.min)
            .map(|m| {
                Money::parse(&m).map_err(|e| bad(&format!("the least amount \"{m}\" is not an amount: {e}")))
            })
            .transpose()?;
        let age = given(&self.age)
            .map(|a| a.parse::<u32>().map_err(|_| bad(&format!("age \"{a}\" is not a number of minutes"))))
            .transpose()?;
        Ok(ApprovalQuery {
            status: Some(status),
            profile,
            limit: Some(limit),
            action: given(&self.action),
            min_amount,
            requested_before: age.map(|m| chrono::Utc::now() - chrono::Duration::minutes(i64::from(m))),
            search: given(&self.q),
        })
    }
}

/// The arguments in one readable line: `merchant: acme · memo: cable ties`.
pub fn summarize_args(args: &serde_json::Value) -> String {
    const MAX_LEN: usize = 120;
    let mut parts = Vec::new();
    if let Some(obj) = args.as_object() {
        let mut fields: Vec<_> = obj.iter().collect();
        fields.sort_by_key(|(k, _)| k.as_str());
        for (k, v) in fields {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            parts.push(format!("{k}: {v}"));
        }
    }
    let mut line = parts.join(" · ");
    if line.chars().count() > MAX_LEN {
        line = line.chars().take(MAX_LEN - 1).collect::<String>() + "…";
    }
    line
}

#[server]
pub async fn inbox(filter: InboxFilter) -> Result<Vec<InboxRow>, ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::domain::approvals::ApprovalStatus;
    let (gw, tenant, user) = require_view("inbox").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let q = filter.to_query(&profiles, INBOX_PAGE as i64)?;
    let human = gateway::domain::principal::Human::in_console(&user);
    let now = chrono::Utc::now();
    let mut rows = Vec::new();
    for a in gw.approvals(&tenant.id, &q).await.map_err(to_fn_error)? {
        let profile = profiles.iter().find(|p| p.id == a.profile_id);
        // The page asks the gateway what deciding would answer, and says why before anyone tries.
        let why_not = if a.status != ApprovalStatus::Pending {
            Some(match (&a.decided_by, &a.decision_reason) {
                (Some(by), Some(why)) => format!("{} by {by}: {why}", a.status.as_str()),
                (Some(by), None) => format!("{} by {by}", a.status.as_str()),
                _ => a.status.as_str().to_string(),
            })
        } else {
            why_not(gw.may_decide(&a, &human).await, "approver")?
        };
        let several = a.quorum.required > 1;
        rows.push(InboxRow {
            can_decide: why_not.is_none(),
            why_not,
            progress: several.then(|| a.quorum.progress()),
            needs: (several && a.status == ApprovalStatus::Pending).then(|| a.quorum.still_needed()),
            justification: a.justification.clone(),
            agent: profile.map_or_else(|| a.profile_id.to_string(), |p| p.name.clone()),
            agent_id: a.profile_id.to_string(),
            summary: summarize_args(&a.args),
            seconds_left: a.seconds_left(now),
            id: a.id,
            action: a.action,
            amount: a.amount,
            kit: format!("{} v{}", a.kit_name, a.kit_version),
            reason: a.reason,
            requested_at: a.requested_at.to_rfc3339(),
            expires_at: a.expires_at.to_rfc3339(),
        });
    }
    Ok(rows)
}

/// What the page says for the gateway's answer to "may this human decide?": nothing when they
/// may, the reason in the console's words when the gateway would refuse, an error otherwise.
#[cfg(feature = "ssr")]
pub(crate) fn why_not(may: gateway::Result<()>, decider: &str) -> Result<Option<String>, ServerFnError> {
    match may {
        Ok(()) => Ok(None),
        Err(e) if e.code() == "role_required" => {
            Ok(Some(format!("Deciding needs the {decider} or admin role.")))
        }
        Err(e) if e.code() == "already_approved" => {
            Ok(Some("You have approved this; it waits for another approver.".to_string()))
        }
        Err(e) if e.code() == "requester_cannot_decide" => Ok(Some(
            "You own this agent's profile or one above it, so another person must decide.".to_string(),
        )),
        Err(e) => Err(crate::api::to_fn_error(e)),
    }
}

/// The signed-in human, for an approval decision; the gateway checks their roles.
#[cfg(feature = "ssr")]
async fn require_approver()
-> Result<(gateway::Gateway, gateway::Tenant, gateway::domain::principal::Human), ServerFnError> {
    let (gw, tenant, user) = require_view("inbox").await?;
    Ok((gw, tenant, gateway::domain::principal::Human::in_console(&user)))
}

/// Approves a parked action: the bound call runs once and its hold settles. Posted as a plain
/// form from the inbox (it works without JavaScript), so it is a POST, never a GET.
#[server(prefix = "/api", endpoint = "approve")]
pub async fn approve_action(id: String, note: Option<String>) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, human) = require_approver().await?;
        let note = note.filter(|n| !n.trim().is_empty());
        let decided = gw.approve(&tenant.id, &id, &human, note.as_deref()).await.map_err(to_fn_error)?;
        let resp = match decided {
            gateway::ops::approvals::Decided::Ran(resp) => resp,
            gateway::ops::approvals::Decided::Waiting(a) => {
                let what = decided_call(&gw, &tenant.id, &id).await?;
                let (got, left) = (a.quorum.progress(), a.quorum.still_needed());
                back_with_notice(&format!("Your approval of {what} is recorded ({got}); it needs {left}."))
                    .await;
                return Ok(());
            }
        };
        // Refused under the kit in force now, or the connector failed: say so on the page.
        if let Some(env) = resp.failure() {
            let (reason, message) = (&env.error.details.reason, &env.message);
            return Err(ServerFnError::new(format!("{reason}: not run — {message}; its hold was released")));
        }
        let what = decided_call(&gw, &tenant.id, &id).await?;
        back_with_notice(&format!("Approved {what}: {}.", what_ran(&resp))).await;
        Ok(())
    })
    .await
}

/// An approval's call in words: "cards.charge of $30.00 for procurement-bot".
#[cfg(feature = "ssr")]
async fn decided_call(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
    id: &str,
) -> Result<String, ServerFnError> {
    let a = gw.approval(tenant, id).await.map_err(crate::api::to_fn_error)?;
    let agent = gw.profile(tenant, &a.profile_id).await.map_or_else(|_| a.profile_id.to_string(), |p| p.name);
    let amount = if a.amount.is_zero() { String::new() } else { format!(" of {}", a.amount) };
    Ok(format!("{}{amount} for {agent}", a.action))
}

/// What an executed call produced, in words: the belief it became, or the id its provider
/// gave it (a charge, a message), and that its hold settled.
#[cfg(feature = "ssr")]
fn what_ran(resp: &gateway::domain::calls::ActionResponse) -> String {
    if let Some(belief) = resp.belief_id() {
        return format!("the claim is now belief {belief}");
    }
    let gateway::domain::calls::Answer::Executed(ran) = &resp.body else {
        return "it ran and its hold settled".into();
    };
    let id_in = |v: &serde_json::Value| {
        v.as_object()?.iter().find_map(|(k, v)| {
            (k.ends_with("_id") && !["activity_id", "approval_id", "hold_id"].contains(&k.as_str()))
                .then(|| v.as_str().map(|s| format!("{k} {s}")))
                .flatten()
        })
    };
    match id_in(&ran.result) {
        Some(id) => format!("it ran ({id}) and its hold settled"),
        None => "it ran and its hold settled".into(),
    }
}

/// Decides the ticked approvals with one note (required to deny), each on its own: the page
/// then says which went through and which did not, and why.
#[server(prefix = "/api", endpoint = "decide_many")]
pub async fn decide_many(
    ids: Option<Vec<String>>,
    decision: String,
    note: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::ops::approvals::BulkDecision;
    form(async {
        let (gw, tenant, human) = require_approver().await?;
        let ids = ids.unwrap_or_default();
        if ids.is_empty() {
            return Err(ServerFnError::new(
                "nothing_selected: tick the items to decide first (x on the selected row)",
            ));
        }
        let d = match decision.as_str() {
            "approve" => BulkDecision::Approve,
            "deny" => BulkDecision::Deny,
            _ => return Err(ServerFnError::new("invalid_decision: approve or deny")),
        };
        let note = note.filter(|n| !n.trim().is_empty());
        let items =
            gw.decide_many(&tenant.id, &ids, d, &human, note.as_deref()).await.map_err(to_fn_error)?;
        back_with_notice(&bulk_summary(d, &items)).await;
        Ok(())
    })
    .await
}

/// "Approved 3 of 5. Not decided: apr_… approval_expired (…); …": what a bulk decision did.
#[cfg(feature = "ssr")]
fn bulk_summary(
    d: gateway::ops::approvals::BulkDecision,
    items: &[gateway::ops::approvals::BulkOutcome],
) -> String {
    let verb = if d == gateway::ops::approvals::BulkDecision::Approve { "Approved" } else { "Denied" };
    let ok = items.iter().filter(|i| i.ok).count();
    let mut s = format!("{verb} {ok} of {}.", items.len());
    let waiting = items.iter().filter(|i| i.outcome == "waiting").count();
    if waiting > 0 {
        s.push_str(&format!(" {waiting} still need another approver."));
    }
    let refused: Vec<String> = items
        .iter()
        .filter(|i| !i.ok || i.outcome == "refused" || i.outcome == "failed")
        .map(|i| format!("{}: {} ({})", i.id, i.outcome, i.message.as_deref().unwrap_or("")))
        .collect();
    if !refused.is_empty() {
        s.push_str(&format!(" Not through: {}", refused.join("; ")));
    }
    s
}

/// Denies a parked action with a required reason; its hold is voided.
#[server(prefix = "/api", endpoint = "deny")]
pub async fn deny_action(id: String, reason: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, human) = require_approver().await?;
        let denied = gw.deny(&tenant.id, &id, &human, &reason).await.map_err(to_fn_error)?;
        let what = decided_call(&gw, &tenant.id, &id).await?;
        let hold = if denied.amount.is_zero() {
            String::new()
        } else {
            format!("; its {} hold was voided", denied.amount)
        };
        back_with_notice(&format!("Denied {what}{hold}. The agent is told: {}.", reason.trim())).await;
        Ok(())
    })
    .await
}
