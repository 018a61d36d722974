//! Table tests for every decision path the source documents describe (seeds 000 and 002).

use policy::envelope::{OnExpiry, RecoveryStep};
use policy::*;

struct World {
    catalog: Catalog,
    kit: Kit,
    budgets: Vec<BudgetView>,
    credit: Money,
    subject: SubjectStatus,
}

impl World {
    fn new(kit: Kit) -> World {
        let budgets = vec![BudgetView::from_kit(&kit, Money::ZERO, Money::ZERO)];
        World {
            catalog: Catalog::builtin(),
            kit,
            budgets,
            credit: Money::dollars(1_000),
            subject: SubjectStatus::Active,
        }
    }
    fn req<'a>(&'a self, tool: &str, amount: &str) -> ActionRequest<'a> {
        ActionRequest {
            tool: self.catalog.get(tool).expect("tool"),
            amount: Money::parse(amount).unwrap(),
            recipient: None,
            merchant: None,
            toolkit: None,
        }
    }
    fn input<'a>(&'a self, action: ActionRequest<'a>) -> DecisionInput<'a> {
        DecisionInput {
            subject: self.subject,
            kit: &self.kit,
            action,
            budgets: &self.budgets,
            company_credit: self.credit,
            periods: &[],
            rates: &[],
        }
    }
    fn decide(&self, tool: &str, amount: &str) -> Decision {
        evaluate(&self.input(self.req(tool, amount)))
    }
}

fn kit(json: &str) -> Kit {
    Kit::from_json(json).unwrap()
}

#[test]
fn source_example_envelope_field_for_field() {
    let mut k = Kit::default_kit();
    k.primitives.remove(Primitive::Tasks);
    let w = World::new(k);
    let action = w.req("teams.board", "0");
    let d = evaluate(&w.input(action));
    assert_eq!(d.verdict, EngineVerdict::Deny);
    let env = Envelope::deny(&w.kit, &action, d.refusal.unwrap(), 1, vec![]);
    let got = serde_json::to_value(&env).unwrap();
    let hint = got["error"]["hint"].clone();
    let want = serde_json::json!({
        "ok": false, "verdict": "deny", "reason": "capability_denied", "action": "teams.board",
        "layer": "company", "retryable": false, "repeat": 1,
        "message": "Not allowed by AccountKit \"Default\": primitive_disabled_by_kit",
        "error": { "code": "forbidden", "hint": hint, "details": { "reason": "primitive_disabled_by_kit" } },
        "recovery": [ { "kind": "request_capability", "change": "Enable the 'tasks' primitive for this tenant.",
                        "human_action": "Tell the user this capability is switched off for their account and stop." } ],
        "alternatives": []
    });
    assert_eq!(got, want);
    assert!(!hint.as_str().unwrap().is_empty());
    // Field order is the documented one (docs/architecture.md#verdicts-and-the-refusal-envelope).
    let text = serde_json::to_string(&env).unwrap();
    let order = [
        "\"ok\"",
        "\"verdict\"",
        "\"reason\"",
        "\"action\"",
        "\"layer\"",
        "\"retryable\"",
        "\"repeat\"",
        "\"message\"",
        "\"error\"",
        "\"recovery\"",
        "\"alternatives\"",
    ];
    let pos: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(env.is_error());
}

#[test]
fn brain_is_opt_in() {
    let w = World::new(Kit::default_kit());
    let d = w.decide("brain.query", "0");
    assert_eq!(d.refusal, Some(Refusal::PrimitiveDisabled { primitive: Primitive::Brain }));
}

#[test]
fn park_gives_wait_for_approval() {
    let w = World::new(kit(r#"{"name":"K","primitives":["cards"],"limits":{"approve":{"above":"25"}}}"#));
    let action = w.req("cards.charge", "48");
    let d = evaluate(&w.input(action));
    assert_eq!(d.verdict, EngineVerdict::Freeze);
    assert_eq!(d.refusal, Some(Refusal::AboveApprovalThreshold { threshold: Money::dollars(25) }));
    let env = Envelope::park(
        &w.kit,
        &action,
        d.refusal.unwrap(),
        ApprovalHandle { approval_id: "apr_1".into(), expires_at: "2026-11-30T12:15:00Z".into() },
    );
    assert_eq!(env.verdict, EnvelopeVerdict::Park);
    assert!(!env.is_error());
    assert!(!env.retryable);
    assert_eq!(
        env.recovery,
        vec![RecoveryStep::WaitForApproval {
            approval_id: "apr_1".into(),
            expires_at: "2026-11-30T12:15:00Z".into(),
            on_expiry: OnExpiry::Deny
        }]
    );
    let v = serde_json::to_value(&env).unwrap();
    assert_eq!(v["recovery"][0]["kind"], "wait_for_approval");
    assert_eq!(v["recovery"][0]["on_expiry"], "deny");
    // At the threshold parks too; below it runs.
    assert_eq!(w.decide("cards.charge", "25").verdict, EngineVerdict::Freeze);
    assert_eq!(w.decide("cards.charge", "24.9999").verdict, EngineVerdict::Allow);
}

#[test]
fn hard_cap_gives_budget_exceeded() {
    let mut w = World::new(kit(
        r#"{"name":"K","primitives":["web","cards"],"limits":{"budget":{"hard_cap":"0.01"}}}"#,
    ));
    // 0.25¢ reads accumulate: four fit in a cent, the fifth does not.
    w.budgets[0].posted = Money::units_const(75);
    assert_eq!(w.decide("web.read", "0").verdict, EngineVerdict::Allow);
    w.budgets[0].pending = Money::units_const(25);
    let action = w.req("web.read", "0");
    let d = evaluate(&w.input(action));
    assert_eq!(d.verdict, EngineVerdict::Deny);
    assert_eq!(d.refusal.unwrap().reason(), "budget_exceeded");
    let env = Envelope::deny(&w.kit, &action, d.refusal.unwrap(), 1, vec![]);
    assert_eq!(env.reason, "budget_exceeded");
    assert_eq!(env.layer, Layer::Budget);
    assert_eq!(env.error.details.reason, "hard_cap_exceeded");
}

#[test]
fn company_credit_exhaustion_denies() {
    let mut w = World::new(Kit::default_kit());
    w.credit = Money::units_const(7);
    let d = w.decide("email.send", "0");
    assert_eq!(d.refusal, Some(Refusal::CompanyCreditExhausted { available: Money::units_const(7) }));
    w.credit = Money::units_const(8);
    assert_eq!(w.decide("email.send", "0").verdict, EngineVerdict::Allow);
}

#[test]
fn soft_cap_parks() {
    let mut w = World::new(kit(
        r#"{"name":"K","primitives":["cards"],"limits":{"budget":{"hard_cap":"100","soft_cap":"50"}}}"#,
    ));
    w.budgets[0].posted = Money::dollars(40);
    let d = w.decide("cards.charge", "20");
    assert_eq!(d.verdict, EngineVerdict::Freeze);
    assert_eq!(d.refusal.unwrap().detail(), "soft_cap_crossed");
    // Crossing both: the hard cap wins, because approval cannot release it.
    let d = w.decide("cards.charge", "61");
    assert_eq!(d.verdict, EngineVerdict::Deny);
    let e = explain(&w.input(w.req("cards.charge", "61")));
    assert_eq!(e.verdict, ExplainVerdict::Deny);
    assert_eq!(e.reasons.len(), 2);
}

#[test]
fn revoked_profile_is_refused_even_for_reads() {
    let mut w = World::new(Kit::default_kit());
    w.subject = SubjectStatus::Revoked;
    let action = w.req("web.read", "0");
    let d = evaluate(&w.input(action));
    assert_eq!(d.refusal, Some(Refusal::ProfileInactive { status: SubjectStatus::Revoked }));
    let env = Envelope::deny(&w.kit, &action, d.refusal.unwrap(), 1, vec![]);
    assert_eq!(env.reason, "agent_profile_revoked");
    assert_eq!(env.layer, Layer::Subject);
    w.subject = SubjectStatus::Suspended;
    assert_eq!(w.decide("web.read", "0").refusal.unwrap().reason(), "agent_profile_revoked");
}

#[test]
fn third_refusal_escalates() {
    let mut k = Kit::default_kit();
    k.primitives.remove(Primitive::Tasks);
    let w = World::new(k);
    let action = w.req("teams.board", "0");
    let r = evaluate(&w.input(action)).refusal.unwrap();
    for repeat in 1..=2 {
        let env = Envelope::deny(&w.kit, &action, r, repeat, vec!["teams.status".into()]);
        assert!(matches!(env.recovery[..], [RecoveryStep::RequestCapability { .. }]));
        assert_eq!(env.alternatives.len(), 1);
    }
    for repeat in [3, 4] {
        let env = Envelope::deny(&w.kit, &action, r, repeat, vec!["teams.status".into()]);
        assert_eq!(env.repeat, repeat);
        assert!(matches!(env.recovery[..], [RecoveryStep::EscalateToHuman { .. }]), "{:?}", env.recovery);
        assert!(env.alternatives.is_empty());
    }
}

#[test]
fn unavailable_is_the_only_retryable_verdict() {
    let env = Envelope::unavailable("cards.charge", "connector_timeout", 5, 1);
    assert!(env.retryable);
    assert!(env.is_error());
    assert_eq!(env.recovery, vec![RecoveryStep::RetryAfter { seconds: 5 }]);
    let w = World::new(Kit::default_kit());
    let action = w.req("cards.charge", "1");
    let env = Envelope::deny(&w.kit, &action, Refusal::DeniedByRule { rule: 0 }, 1, vec![]);
    assert!(!env.retryable);
}

#[test]
fn can_rules_deny_and_condition() {
    let k = kit(r#"{"name":"K","primitives":["cards","email"],"can":[
            {"action":"cards.charge","effect":"allow","max_amount":"50","merchants":["acme"]},
            {"action":"email.*","effect":"deny"}]}"#);
    let w = World::new(k);
    let mut a = w.req("cards.charge", "48");
    assert_eq!(evaluate(&w.input(a)).refusal, Some(Refusal::MerchantNotAllowed { rule: 0 }));
    a.merchant = Some("acme");
    assert_eq!(evaluate(&w.input(a)).verdict, EngineVerdict::Allow);
    a.amount = Money::dollars(51);
    assert_eq!(
        evaluate(&w.input(a)).refusal,
        Some(Refusal::AboveRuleMax { rule: 0, max: Money::dollars(50) })
    );
    assert_eq!(w.decide("email.send", "0").refusal, Some(Refusal::DeniedByRule { rule: 1 }));
}

#[test]
fn toolkits_refuse_with_request_toolkit() {
    let k = kit(
        r#"{"name":"K","primitives":["connections"],"toolkits":{"allow_all":false,"filters":{"github":{"disable":["delete_repo"]}}}}"#,
    );
    let w = World::new(k);
    let mut a = w.req("connections.execute", "0");
    a.toolkit = Some(("slack", "post"));
    let r = evaluate(&w.input(a)).refusal.unwrap();
    assert_eq!(r, Refusal::ToolkitNotPermitted);
    let env = Envelope::deny(&w.kit, &a, r, 1, vec![]);
    assert!(matches!(&env.recovery[0], RecoveryStep::RequestToolkit { toolkit, .. } if toolkit == "slack"));
    a.toolkit = Some(("github", "delete_repo"));
    assert_eq!(evaluate(&w.input(a)).refusal, Some(Refusal::ToolDisabledByKit));
    a.toolkit = Some(("github", "list_issues"));
    assert_eq!(evaluate(&w.input(a)).verdict, EngineVerdict::Allow);
}

#[test]
fn destructive_tools_park_unless_the_kit_says_otherwise() {
    let w = World::new(Kit::default_kit());
    assert_eq!(w.decide("tasks.delete", "0").refusal, Some(Refusal::DestructiveNeedsApproval));
    let w =
        World::new(kit(r#"{"name":"K","primitives":["tasks"],"limits":{"approve":{"destructive":false}}}"#));
    assert_eq!(w.decide("tasks.delete", "0").verdict, EngineVerdict::Allow);
}

#[test]
fn explain_lists_every_reason_in_check_order() {
    let mut w = World::new(kit(
        r#"{"name":"K","primitives":["email"],"can":[{"action":"cards.charge","effect":"deny"}],
            "limits":{"budget":{"hard_cap":"10"},"approve":{"always":["cards.charge"]}}}"#,
    ));
    w.subject = SubjectStatus::Suspended;
    let e = explain(&w.input(w.req("cards.charge", "20")));
    assert_eq!(e.verdict, ExplainVerdict::Deny);
    let steps: Vec<Step> = e.reasons.iter().map(|r| r.step()).collect();
    assert_eq!(steps, [Step::Revocation, Step::Primitive, Step::Capability, Step::Budget, Step::Approval]);
    // evaluate reports the first.
    assert_eq!(w.decide("cards.charge", "20").refusal.unwrap().step(), Step::Revocation);
}

#[test]
fn sub_agent_budget_is_shared() {
    let parent = kit(r#"{"name":"P","primitives":["cards"],"limits":{"budget":{"hard_cap":"100"}}}"#);
    let child = derive_child(
        &parent,
        &kit(r#"{"name":"C","primitives":["cards","email"],"limits":{"budget":{"hard_cap":"500"}}}"#),
    );
    assert_eq!(child.limits.budget.hard_cap, Some(Money::dollars(100)));
    assert!(!child.primitives.contains(Primitive::Email));
    // The child's own view has room, but the parent's pool does not.
    let mut w = World::new(child.clone());
    w.budgets = vec![
        BudgetView::from_kit(&child, Money::dollars(10), Money::ZERO),
        BudgetView::from_kit(&parent, Money::dollars(95), Money::ZERO),
    ];
    let d = w.decide("cards.charge", "10");
    assert_eq!(d.refusal, Some(Refusal::HardCapExceeded { budget: 1, cap: Money::dollars(100) }));
}

#[test]
fn kit_diff_says_what_widens_and_narrows() {
    let old = kit(
        r#"{"name":"K","primitives":["email"],"limits":{"budget":{"hard_cap":"50"},"approve":{"always":["email.send"]}}}"#,
    );
    let new = kit(r#"{"name":"K","primitives":["email","cards"],"limits":{"budget":{"hard_cap":"80"}},
        "can":[{"action":"cards.charge","effect":"allow","max_amount":"20"}]}"#);
    let d = KitDiff::between(&old, &new);
    let texts: Vec<(Direction, &str)> = d.changes.iter().map(|c| (c.direction, c.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (Direction::Widens, "enables primitive `cards`"),
            (Direction::Widens, "raises hard cap from $50.00 to $80.00"),
            (Direction::Widens, "removes approval for `email.send`"),
            (Direction::Narrows, "adds a rule allowing `cards.charge` up to $20.00"),
        ]
    );
    assert!(KitDiff::between(&new, &new).is_empty());
    let back = KitDiff::between(&new, &old);
    assert_eq!(back.widens().count(), 1);
    assert_eq!(back.narrows().count(), 3);
}

#[test]
fn effect_pins_read_and_write_as_a_map_in_tool_order_and_refuse_a_tool_pinned_twice() {
    let mut k = Kit::default_kit();
    k.toolkits.filters.insert("github".into(), Default::default());
    let json = k
        .to_json()
        .replace(r#""github":{}"#, r#""github":{"effects":{"merge":"destructive","list":"read"}}"#);
    let read = kit(&json);
    let pins = &read.toolkits.filters["github"].effects;
    let listed: Vec<_> = pins.iter().collect();
    assert_eq!(listed, [("list", policy::Effect::Read), ("merge", policy::Effect::Destructive)]);
    assert!(read.to_json().contains(r#""effects":{"list":"read","merge":"destructive"}"#));
    assert_eq!(read.toolkits.effect("github", "list", Some(policy::Effect::Write)), policy::Effect::Write);
    assert_eq!(
        read.toolkits.effect("github", "merge", Some(policy::Effect::Read)),
        policy::Effect::Destructive
    );

    let twice = json.replace(r#""list":"read""#, r#""merge":"read""#);
    let err = Kit::from_json(&twice).unwrap_err();
    assert_eq!(err.0[0].path, "toolkits.filters.github.effects");
    assert!(err.0[0].message.contains("`merge` is pinned twice"), "{}", err.0[0].message);
    let unknown = json.replace(r#""list":"read""#, r#""list":"harmless""#);
    assert!(Kit::from_json(&unknown).is_err(), "an unknown effect is refused");
}

/// A period view of `posted` within a period whose limit is `periods[limit]` of the kit.
fn period(kit: &Kit, limit: usize, posted: &str) -> PeriodView {
    let l = kit.limits.budget.periods[limit];
    PeriodView {
        budget: 0,
        limit,
        every: l.every,
        posted: Money::parse(posted).unwrap(),
        pending: Money::ZERO,
        hard_cap: l.hard_cap,
        soft_cap: l.soft_cap,
        resets_at: 1_798_779_600, // 2027-01-01T05:00:00Z, midnight in New York
    }
}

#[test]
fn a_spent_period_refuses_with_the_limit_and_when_it_resets() {
    let w = World::new(kit(
        r#"{"name":"K","primitives":["cards"],"limits":{"budget":{"hard_cap":"5000","periods":[{"every":"day","hard_cap":"50"},{"every":"month","hard_cap":"1000","soft_cap":"900"}]}}}"#,
    ));
    let periods = [period(&w.kit, 0, "10"), period(&w.kit, 1, "980")];
    let action = w.req("cards.charge", "30");
    let d = evaluate(&DecisionInput { periods: &periods, ..w.input(action) });
    assert_eq!(d.verdict, EngineVerdict::Deny);
    let r = d.refusal.unwrap();
    assert!(matches!(r, Refusal::PeriodCapExceeded { limit: 1, every: Period::Month, .. }), "{r:?}");
    let env = Envelope::deny(&w.kit, &action, r, 1, Vec::new());
    assert_eq!(env.reason, "budget_exceeded");
    assert!(!env.retryable);
    assert_eq!(env.error.details.limit.as_deref(), Some("limits.budget.periods[1].hard_cap"));
    assert_eq!(env.error.details.resets_at.as_deref(), Some("2027-01-01T05:00:00Z"));
    assert!(
        matches!(&env.recovery[..], [RecoveryStep::WaitForReset { resets_at, .. }] if resets_at == "2027-01-01T05:00:00Z"),
        "{:?}",
        env.recovery
    );
    // Under the month's soft cap but past it with this call: a park, not a deny.
    let periods = [period(&w.kit, 0, "10"), period(&w.kit, 1, "880")];
    let d = evaluate(&DecisionInput { periods: &periods, ..w.input(action) });
    assert!(matches!(d.refusal, Some(Refusal::PeriodSoftCapCrossed { limit: 1, .. })), "{d:?}");
    // Within every period: allowed.
    let periods = [period(&w.kit, 0, "20"), period(&w.kit, 1, "100")];
    assert_eq!(
        evaluate(&DecisionInput { periods: &periods, ..w.input(action) }).verdict,
        EngineVerdict::Allow
    );
}

#[test]
fn a_full_rate_window_is_the_one_retryable_deny_and_names_the_wait() {
    let w = World::new(kit(
        r#"{"name":"K","primitives":["web"],"limits":{"rate":[{"action":"web.*","calls":3,"per":"minute"}]}}"#,
    ));
    let action = w.req("web.read", "0");
    let open = [RateView { limit: Some(0), calls: 3, used: 2, retry_after: 17 }];
    assert_eq!(evaluate(&DecisionInput { rates: &open, ..w.input(action) }).verdict, EngineVerdict::Allow);
    let full = [RateView { used: 3, ..open[0] }];
    let d = evaluate(&DecisionInput { rates: &full, ..w.input(action) });
    let r = d.refusal.unwrap();
    assert_eq!((d.verdict, r.reason(), r.detail()), (EngineVerdict::Deny, "rate_limited", "kit_rate_limit"));
    let env = Envelope::deny(&w.kit, &action, r, 1, Vec::new());
    assert!(env.retryable, "the one retryable deny");
    assert_eq!(env.recovery, [RecoveryStep::RetryAfter { seconds: 17 }]);
    assert_eq!(env.error.details.limit.as_deref(), Some("limits.rate[0]"));
    let tenant = [RateView { limit: None, calls: 100, used: 100, retry_after: 1 }];
    let d = evaluate(&DecisionInput { rates: &tenant, ..w.input(action) });
    assert_eq!(d.refusal.unwrap().detail(), "tenant_rate_limit");
}

#[test]
fn bad_periods_and_rates_name_their_path_and_what_to_change() {
    let errs = |json: &str| Kit::from_json(json).unwrap_err().0;
    let e = errs(
        r#"{"name":"K","primitives":[],"limits":{"budget":{"periods":[{"every":"day","hard_cap":"5","soft_cap":"9"},{"every":"month","week_starts":"monday","hard_cap":"1"},{"every":"week"}]},"rate":[{"calls":0,"per":"second"},{"action":"warp.go","calls":2000000,"per":"hour"}]}}"#,
    );
    let paths: Vec<&str> = e.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "limits.budget.periods[0].soft_cap",
            "limits.budget.periods[1].week_starts",
            "limits.budget.periods[2]",
            "limits.rate[0].calls",
            "limits.rate[1].action",
            "limits.rate[1].calls",
        ]
    );
    assert!(e[0].message.contains("lower it or raise the hard cap"), "{}", e[0].message);
    let e = errs(
        r#"{"name":"K","primitives":[],"limits":{"budget":{"periods":[{"every":"week","week_starts":"funday","hard_cap":"1"}]}}}"#,
    );
    assert_eq!(e[0].path, "limits.budget.periods[0].week_starts");
    let e = errs(r#"{"name":"K","primitives":[],"limits":{"rate":[{"calls":5,"per":"fortnight"}]}}"#);
    assert_eq!(e[0].path, "limits.rate[0].per");
    let e = errs(
        r#"{"name":"K","primitives":[],"limits":{"budget":{"periods":[{"every":"year","hard_cap":"1"}]}}}"#,
    );
    assert_eq!(e[0].path, "limits.budget.periods[0].every");
}

#[test]
fn a_kit_without_periods_or_rates_serializes_as_before() {
    let k = kit(r#"{"name":"K","primitives":["cards"],"limits":{"budget":{"hard_cap":"10"}}}"#);
    assert_eq!(
        k.to_json(),
        r#"{"name":"K","version":1,"primitives":["cards"],"toolkits":{"allow_all":false,"filters":{}},"can":[],"limits":{"budget":{"hard_cap":"10.00"},"approve":{"destructive":true}}}"#
    );
}

#[test]
fn timestamps_are_written_in_utc() {
    use policy::envelope::rfc3339;
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_798_779_599), "2027-01-01T04:59:59Z");
}

#[test]
fn diffs_say_when_periods_and_rates_widen_or_narrow() {
    let old = kit(
        r#"{"name":"K","primitives":[],"limits":{"budget":{"periods":[{"every":"month","hard_cap":"1000"}]},"rate":[{"calls":10,"per":"minute"}]}}"#,
    );
    let new = kit(
        r#"{"name":"K","primitives":[],"limits":{"budget":{"periods":[{"every":"month","hard_cap":"1500"},{"every":"day","hard_cap":"50"}]},"rate":[{"calls":5,"per":"minute"}]}}"#,
    );
    let d = KitDiff::between(&old, &new);
    let said: Vec<(Direction, &str)> = d.changes.iter().map(|c| (c.direction, c.text.as_str())).collect();
    assert_eq!(
        said,
        [
            (Direction::Widens, "raises monthly hard cap from $1000.00 to $1500.00"),
            (Direction::Narrows, "sets a daily hard cap of $50.00"),
            (Direction::Narrows, "lowers the rate limit on `*` per minute from 10 to 5 calls"),
        ]
    );
}

#[test]
fn approval_rules_park_what_they_name_and_the_strictest_says_who_approves() {
    let mut w = World::new(kit(
        r#"{"name":"Team","primitives":["cards"],"limits":{"budget":{"soft_cap":"9000.00"},"approve":{"rules":[
            {"above":"30.00","window":"10m"},
            {"above":"500.00","approvers":2,"role":"finance","window":"4h","escalate":{"after":"1h","group":"treasury"}},
            {"soft_cap":true,"approvers":3}
        ]}}}"#,
    ));
    let small = w.decide("cards.charge", "10.00");
    assert_eq!((small.verdict, small.rule), (EngineVerdict::Allow, None));
    let mid = w.decide("cards.charge", "40.00");
    assert_eq!(
        (mid.verdict, mid.refusal, mid.rule),
        (EngineVerdict::Freeze, Some(Refusal::ApprovalRule { rule: 0 }), Some(0))
    );
    let wire = w.decide("cards.charge", "5000.00");
    assert_eq!((wire.verdict, wire.rule), (EngineVerdict::Freeze, Some(1)));
    let env = Envelope::park(
        &w.kit,
        &w.req("cards.charge", "5000.00"),
        wire.refusal.unwrap(),
        ApprovalHandle { approval_id: "apr_1".into(), expires_at: "2026-01-01T00:00:00Z".into() },
    );
    assert!(env.message.contains("1 approver"), "{}", env.message);
    assert_eq!(env.error.details.limit.as_deref(), Some("limits.approve.rules[0]"));
    // Crossing the soft cap brings in the rule that needs three.
    w.budgets[0].posted = Money::parse("8980.00").unwrap();
    let crossing = w.decide("cards.charge", "40.00");
    assert_eq!((crossing.verdict, crossing.rule), (EngineVerdict::Freeze, Some(2)));
    let explained = explain(&w.input(w.req("cards.charge", "40.00")));
    assert_eq!(explained.rule, Some(2));
}

#[test]
fn approval_rules_that_cannot_hold_are_refused_with_their_paths() {
    let errs = Kit::from_json(
        r#"{"name":"K","primitives":[],"limits":{"approve":{"rules":[
            {"approvers":2},
            {"above":"1.00","approvers":0,"role":"boss"},
            {"action":"cards.*","window":"8d","role":"finance","group":"x"},
            {"action":"*","window":"30m","escalate":{"after":"30m"}},
            {"action":"*","group":"Has Spaces"}
        ]}}}"#,
    )
    .unwrap_err();
    let paths: Vec<&str> = errs.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "limits.approve.rules[0]",
            "limits.approve.rules[1].approvers",
            "limits.approve.rules[1].role",
            "limits.approve.rules[2].group",
            "limits.approve.rules[2].window",
            "limits.approve.rules[3].escalate.after",
            "limits.approve.rules[4].group",
        ]
    );
    let bad_window = Kit::from_json(
        r#"{"name":"K","primitives":[],"limits":{"approve":{"rules":[{"action":"*","window":"4 weeks"}]}}}"#,
    )
    .unwrap_err();
    assert!(bad_window.0[0].message.contains("30m, 4h or 2d"), "{:?}", bad_window.0);
}

#[test]
fn the_diff_says_when_fewer_approve_or_a_window_grows() {
    let old = kit(
        r#"{"name":"K","primitives":[],"limits":{"approve":{"rules":[{"above":"500.00","approvers":2,"window":"1h"}]}}}"#,
    );
    let new = kit(
        r#"{"name":"K","primitives":[],"limits":{"approve":{"rules":[{"above":"500.00","approvers":1,"window":"4h"}]}}}"#,
    );
    let d = KitDiff::between(&old, &new);
    let texts: Vec<(Direction, &str)> = d.changes.iter().map(|c| (c.direction, c.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (Direction::Widens, "lowers the approvers for calls of at least $500.00 from 2 to 1"),
            (Direction::Widens, "lengthens the approval window for calls of at least $500.00 from 1h to 4h"),
        ]
    );
    assert_eq!(KitDiff::between(&new, &old).widens().count(), 0);
}
