//! The refusal envelope (docs/architecture.md#verdicts-and-the-refusal-envelope): one structured verdict
//! for every refused, parked or
//! unavailable call, on every transport.
//!
//! Guarantees: fields serialize in one fixed order
//! (docs/architecture.md#verdicts-and-the-refusal-envelope); `retryable` is true only for
//! `unavailable` and a `rate_limited` deny, which always carry a `retry_after` step; a park carries
//! `wait_for_approval` with `on_expiry: "deny"`; from the third identical refusal on, the
//! envelope carries exactly one `escalate_to_human` step and no alternatives. Recovery steps
//! name a tool or a human act, never a shell command.

use serde::{Deserialize, Serialize};

use crate::engine::{ActionRequest, Refusal, Step};
use crate::kit::Kit;
use crate::money::Money;
use crate::verdict::EnvelopeVerdict;

/// From this many identical refusals on, the agent is told to stop and ask a human.
pub const ESCALATE_AT_REPEAT: u32 = 3;

/// Which layer of governance answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The profile itself: revoked or suspended.
    Subject,
    /// The company's AccountKit.
    Company,
    /// Caps and credit.
    Budget,
    /// The connector behind the gateway.
    Connector,
}

/// The layer a refusal comes from, step by step.
pub const fn layer_of(step: Step) -> Layer {
    match step {
        Step::Revocation => Layer::Subject,
        Step::Rate | Step::Primitive | Step::Capability | Step::Effect | Step::Approval => Layer::Company,
        Step::Price | Step::Budget => Layer::Budget,
    }
}

/// The one thing that would change the outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecoveryStep {
    RequestCapability {
        change: String,
        human_action: String,
    },
    RequestToolkit {
        toolkit: String,
        change: String,
        human_action: String,
    },
    RaiseBudget {
        change: String,
        human_action: String,
    },
    ReinstateProfile {
        change: String,
        human_action: String,
    },
    WaitForApproval {
        approval_id: String,
        expires_at: String,
        on_expiry: OnExpiry,
    },
    /// A period's cap is spent: nothing changes before `resets_at` unless a human acts.
    WaitForReset {
        resets_at: String,
        human_action: String,
    },
    RetryAfter {
        seconds: u32,
    },
    WaitForDelivery {
        command_id: String,
        human_action: String,
    },
    EscalateToHuman {
        human_action: String,
    },
}

/// What happens when an approval window elapses: it becomes a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnExpiry {
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetails {
    pub reason: String,
    /// The JSON path of the limit that decided (`limits.budget.periods[0].hard_cap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// When that limit's period starts again from zero (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub code: String,
    pub hint: String,
    pub details: ErrorDetails,
}

/// The verdict envelope, field for field in the documented order
/// (docs/architecture.md#verdicts-and-the-refusal-envelope).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Envelope {
    pub ok: bool,
    pub verdict: EnvelopeVerdict,
    pub reason: String,
    pub action: String,
    pub layer: Layer,
    pub retryable: bool,
    pub repeat: u32,
    pub message: String,
    pub error: ErrorBody,
    pub recovery: Vec<RecoveryStep>,
    pub alternatives: Vec<String>,
}

/// A parked call's approval handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalHandle {
    pub approval_id: String,
    /// RFC 3339.
    pub expires_at: String,
}

impl ApprovalHandle {
    /// The recovery step of a parked call: wait for this approval, a refusal if it lapses.
    fn wait(self) -> RecoveryStep {
        RecoveryStep::WaitForApproval {
            approval_id: self.approval_id,
            expires_at: self.expires_at,
            on_expiry: OnExpiry::Deny,
        }
    }
}

impl Envelope {
    /// `isError` for MCP results.
    pub fn is_error(&self) -> bool {
        self.verdict.is_error()
    }

    /// The envelope for a `deny`: `repeat` counts identical refusals including this one.
    pub fn deny(
        kit: &Kit,
        action: &ActionRequest<'_>,
        refusal: Refusal,
        repeat: u32,
        alternatives: Vec<String>,
    ) -> Envelope {
        let recovery = vec![recovery_for(kit, action, refusal)];
        Envelope::build(Draft {
            recovery,
            alternatives,
            repeat,
            ..Draft::engine(EnvelopeVerdict::Deny, kit, action, refusal)
        })
    }

    /// The envelope for a `park`: a successful deferral with the approval to poll.
    pub fn park(
        kit: &Kit,
        action: &ActionRequest<'_>,
        refusal: Refusal,
        approval: ApprovalHandle,
    ) -> Envelope {
        let recovery = vec![approval.wait()];
        Envelope::build(Draft { recovery, ..Draft::engine(EnvelopeVerdict::Park, kit, action, refusal) })
    }

    /// A park that a gateway rule, not the kit, asked for (an agent accepting a brain
    /// proposal): `detail` is a stable code and `message` says why a human must decide.
    pub fn park_for(action: &str, detail: &str, message: String, approval: ApprovalHandle) -> Envelope {
        let step = approval.wait();
        Envelope::build(Draft {
            verdict: EnvelopeVerdict::Park,
            reason: "approval_required",
            detail,
            layer: Layer::Company,
            action: action.to_string(),
            message,
            hint: hint_text("approval_required").to_string(),
            recovery: vec![step],
            alternatives: Vec::new(),
            repeat: 1,

            limit: None,
            resets_at: None,
        })
    }

    /// The envelope for an outage: the only retryable verdict.
    pub fn unavailable(action: &str, detail: &str, retry_after_seconds: u32, repeat: u32) -> Envelope {
        Envelope::build(Draft {
            verdict: EnvelopeVerdict::Unavailable,
            reason: "unavailable",
            detail,
            layer: Layer::Connector,
            action: action.to_string(),
            message: format!("`{action}` could not be carried out just now ({detail}); nothing was charged"),
            hint: "The service behind the gateway is unreachable. Wait for the retry_after step, then call again with the same Idempotency-Key.".to_string(),
            recovery: vec![RecoveryStep::RetryAfter { seconds: retry_after_seconds }],
            alternatives: Vec::new(),
            repeat,

            limit: None,
            resets_at: None,
        })
    }

    /// A refusal that does not come from the engine, for example an agent trying to decide
    /// an approval: `reason` and `detail` are stable codes.
    pub fn deny_with(
        action: &str,
        layer: Layer,
        reason: &str,
        detail: &str,
        message: String,
        recovery: RecoveryStep,
        repeat: u32,
    ) -> Envelope {
        Envelope::build(Draft {
            verdict: EnvelopeVerdict::Deny,
            reason,
            detail,
            layer,
            action: action.to_string(),
            message,
            hint: hint_text(reason).to_string(),
            recovery: vec![recovery],
            alternatives: Vec::new(),
            repeat,

            limit: None,
            resets_at: None,
        })
    }

    /// The envelope for `d`; an identical refusal repeated [`ESCALATE_AT_REPEAT`] times
    /// escalates to a human instead of offering the same recovery again.
    fn build(d: Draft<'_>) -> Envelope {
        let Draft {
            verdict,
            reason,
            detail,
            layer,
            action,
            message,
            hint,
            mut recovery,
            mut alternatives,
            repeat,
            limit,
            resets_at,
        } = d;
        let repeat = repeat.max(1);
        if verdict != EnvelopeVerdict::Park
            && verdict != EnvelopeVerdict::Unavailable
            && repeat >= ESCALATE_AT_REPEAT
        {
            recovery = vec![RecoveryStep::EscalateToHuman {
                human_action: format!(
                    "This exact call to `{action}` was refused {repeat} times. Tell the user what you were trying to do and why it was refused, then stop."
                ),
            }];
            alternatives.clear();
        }
        Envelope {
            ok: false,
            verdict,
            reason: reason.to_string(),
            action,
            layer,
            // A full rate window is the one retryable deny: the same call succeeds once the
            // window has passed (docs/architecture.md#verdicts-and-the-refusal-envelope).
            retryable: verdict.retryable() || reason == "rate_limited",
            repeat,
            message,
            error: ErrorBody {
                code: error_code(verdict).to_string(),
                hint,
                details: ErrorDetails { reason: detail.to_string(), limit, resets_at },
            },
            recovery,
            alternatives,
        }
    }
}

/// What an envelope says before [`Envelope::build`] applies the repeat rule and the error body.
struct Draft<'a> {
    verdict: EnvelopeVerdict,
    reason: &'a str,
    detail: &'a str,
    layer: Layer,
    action: String,
    message: String,
    hint: String,
    recovery: Vec<RecoveryStep>,
    alternatives: Vec<String>,
    repeat: u32,
    /// The limit that decided and when its period resets, for `error.details`.
    limit: Option<String>,
    resets_at: Option<String>,
}

impl Draft<'_> {
    /// What the engine's `refusal` of `action` under `kit` says, with no recovery or
    /// alternatives yet and a first refusal's repeat.
    fn engine<'r>(
        verdict: EnvelopeVerdict,
        kit: &Kit,
        action: &ActionRequest<'_>,
        refusal: Refusal,
    ) -> Draft<'r> {
        Draft {
            verdict,
            reason: refusal.reason(),
            detail: refusal.detail(),
            layer: layer_of(refusal.step()),
            action: action.tool.name.clone(),
            message: message_for(kit, action, refusal),
            hint: hint_for(refusal),
            recovery: Vec::new(),
            alternatives: Vec::new(),
            repeat: 1,
            limit: refusal.limit_path(),
            resets_at: refusal.resets_at().map(rfc3339),
        }
    }
}

/// Seconds since 1970 as RFC 3339 in UTC (`2027-01-01T05:00:00Z`), without a date library:
/// the days-to-civil conversion of H. Hinnant's `chrono`-compatible algorithms.
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, sec) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{sec:02}Z")
}

/// `error.code`, per verdict.
const fn error_code(v: EnvelopeVerdict) -> &'static str {
    match v {
        EnvelopeVerdict::Deny => "forbidden",
        EnvelopeVerdict::Park => "approval_required",
        EnvelopeVerdict::Unavailable => "unavailable",
        EnvelopeVerdict::Attest => "attestation_required",
    }
}

fn hint_for(r: Refusal) -> String {
    hint_text(r.reason()).to_string()
}

fn hint_text(reason: &str) -> &'static str {
    match reason {
        "agent_profile_revoked" => {
            "This agent profile is not active. Only an admin can reinstate it; calling again cannot help."
        }
        "capability_denied" => {
            "The company's AccountKit does not allow this call. Calling again cannot help; a human must change the kit."
        }
        "rate_limited" => {
            "Too many calls in this window. Wait for the retry_after step, then call again; calling sooner is refused again."
        }
        "budget_exceeded" => {
            "This call would exceed a hard cap or the company's credit. Calling again cannot help until a human raises the cap or adds credit."
        }
        "approval_required" => {
            "A human must approve this exact call. Poll the approval; do not send the call again."
        }
        _ => "A human must act before this call can succeed.",
    }
}

fn message_for(kit: &Kit, action: &ActionRequest<'_>, r: Refusal) -> String {
    let name = &action.tool.name;
    match r {
        Refusal::ProfileInactive { status } => {
            format!("Agent profile is {}: every call is refused", status.as_str())
        }
        Refusal::RateLimited { limit, calls, retry_after } => {
            let whose = if limit.is_some() { "this agent's" } else { "the company's" };
            format!(
                "Rate limited: `{name}` would pass {whose} limit of {calls} calls in this window; it ends in {retry_after} s. Nothing was charged"
            )
        }
        Refusal::PeriodCapExceeded { every, cap, resets_at, .. } => {
            format!(
                "Over budget: `{name}` would take this {}'s spend past its hard cap of {cap}; the {} starts again from zero at {}",
                every.as_str(),
                every.as_str(),
                rfc3339(resets_at)
            )
        }
        Refusal::PeriodSoftCapCrossed { every, cap, .. } => {
            format!(
                "`{name}` would cross this {}'s soft cap of {cap} and waits for a human's approval",
                every.as_str()
            )
        }
        Refusal::PrimitiveDisabled { .. }
        | Refusal::ToolkitNotPermitted
        | Refusal::ToolDisabledByKit
        | Refusal::DeniedByRule { .. }
        | Refusal::AboveRuleMax { .. }
        | Refusal::RecipientNotAllowed { .. }
        | Refusal::MerchantNotAllowed { .. } => {
            format!("Not allowed by AccountKit \"{}\": {}", kit.name, r.detail())
        }
        Refusal::DestructiveNeedsApproval => {
            format!("`{name}` is destructive and waits for a human's approval")
        }
        Refusal::PriceOverflow => format!("The cost of `{name}` is too large to reserve"),
        Refusal::BalanceLimit { .. } => {
            format!("`{name}` would take this account past {}, the most any account holds", Money::MAX)
        }
        Refusal::HardCapExceeded { cap, .. } => {
            format!("Over budget: `{name}` would take spend past the hard cap of {cap}")
        }
        Refusal::CompanyCreditExhausted { available } => {
            format!(
                "Over budget: the company has {available} of platform credit left, less than `{name}` costs"
            )
        }
        Refusal::SoftCapCrossed { cap, .. } => {
            format!("`{name}` would cross the soft cap of {cap} and waits for a human's approval")
        }
        Refusal::AboveApprovalThreshold { threshold } => {
            format!(
                "`{name}` costs at least the approval threshold of {threshold} and waits for a human's approval"
            )
        }
        Refusal::AlwaysApprove { .. } => {
            format!("AccountKit \"{}\" sends every `{name}` to a human for approval", kit.name)
        }
        Refusal::ApprovalRule { rule } => {
            let who = kit.limits.approve.rules.get(rule).map_or_else(|| "a human".to_string(), |r| r.who());
            format!("AccountKit \"{}\" sends this `{name}` to {who} for approval", kit.name)
        }
    }
}

fn recovery_for(kit: &Kit, action: &ActionRequest<'_>, r: Refusal) -> RecoveryStep {
    let name = &action.tool.name;
    let stop = "Tell the user this capability is switched off for their account and stop.".to_string();
    match r {
        Refusal::ProfileInactive { .. } => RecoveryStep::ReinstateProfile {
            change: "An admin must reinstate this agent profile.".into(),
            human_action: "Tell the user this agent has been stopped by an admin, and stop.".into(),
        },
        Refusal::PrimitiveDisabled { primitive } => RecoveryStep::RequestCapability {
            change: format!("Enable the '{primitive}' primitive for this tenant."),
            human_action: stop,
        },
        Refusal::ToolkitNotPermitted | Refusal::ToolDisabledByKit => {
            let toolkit = action.toolkit.map(|(t, _)| t.to_string()).unwrap_or_default();
            RecoveryStep::RequestToolkit {
                change: format!("Permit the '{toolkit}' toolkit in AccountKit \"{}\".", kit.name),
                toolkit,
                human_action: stop,
            }
        }
        Refusal::DeniedByRule { .. }
        | Refusal::AboveRuleMax { .. }
        | Refusal::RecipientNotAllowed { .. }
        | Refusal::MerchantNotAllowed { .. } => RecoveryStep::RequestCapability {
            change: format!("Change the can rule for '{name}' in AccountKit \"{}\".", kit.name),
            human_action: "Tell the user this call is outside what their AccountKit allows, and stop.".into(),
        },
        Refusal::BalanceLimit { .. } => RecoveryStep::EscalateToHuman {
            human_action: "Tell the user this account has reached the gateway's largest balance, and stop."
                .into(),
        },
        Refusal::PriceOverflow | Refusal::HardCapExceeded { .. } => RecoveryStep::RaiseBudget {
            change: "Raise the hard cap for this agent profile.".into(),
            human_action: "Tell the user the budget is spent, and stop.".into(),
        },
        Refusal::RateLimited { retry_after, .. } => RecoveryStep::RetryAfter { seconds: retry_after.max(1) },
        Refusal::PeriodCapExceeded { every, resets_at, .. } => RecoveryStep::WaitForReset {
            resets_at: rfc3339(resets_at),
            human_action: format!(
                "Tell the user this {}'s budget is spent: calls that cost money are refused until {} unless a human raises the cap. Do not retry before then.",
                every.as_str(),
                rfc3339(resets_at)
            ),
        },
        Refusal::CompanyCreditExhausted { .. } => RecoveryStep::RaiseBudget {
            change: "Add platform credit to the company account.".into(),
            human_action: "Tell the user the company is out of platform credit, and stop.".into(),
        },
        Refusal::DestructiveNeedsApproval
        | Refusal::SoftCapCrossed { .. }
        | Refusal::PeriodSoftCapCrossed { .. }
        | Refusal::AboveApprovalThreshold { .. }
        | Refusal::AlwaysApprove { .. }
        | Refusal::ApprovalRule { .. } => {
            RecoveryStep::EscalateToHuman { human_action: "Ask a human approver to review this call.".into() }
        }
    }
}
