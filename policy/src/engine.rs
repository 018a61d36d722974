//! The decision engine: steps 2–8 of the decision pipeline (docs/architecture.md#the-decision-pipeline) as
//! pure functions.
//!
//! The gateway supplies every fact (subject status, kit, action, budget views, company
//! credit); the engine does no IO and allocates nothing in [`evaluate`]. Checks run in the
//! the pipeline's order: revocation, primitive, capability, effect, price, budget (hard cap, company
//! credit, soft cap), approval thresholds. The first `deny` decides. A `freeze` never hides a
//! later `deny`: approval can release a freeze but never a deny, so an action that would
//! exceed a hard cap is refused outright even when it would also need approval. [`explain`]
//! runs the same checks and lists every reason that applied.
//!
//! Invariant (checked by property tests): `allow` or `freeze` implies
//! `posted + pending + cost <= hard_cap` for every budget view and every period view.
//!
//! Periods and rates: the engine knows no clock and no time zone. The gateway finds the
//! period each limit's call falls in and passes its totals and end ([`PeriodView`]), and the
//! count of each matching rate window ([`RateView`]); the kit editor's simulator asks the
//! server for the same views, so the browser's wasm carries no time-zone database.

use serde::{Deserialize, Serialize};

use crate::catalog::{Effect, ToolSpec};
use crate::kit::{Kit, Period, RuleEffect, action_pattern_matches};
use crate::money::Money;
use crate::primitive::Primitive;
use crate::verdict::{EngineVerdict, ExplainVerdict, explain_verdict};

/// The acting profile's standing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SubjectStatus {
    Active,
    Suspended,
    Revoked,
}

impl SubjectStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            SubjectStatus::Active => "active",
            SubjectStatus::Suspended => "suspended",
            SubjectStatus::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Option<SubjectStatus> {
        [SubjectStatus::Active, SubjectStatus::Suspended, SubjectStatus::Revoked]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// One action to decide, as the gateway parsed it.
#[derive(Clone, Copy, Debug)]
pub struct ActionRequest<'a> {
    pub tool: &'a ToolSpec,
    /// The real-world amount (a card charge); zero for actions with platform price only.
    pub amount: Money,
    pub recipient: Option<&'a str>,
    pub merchant: Option<&'a str>,
    /// For connected apps: the toolkit and the tool within it.
    pub toolkit: Option<(&'a str, &'a str)>,
}

/// One budget the action spends against: the profile's own, or a shared pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetView {
    pub posted: Money,
    pub pending: Money,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
}

impl BudgetView {
    /// A view whose caps come from `kit`.
    pub fn from_kit(kit: &Kit, posted: Money, pending: Money) -> BudgetView {
        BudgetView {
            posted,
            pending,
            hard_cap: kit.limits.budget.hard_cap,
            soft_cap: kit.limits.budget.soft_cap,
        }
    }

    /// posted + pending + cost, or `None` if that passes [`Money::MAX`] (which exceeds any cap).
    pub fn would_be(&self, cost: Money) -> Option<Money> {
        self.posted.checked_add(self.pending)?.checked_add(cost)
    }
}

/// One period limit as it stands for the call being decided: the gateway found the period
/// the call falls in (in the tenant's time zone) and summed what that period holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodView {
    /// The budget of [`DecisionInput::budgets`] (the level of the chain) it limits.
    pub budget: usize,
    /// Its index in that level's kit, `limits.budget.periods[limit]`.
    pub limit: usize,
    pub every: Period,
    /// Posted and pending within the period.
    pub posted: Money,
    pub pending: Money,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    /// When the period ends and its totals start from zero, in seconds since 1970 (UTC).
    pub resets_at: i64,
}

impl PeriodView {
    fn would_be(&self, cost: Money) -> Option<Money> {
        self.posted.checked_add(self.pending)?.checked_add(cost)
    }
}

/// One call-rate limit as it stands: how many calls its current window has counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateView {
    /// The acting kit's `limits.rate[i]`, or `None` for the tenant's own limit.
    pub limit: Option<u32>,
    /// The calls the window allows, and those it has counted.
    pub calls: u32,
    pub used: u32,
    /// Seconds until the window ends.
    pub retry_after: u32,
}

/// Everything the engine needs to decide one action.
#[derive(Clone, Copy, Debug)]
pub struct DecisionInput<'a> {
    pub subject: SubjectStatus,
    pub kit: &'a Kit,
    pub action: ActionRequest<'a>,
    /// Every budget the action counts against (own first, then shared pools).
    pub budgets: &'a [BudgetView],
    /// Platform credits the company has left (balance minus pending holds).
    pub company_credit: Money,
    /// Every period limit of every level, in the period the call falls in.
    pub periods: &'a [PeriodView],
    /// Every rate limit that matches the action, with its current window's count.
    pub rates: &'a [RateView],
}

/// The decision pipeline's step that produced a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Revocation,
    Rate,
    Primitive,
    Capability,
    Effect,
    Price,
    Budget,
    Approval,
}

/// Why an action was refused or frozen. Cheap to copy; the envelope turns it into words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    ProfileInactive {
        status: SubjectStatus,
    },
    /// A rate limit's window is full: the one retryable deny.
    RateLimited {
        limit: Option<u32>,
        calls: u32,
        retry_after: u32,
    },
    PrimitiveDisabled {
        primitive: Primitive,
    },
    ToolkitNotPermitted,
    ToolDisabledByKit,
    DeniedByRule {
        rule: usize,
    },
    AboveRuleMax {
        rule: usize,
        max: Money,
    },
    RecipientNotAllowed {
        rule: usize,
    },
    MerchantNotAllowed {
        rule: usize,
    },
    DestructiveNeedsApproval,
    PriceOverflow,
    /// The balance would pass [`Money::MAX`], the most any account holds, cap or no cap.
    BalanceLimit {
        budget: usize,
    },
    HardCapExceeded {
        budget: usize,
        cap: Money,
    },
    CompanyCreditExhausted {
        available: Money,
    },
    /// A period's hard cap: refused until the period resets or a human raises the cap.
    PeriodCapExceeded {
        budget: usize,
        limit: usize,
        every: Period,
        cap: Money,
        resets_at: i64,
    },
    SoftCapCrossed {
        budget: usize,
        cap: Money,
    },
    PeriodSoftCapCrossed {
        budget: usize,
        limit: usize,
        every: Period,
        cap: Money,
        resets_at: i64,
    },
    AboveApprovalThreshold {
        threshold: Money,
    },
    AlwaysApprove {
        index: usize,
    },
    /// `limits.approve.rules[rule]` names an amount or action this call matches.
    ApprovalRule {
        rule: usize,
    },
}

impl Refusal {
    /// Deny or freeze, as docs/architecture.md#verdicts-and-the-refusal-envelope says: only what a human
    /// can release for this exact call freezes.
    pub const fn verdict(self) -> EngineVerdict {
        match self {
            Refusal::DestructiveNeedsApproval
            | Refusal::SoftCapCrossed { .. }
            | Refusal::PeriodSoftCapCrossed { .. }
            | Refusal::AboveApprovalThreshold { .. }
            | Refusal::AlwaysApprove { .. }
            | Refusal::ApprovalRule { .. } => EngineVerdict::Freeze,
            Refusal::ProfileInactive { .. }
            | Refusal::RateLimited { .. }
            | Refusal::PeriodCapExceeded { .. }
            | Refusal::PrimitiveDisabled { .. }
            | Refusal::ToolkitNotPermitted
            | Refusal::ToolDisabledByKit
            | Refusal::DeniedByRule { .. }
            | Refusal::AboveRuleMax { .. }
            | Refusal::RecipientNotAllowed { .. }
            | Refusal::MerchantNotAllowed { .. }
            | Refusal::PriceOverflow
            | Refusal::BalanceLimit { .. }
            | Refusal::HardCapExceeded { .. }
            | Refusal::CompanyCreditExhausted { .. } => EngineVerdict::Deny,
        }
    }

    pub const fn step(self) -> Step {
        match self {
            Refusal::ProfileInactive { .. } => Step::Revocation,
            Refusal::RateLimited { .. } => Step::Rate,
            Refusal::PrimitiveDisabled { .. } => Step::Primitive,
            Refusal::ToolkitNotPermitted
            | Refusal::ToolDisabledByKit
            | Refusal::DeniedByRule { .. }
            | Refusal::AboveRuleMax { .. }
            | Refusal::RecipientNotAllowed { .. }
            | Refusal::MerchantNotAllowed { .. } => Step::Capability,
            Refusal::DestructiveNeedsApproval => Step::Effect,
            Refusal::PriceOverflow => Step::Price,
            Refusal::BalanceLimit { .. }
            | Refusal::HardCapExceeded { .. }
            | Refusal::CompanyCreditExhausted { .. }
            | Refusal::PeriodCapExceeded { .. }
            | Refusal::SoftCapCrossed { .. }
            | Refusal::PeriodSoftCapCrossed { .. } => Step::Budget,
            Refusal::AboveApprovalThreshold { .. }
            | Refusal::AlwaysApprove { .. }
            | Refusal::ApprovalRule { .. } => Step::Approval,
        }
    }

    /// The envelope's top-level `reason`.
    pub const fn reason(self) -> &'static str {
        match self {
            Refusal::ProfileInactive { .. } => "agent_profile_revoked",
            Refusal::RateLimited { .. } => "rate_limited",
            Refusal::PrimitiveDisabled { .. }
            | Refusal::ToolkitNotPermitted
            | Refusal::ToolDisabledByKit
            | Refusal::DeniedByRule { .. }
            | Refusal::AboveRuleMax { .. }
            | Refusal::RecipientNotAllowed { .. }
            | Refusal::MerchantNotAllowed { .. } => "capability_denied",
            Refusal::PriceOverflow
            | Refusal::BalanceLimit { .. }
            | Refusal::HardCapExceeded { .. }
            | Refusal::PeriodCapExceeded { .. }
            | Refusal::CompanyCreditExhausted { .. } => "budget_exceeded",
            Refusal::DestructiveNeedsApproval
            | Refusal::SoftCapCrossed { .. }
            | Refusal::PeriodSoftCapCrossed { .. }
            | Refusal::AboveApprovalThreshold { .. }
            | Refusal::AlwaysApprove { .. }
            | Refusal::ApprovalRule { .. } => "approval_required",
        }
    }

    /// The JSON path of the limit that decided, when a limit did: `limits.rate[0]`,
    /// `limits.budget.periods[1]`, `tenant.rate_limit`. For a limit of an ancestor's kit the
    /// path is in that kit.
    pub fn limit_path(self) -> Option<String> {
        match self {
            Refusal::RateLimited { limit: Some(i), .. } => Some(format!("limits.rate[{i}]")),
            Refusal::RateLimited { limit: None, .. } => Some("tenant.rate_limit".to_string()),
            Refusal::PeriodCapExceeded { limit, .. } => {
                Some(format!("limits.budget.periods[{limit}].hard_cap"))
            }
            Refusal::PeriodSoftCapCrossed { limit, .. } => {
                Some(format!("limits.budget.periods[{limit}].soft_cap"))
            }
            Refusal::HardCapExceeded { .. } => Some("limits.budget.hard_cap".to_string()),
            Refusal::SoftCapCrossed { .. } => Some("limits.budget.soft_cap".to_string()),
            Refusal::ApprovalRule { rule } => Some(format!("limits.approve.rules[{rule}]")),
            _ => None,
        }
    }

    /// When the period of the limit that decided starts again from zero (seconds since 1970).
    pub const fn resets_at(self) -> Option<i64> {
        match self {
            Refusal::PeriodCapExceeded { resets_at, .. }
            | Refusal::PeriodSoftCapCrossed { resets_at, .. } => Some(resets_at),
            _ => None,
        }
    }

    /// The envelope's `error.details.reason`: the precise rule.
    pub const fn detail(self) -> &'static str {
        match self {
            Refusal::ProfileInactive { status: SubjectStatus::Suspended } => "profile_suspended",
            Refusal::ProfileInactive { .. } => "profile_revoked",
            Refusal::RateLimited { limit: Some(_), .. } => "kit_rate_limit",
            Refusal::RateLimited { limit: None, .. } => "tenant_rate_limit",
            Refusal::PrimitiveDisabled { .. } => "primitive_disabled_by_kit",
            Refusal::ToolkitNotPermitted => "toolkit_not_permitted",
            Refusal::ToolDisabledByKit => "tool_disabled_by_kit",
            Refusal::DeniedByRule { .. } => "denied_by_rule",
            Refusal::AboveRuleMax { .. } => "amount_above_rule_max",
            Refusal::RecipientNotAllowed { .. } => "recipient_not_allowed",
            Refusal::MerchantNotAllowed { .. } => "merchant_not_allowed",
            Refusal::DestructiveNeedsApproval => "destructive_effect",
            Refusal::PriceOverflow => "price_overflow",
            Refusal::BalanceLimit { .. } => "balance_limit_reached",
            Refusal::HardCapExceeded { .. } => "hard_cap_exceeded",
            Refusal::CompanyCreditExhausted { .. } => "company_credit_exhausted",
            Refusal::SoftCapCrossed { .. } => "soft_cap_crossed",
            Refusal::PeriodCapExceeded { .. } => "period_hard_cap_exceeded",
            Refusal::PeriodSoftCapCrossed { .. } => "period_soft_cap_crossed",
            Refusal::AboveApprovalThreshold { .. } => "above_approval_threshold",
            Refusal::AlwaysApprove { .. } => "always_requires_approval",
            Refusal::ApprovalRule { .. } => "approval_rule",
        }
    }

    /// Whether this is a soft cap crossed, lifetime or period (what an approval rule's
    /// `soft_cap` condition asks).
    pub const fn is_soft_cap(self) -> bool {
        matches!(self, Refusal::SoftCapCrossed { .. } | Refusal::PeriodSoftCapCrossed { .. })
    }
}

/// The engine's answer for one action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: EngineVerdict,
    /// The refusal that decided: the first deny, else the first freeze.
    pub refusal: Option<Refusal>,
    /// Real amount plus platform price; what a hold reserves.
    pub cost: Money,
    pub effect: Effect,
    /// For a freeze: the `limits.approve.rules` entry that says who must approve, if one
    /// matches ([`crate::approval::governing_rule`]).
    pub rule: Option<usize>,
}

/// Explain's answer: the verdict and every reason that applied, in check order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    pub verdict: ExplainVerdict,
    pub reasons: Vec<Refusal>,
    pub cost: Money,
    pub effect: Effect,
    /// For a park: the approval rule that says who must approve, if one matches.
    pub rule: Option<usize>,
}

/// Decides one action. Allocation-free; the hot path of every governed call.
pub fn evaluate(input: &DecisionInput<'_>) -> Decision {
    let mut first_freeze = None;
    let mut first_deny = None;
    let mut soft = false;
    let cost = run_checks(input, &mut |r| match r.verdict() {
        EngineVerdict::Deny => {
            first_deny = Some(r);
            false
        }
        _ => {
            soft |= r.is_soft_cap();
            first_freeze.get_or_insert(r);
            true
        }
    });
    let refusal = first_deny.or(first_freeze);
    let verdict = refusal.map_or(EngineVerdict::Allow, Refusal::verdict);
    let rule = (verdict == EngineVerdict::Freeze).then(|| rule_for(input, cost, soft)).flatten();
    Decision { verdict, refusal, cost, effect: input.action.tool.effect, rule }
}

/// The approval rule governing a frozen call of `input` costing `cost`.
fn rule_for(input: &DecisionInput<'_>, cost: Money, soft_cap_crossed: bool) -> Option<usize> {
    let tool = input.action.tool;
    let destructive = tool.effect == Effect::Destructive;
    crate::approval::governing_rule(
        &input.kit.limits.approve.rules,
        &tool.name,
        cost,
        destructive,
        soft_cap_crossed,
    )
}

/// Runs every check and reports every reason; reserves nothing.
pub fn explain(input: &DecisionInput<'_>) -> Explanation {
    let mut reasons = Vec::new();
    let cost = run_checks(input, &mut |r| {
        reasons.push(r);
        true
    });
    let engine = if reasons.iter().any(|r| r.verdict() == EngineVerdict::Deny) {
        EngineVerdict::Deny
    } else if reasons.is_empty() {
        EngineVerdict::Allow
    } else {
        EngineVerdict::Freeze
    };
    let soft = reasons.iter().any(|r| r.is_soft_cap());
    let rule = (engine == EngineVerdict::Freeze).then(|| rule_for(input, cost, soft)).flatten();
    Explanation { verdict: explain_verdict(engine), reasons, cost, effect: input.action.tool.effect, rule }
}

/// The checks in the pipeline's order. `emit` returns whether to go on; returns the cost.
fn run_checks(input: &DecisionInput<'_>, emit: &mut dyn FnMut(Refusal) -> bool) -> Money {
    let kit = input.kit;
    let action = &input.action;
    let tool = action.tool;
    let cost = action.amount.checked_add(tool.price);
    let cost_or_max = cost.unwrap_or(Money::MAX);
    let mut soft = false;

    macro_rules! refuse {
        ($r:expr) => {
            if !emit($r) {
                return cost_or_max;
            }
        };
    }

    // Step 2: revocation binds on every call, reads included.
    if input.subject != SubjectStatus::Active {
        refuse!(Refusal::ProfileInactive { status: input.subject });
    }
    // Step 2b: call rates. The gateway passes only the limits that match the action.
    for r in input.rates {
        if r.used >= r.calls {
            refuse!(Refusal::RateLimited { limit: r.limit, calls: r.calls, retry_after: r.retry_after });
        }
    }
    // Step 3: the primitive gate.
    if !kit.primitives.contains(tool.primitive) {
        refuse!(Refusal::PrimitiveDisabled { primitive: tool.primitive });
    }
    // Step 4: capability — toolkits, then every can rule that speaks about the action.
    if let Some((toolkit, tool_name)) = action.toolkit
        && !kit.toolkits.permits(toolkit, tool_name)
    {
        if kit.toolkits.filters.contains_key(toolkit) {
            refuse!(Refusal::ToolDisabledByKit);
        } else {
            refuse!(Refusal::ToolkitNotPermitted);
        }
    }
    for (i, rule) in kit.can.iter().enumerate() {
        if !rule.matches(&tool.name) {
            continue;
        }
        if rule.effect == RuleEffect::Deny {
            refuse!(Refusal::DeniedByRule { rule: i });
            continue;
        }
        if let Some(max) = rule.max_amount
            && action.amount > max
        {
            refuse!(Refusal::AboveRuleMax { rule: i, max });
        }
        if let Some(list) = &rule.recipients
            && !action.recipient.is_some_and(|r| list.iter().any(|x| x == r))
        {
            refuse!(Refusal::RecipientNotAllowed { rule: i });
        }
        if let Some(list) = &rule.merchants
            && !action.merchant.is_some_and(|m| list.iter().any(|x| x == m))
        {
            refuse!(Refusal::MerchantNotAllowed { rule: i });
        }
    }
    // Step 5: effect class, from the tool's declaration through the one classifier.
    if tool.effect == Effect::Destructive && kit.limits.approve.destructive {
        refuse!(Refusal::DestructiveNeedsApproval);
    }
    // Step 6: price.
    let Some(cost) = cost else {
        emit(Refusal::PriceOverflow);
        return cost_or_max;
    };
    // Step 7: budget — hard caps, the balance bound and company credit deny, soft caps freeze.
    for (i, b) in input.budgets.iter().enumerate() {
        match (b.would_be(cost), b.hard_cap) {
            (None, _) => refuse!(Refusal::BalanceLimit { budget: i }),
            (Some(w), Some(cap)) if w > cap => refuse!(Refusal::HardCapExceeded { budget: i, cap }),
            _ => {}
        }
    }
    for p in input.periods {
        if let Some(cap) = p.hard_cap
            && p.would_be(cost).is_none_or(|w| w > cap)
        {
            let PeriodView { budget, limit, every, resets_at, .. } = *p;
            refuse!(Refusal::PeriodCapExceeded { budget, limit, every, cap, resets_at });
        }
    }
    if tool.price > input.company_credit {
        refuse!(Refusal::CompanyCreditExhausted { available: input.company_credit });
    }
    for (i, b) in input.budgets.iter().enumerate() {
        if let Some(cap) = b.soft_cap
            && b.would_be(cost).is_none_or(|w| w > cap)
        {
            soft = true;
            refuse!(Refusal::SoftCapCrossed { budget: i, cap });
        }
    }
    for p in input.periods {
        if let Some(cap) = p.soft_cap
            && p.would_be(cost).is_none_or(|w| w > cap)
        {
            let PeriodView { budget, limit, every, resets_at, .. } = *p;
            soft = true;
            refuse!(Refusal::PeriodSoftCapCrossed { budget, limit, every, cap, resets_at });
        }
    }
    // Step 8: approval thresholds.
    if let Some(threshold) = kit.limits.approve.above
        && cost >= threshold
        && !cost.is_zero()
    {
        refuse!(Refusal::AboveApprovalThreshold { threshold });
    }
    if let Some(index) = kit.limits.approve.always.iter().position(|p| action_pattern_matches(p, &tool.name))
    {
        refuse!(Refusal::AlwaysApprove { index });
    }
    let destructive = tool.effect == Effect::Destructive;
    let rules = &kit.limits.approve.rules;
    if let Some(rule) = rules.iter().position(|r| r.parks() && r.matches(&tool.name, cost, destructive, soft))
    {
        refuse!(Refusal::ApprovalRule { rule });
    }
    cost
}
