//! Property tests: money never rounds, narrowing never widens, allow never overspends.

use policy::*;
use proptest::prelude::*;

/// Mostly everyday amounts, sometimes amounts near the bound, where sums must not overflow.
fn money() -> impl Strategy<Value = Money> {
    let max = Money::MAX.units();
    prop_oneof![9 => 0i64..2_000_000, 1 => (max - 2_000_000)..=max]
        .prop_map(|u| Money::from_units(u).unwrap())
}

fn opt_money() -> impl Strategy<Value = Option<Money>> {
    prop::option::of(money())
}

fn primitives() -> impl Strategy<Value = PrimitiveSet> {
    prop::collection::vec(prop::sample::select(Primitive::ALL.to_vec()), 0..17)
        .prop_map(|v| v.into_iter().collect())
}

const ACTIONS: &[&str] =
    &["cards.charge", "email.send", "web.read", "tasks.delete", "brain.query", "sms.send", "cards.*", "*"];

fn rule() -> impl Strategy<Value = CanRule> {
    (
        prop::sample::select(ACTIONS.to_vec()),
        any::<bool>(),
        opt_money(),
        prop::option::of(prop::collection::vec(prop::sample::select(vec!["a@x", "b@x"]), 1..3)),
        prop::option::of(prop::collection::vec(prop::sample::select(vec!["acme", "globex"]), 1..3)),
    )
        .prop_map(|(action, allow, max_amount, recipients, merchants)| CanRule {
            action: action.to_string(),
            effect: if allow { RuleEffect::Allow } else { RuleEffect::Deny },
            max_amount: if allow { max_amount } else { None },
            recipients: if allow {
                recipients.map(|v| v.into_iter().map(String::from).collect())
            } else {
                None
            },
            merchants: if allow {
                merchants.map(|v| v.into_iter().map(String::from).collect())
            } else {
                None
            },
        })
}

fn kit() -> impl Strategy<Value = Kit> {
    (
        primitives(),
        prop::collection::vec(rule(), 0..4),
        opt_money(),
        opt_money(),
        opt_money(),
        any::<bool>(),
        prop::collection::vec(prop::sample::select(ACTIONS.to_vec()), 0..2),
    )
        .prop_map(|(primitives, can, hard, soft, above, destructive, always)| {
            let mut k = Kit::default_kit();
            k.name = "P".into();
            k.primitives = primitives;
            k.can = can;
            k.limits.budget.hard_cap = hard;
            k.limits.budget.soft_cap = match (soft, hard) {
                (Some(s), Some(h)) => Some(s.min(h)),
                (s, _) => s,
            };
            k.limits.approve.above = above;
            k.limits.approve.destructive = destructive;
            k.limits.approve.always = always.into_iter().map(String::from).collect();
            k
        })
}

proptest! {
    #[test]
    fn money_round_trips(units in 0i64..=Money::MAX.units()) {
        let m = Money::from_units(units).unwrap();
        prop_assert_eq!(Money::parse(&m.to_string()).unwrap(), m);
        prop_assert_eq!(Money::parse(&m.to_decimal_string()).unwrap(), m);
    }

    #[test]
    fn money_never_rounds_silently(whole in 0u32..1_000_000, frac in "[0-9]{1,8}") {
        let s = format!("{whole}.{frac}");
        let significant = frac.trim_end_matches('0').len();
        match Money::parse(&s) {
            Ok(m) => {
                prop_assert!(significant <= 4);
                // Exact: formatting back gives the same number.
                let back = m.to_decimal_string();
                let norm = |x: &str| x.trim_end_matches('0').trim_end_matches('.').to_string();
                prop_assert_eq!(norm(&back), norm(&s));
            }
            Err(e) => {
                prop_assert!(significant > 4);
                prop_assert_eq!(e, MoneyError::TooPrecise);
            }
        }
    }

    #[test]
    fn narrowed_child_never_allows_what_parent_denies(
        parent in kit(), requested in kit(),
        tool_i in 0usize..6, amount in money(), posted in money(), pending in money(),
        recipient in prop::option::of(prop::sample::select(vec!["a@x", "b@x", "c@x"])),
        merchant in prop::option::of(prop::sample::select(vec!["acme", "globex", "initech"])),
    ) {
        let catalog = Catalog::builtin();
        let tool = catalog.get(["cards.charge", "email.send", "web.read", "tasks.delete", "brain.query", "sms.send"][tool_i]).unwrap();
        let child = derive_child(&parent, &requested);
        let action = ActionRequest { tool, amount, recipient, merchant, toolkit: None };
        let pb = [BudgetView::from_kit(&parent, posted, pending)];
        let cb = [BudgetView::from_kit(&child, posted, pending), BudgetView::from_kit(&parent, posted, pending)];
        let p = evaluate(&DecisionInput { subject: SubjectStatus::Active, kit: &parent, action, budgets: &pb, company_credit: Money::dollars(1000), periods: &[], rates: &[] });
        let c = evaluate(&DecisionInput { subject: SubjectStatus::Active, kit: &child, action, budgets: &cb, company_credit: Money::dollars(1000), periods: &[], rates: &[] });
        if p.verdict == EngineVerdict::Deny {
            prop_assert_eq!(c.verdict, EngineVerdict::Deny, "parent denied {:?} but child said {:?}", p.refusal, c.refusal);
        }
        if p.verdict == EngineVerdict::Freeze {
            prop_assert_ne!(c.verdict, EngineVerdict::Allow);
        }
    }

    #[test]
    fn allow_never_exceeds_the_hard_cap(
        k in kit(), tool_i in 0usize..6, amount in money(), posted in money(), pending in money(), credit in money(),
    ) {
        let catalog = Catalog::builtin();
        let tool = catalog.get(["cards.charge", "email.send", "web.read", "tasks.delete", "brain.query", "sms.send"][tool_i]).unwrap();
        let action = ActionRequest { tool, amount, recipient: None, merchant: None, toolkit: None };
        let budgets = [BudgetView::from_kit(&k, posted, pending)];
        let d = evaluate(&DecisionInput { subject: SubjectStatus::Active, kit: &k, action, budgets: &budgets, company_credit: credit, periods: &[], rates: &[] });
        if d.verdict != EngineVerdict::Deny {
            if let Some(cap) = k.limits.budget.hard_cap {
                prop_assert!(posted.units() + pending.units() + d.cost.units() <= cap.units());
            }
            // No balance ever passes the bound, cap or no cap.
            prop_assert!(posted.units() + pending.units() + d.cost.units() <= Money::MAX.units());
            prop_assert!(tool.price <= credit);
        }
        // explain agrees with evaluate on the verdict.
        let e = explain(&DecisionInput { subject: SubjectStatus::Active, kit: &k, action, budgets: &budgets, company_credit: credit, periods: &[], rates: &[] });
        prop_assert_eq!(e.verdict, policy::verdict::explain_verdict(d.verdict));
    }
}

/// Whether `pattern` (as the API document states it) accepts `text` as a whole value.
fn matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern).unwrap().is_match(text)
}

fn accepted(action: &str, field: &str, value: &str) -> bool {
    let decl = policy::args::declaration(action).unwrap();
    let mut args = match action {
        "cards.charge" => serde_json::json!({ "amount": "1", "merchant": "m" }),
        _ => serde_json::json!({ "to": "a@x.test" }),
    };
    args[field] = serde_json::Value::String(value.to_string());
    decl.check(&args).is_ok()
}

proptest! {
    /// Whatever the periods hold, an allowed or parked call fits within every period's hard
    /// cap, and a full rate window refuses.
    #[test]
    fn allow_never_exceeds_a_period_cap_nor_a_rate(
        amount in money(),
        periods in prop::collection::vec((money(), money(), prop::option::of(money()), 0u8..3), 0..4),
        rates in prop::collection::vec((1u32..5, 0u32..6), 0..3),
    ) {
        let catalog = Catalog::builtin();
        let k = Kit::from_json(r#"{"name":"K","primitives":["cards"],"limits":{"approve":{"destructive":false}}}"#).unwrap();
        let action = ActionRequest { tool: catalog.get("cards.charge").unwrap(), amount, recipient: None, merchant: None, toolkit: None };
        let budgets = [BudgetView::from_kit(&k, Money::ZERO, Money::ZERO)];
        let every = [Period::Day, Period::Week, Period::Month];
        let views: Vec<PeriodView> = periods.iter().enumerate().map(|(i, &(posted, pending, hard_cap, e))| PeriodView {
            budget: 0, limit: i, every: every[e as usize], posted, pending, hard_cap, soft_cap: None, resets_at: 0,
        }).collect();
        let rate_views: Vec<RateView> = rates.iter().enumerate().map(|(i, &(calls, used))| RateView {
            limit: Some(i as u32), calls, used, retry_after: 1,
        }).collect();
        let d = evaluate(&DecisionInput { subject: SubjectStatus::Active, kit: &k, action, budgets: &budgets, company_credit: Money::MAX, periods: &views, rates: &rate_views });
        if d.verdict != EngineVerdict::Deny {
            for v in &views {
                let total = i128::from(v.posted.units()) + i128::from(v.pending.units()) + i128::from(d.cost.units());
                if let Some(cap) = v.hard_cap {
                    prop_assert!(total <= i128::from(cap.units()), "{v:?} cost {}", d.cost);
                }
            }
            prop_assert!(rate_views.iter().all(|r| r.used < r.calls));
        }
        if rate_views.iter().any(|r| r.used >= r.calls) {
            prop_assert_eq!(d.refusal.map(|r| r.reason()), Some("rate_limited"));
        }
    }
}

proptest! {
    /// The document's patterns say exactly what the declarations accept: an amount, a line,
    /// a text, a name.
    #[test]
    fn argument_patterns_agree_with_the_checks(
        amount in "[0-9.]{1,14}|1000000000(\\.[0-9]{1,5})?|0\\.[0-9]{1,5}",
        line in "[ a\t\u{202e}\u{85}\u{a0}x]{0,6}",
        text in "[ \n\tq\u{7}\u{200b}]{0,6}",
    ) {
        prop_assert_eq!(matches(policy::args::AMOUNT_PATTERN, &amount), accepted("cards.charge", "amount", &amount), "amount {:?}", amount);
        prop_assert_eq!(matches(policy::args::LINE_PATTERN, &line), accepted("cards.charge", "merchant", &line), "line {:?}", line);
        prop_assert_eq!(matches(policy::args::TEXT_PATTERN, &text), accepted("email.send", "body", &text), "text {:?}", text);
        prop_assert_eq!(matches(policy::args::NAME_PATTERN, &line), policy::args::is_plain_name(&line, 80), "name {:?}", line);
    }
}
