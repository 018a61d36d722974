//! Approvals for teams (issue #34): N distinct approvers with a named role or group, per-rule
//! windows, escalation, the agent's justification and bulk decisions, against the gateway on
//! the engine under test, at a clock the test drives.

mod support;

use chrono::{Duration, TimeZone, Utc};
use gateway::domain::approvals::ApprovalStatus;
use gateway::domain::calls::{Answer, Disposition};
use gateway::domain::periods::Clock;
use gateway::domain::principal::Human;
use gateway::ops::approvals::{BulkDecision, Decided};
use gateway::{GatewayConfig, Role};
use policy::Money;
use serde_json::json;
use support::{Agent, World, world_with};

const TEAM: &str = r#"{"name":"Team","primitives":["cards"],"limits":{"budget":{"hard_cap":"100000"},"approve":{"rules":[
    {"above":"30","window":"10m"},
    {"above":"500","approvers":2,"role":"finance","window":"4h","escalate":{"after":"1h","group":"treasury"}}
]}}}"#;

struct Team {
    w: World,
    clock: Clock,
    agent: Agent,
    /// Approver only.
    carol: Human,
    /// Finance only: decides what a rule names finance for, nothing else.
    fiona: Human,
    /// In group treasury, with no deciding role.
    tess: Human,
}

async fn team() -> Team {
    let clock = Clock::manual(Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap());
    let w = world_with(GatewayConfig { clock: clock.clone(), ..Default::default() }).await;
    let user = |name: &'static str, roles: &'static [Role]| {
        let gw = w.gw.clone();
        let t = w.tenant.clone();
        async move { Human::in_console(&gw.create_user(&t, name, "a-long-password", roles).await.unwrap()) }
    };
    let carol = user("carol", &[Role::Approver]).await;
    let fiona = user("fiona", &[Role::Finance]).await;
    let tess = user("tess", &[Role::Reviewer]).await;
    w.gw.create_group(&w.tenant, "treasury", "test").await.unwrap();
    w.gw.set_group_member(&w.tenant, ("treasury", &tess.user_id), true, "test").await.unwrap();
    w.kit(TEAM).await;
    let agent = w.agent("buyer", "Team", None).await;
    Team { w, clock, agent, carol, fiona, tess }
}

impl Team {
    async fn park(&self, amount: &str, why: Option<&str>) -> String {
        let r = self
            .w
            .gw
            .perform_justified(
                &self.agent.subject,
                "cards.charge".into(),
                json!({"amount": amount, "merchant": "acme"}),
                None,
                why,
            )
            .await
            .unwrap();
        assert_eq!(r.disposition, Disposition::Parked, "{}", r.body);
        match &r.body {
            Answer::Verdict(env) => match env.recovery.first() {
                Some(policy::RecoveryStep::WaitForApproval { approval_id, .. }) => approval_id.clone(),
                other => panic!("a park carries an approval id first, not {other:?}"),
            },
            other => panic!("a park answers with an envelope, not {other:?}"),
        }
    }

    fn later(&self, by: Duration) {
        self.clock.set(self.clock.now() + by);
    }
}

fn code(r: gateway::Result<Decided>) -> &'static str {
    r.map(|_| ()).unwrap_err().code()
}

#[tokio::test]
async fn two_approvers_one_of_them_finance_each_person_once_and_the_call_runs_once() {
    let t = team().await;
    let w = &t.w;
    let id = t.park("5000", Some("Supplier invoice #4411, due Friday")).await;
    let a = w.gw.approval(&w.tenant, &id).await.unwrap();
    assert_eq!((a.quorum.required, a.quorum.role.as_deref()), (2, Some("finance")));
    assert_eq!(a.expires_at - a.requested_at, Duration::hours(4), "the rule's window, not the default");
    assert_eq!(a.justification.as_deref(), Some("Supplier invoice #4411, due Friday"));

    // The agent's owner may not decide, whatever roles they hold.
    assert_eq!(code(w.gw.approve(&w.tenant, &id, &w.owner, None).await), "requester_cannot_decide");
    let first = w.gw.approve(&w.tenant, &id, &t.carol, Some("looks right")).await.unwrap();
    let Decided::Waiting(waiting) = first else { panic!("one of two approvals runs nothing") };
    assert_eq!(waiting.status, ApprovalStatus::Pending);
    assert_eq!(waiting.quorum.progress(), "1 of 2, approved by carol");
    // The list (the inbox's read) carries the progress too.
    let q = gateway::domain::approvals::ApprovalQuery {
        status: Some(ApprovalStatus::Pending),
        ..Default::default()
    };
    let listed = w.gw.approvals(&w.tenant, &q).await.unwrap();
    assert_eq!(listed.iter().find(|a| a.id == id).unwrap().quorum.progress(), "1 of 2, approved by carol");
    // The same person again, with a personal token instead of the session: one person, one vote.
    let by_token = Human { credential: "token tok_carol".into(), ..t.carol.clone() };
    assert_eq!(code(w.gw.approve(&w.tenant, &id, &by_token, None).await), "already_approved");
    // Another approver may not fill the last place: it is finance's.
    assert_eq!(code(w.gw.approve(&w.tenant, &id, &w.approver, None).await), "named_approver_needed");
    assert_eq!(w.gw.budget(&w.tenant, &t.agent.profile).await.unwrap().totals.posted, Money::ZERO);

    let ran =
        w.gw.approve(&w.tenant, &id, &t.fiona, None).await.unwrap().ran().expect("the last approval runs it");
    assert_eq!(ran.disposition, Disposition::Executed, "{}", ran.body);
    let a = w.gw.approval(&w.tenant, &id).await.unwrap();
    assert_eq!(a.status, ApprovalStatus::Approved);
    let steps: Vec<(&str, &str)> = a.trail.iter().map(|s| (s.step.as_str(), s.actor.as_str())).collect();
    assert_eq!(
        steps,
        [
            ("requested", t.agent.profile.as_str()),
            ("justified", t.agent.profile.as_str()),
            ("voted", "carol"),
            ("approved", "fiona"),
            ("executed", "fiona")
        ]
    );
    assert_eq!(
        a.quorum.votes.iter().map(|v| (v.username.as_str(), v.named)).collect::<Vec<_>>(),
        [("carol", false), ("fiona", true)]
    );
    assert_eq!(code(w.gw.approve(&w.tenant, &id, &w.approver, None).await), "approval_already_decided");
    assert_eq!(w.gw.budget(&w.tenant, &t.agent.profile).await.unwrap().totals.posted, Money::dollars(5000));
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn one_deny_after_one_approve_ends_it_and_releases_the_hold() {
    let t = team().await;
    let w = &t.w;
    let id = t.park("900", None).await;
    assert!(matches!(w.gw.approve(&w.tenant, &id, &t.fiona, None).await.unwrap(), Decided::Waiting(_)));
    let denied = w.gw.deny(&w.tenant, &id, &t.carol, "not this vendor").await.unwrap();
    assert_eq!(denied.status, ApprovalStatus::Denied);
    let b = w.gw.budget(&w.tenant, &t.agent.profile).await.unwrap().totals;
    assert_eq!((b.posted, b.pending), (Money::ZERO, Money::ZERO));
    // Finance may decide what a rule names it for, and nothing else.
    let small = t.park("40", None).await;
    assert_eq!(code(w.gw.approve(&w.tenant, &small, &t.fiona, None).await), "role_required");
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn an_approval_expires_at_one_of_two_and_its_window_is_its_rules() {
    let t = team().await;
    let w = &t.w;
    let (small, big) = (t.park("40", None).await, t.park("600", None).await);
    assert!(matches!(w.gw.approve(&w.tenant, &big, &t.carol, None).await.unwrap(), Decided::Waiting(_)));
    t.later(Duration::minutes(11));
    w.gw.sweep().await.unwrap();
    assert_eq!(
        w.gw.approval(&w.tenant, &small).await.unwrap().status,
        ApprovalStatus::Expired,
        "a 10m window"
    );
    assert_eq!(w.gw.approval(&w.tenant, &big).await.unwrap().status, ApprovalStatus::Pending, "a 4h window");
    t.later(Duration::hours(4));
    w.gw.sweep().await.unwrap();
    let a = w.gw.approval(&w.tenant, &big).await.unwrap();
    assert_eq!(a.status, ApprovalStatus::Expired);
    assert_eq!(a.quorum.progress(), "1 of 2, approved by carol");
    assert_eq!(w.gw.budget(&w.tenant, &t.agent.profile).await.unwrap().totals.pending, Money::ZERO);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn escalation_fires_once_at_its_time_and_lets_its_group_stand_in() {
    let t = team().await;
    let w = &t.w;
    let id = t.park("700", Some("rent")).await;
    // Before escalation, treasury's member decides nothing.
    assert_eq!(code(w.gw.approve(&w.tenant, &id, &t.tess, None).await), "role_required");
    t.later(Duration::minutes(59));
    assert_eq!(w.gw.sweep().await.unwrap().escalated, 0);
    t.later(Duration::minutes(2));
    assert_eq!(w.gw.sweep().await.unwrap().escalated, 1);
    assert_eq!(w.gw.sweep().await.unwrap().escalated, 0, "once");
    let a = w.gw.approval(&w.tenant, &id).await.unwrap();
    assert!(a.quorum.escalated_at.is_some());
    assert_eq!(a.trail.iter().filter(|s| s.step == "escalated").count(), 1);
    let log = w.gw.log(&w.tenant, &Default::default()).await.unwrap();
    assert_eq!(
        log.iter().filter(|e| e.verdict == Some(gateway::audit::activity::Verdict::Escalated)).count(),
        1
    );
    // Now treasury stands in for finance: carol and tess release it.
    assert!(matches!(w.gw.approve(&w.tenant, &id, &t.carol, None).await.unwrap(), Decided::Waiting(_)));
    let ran = w.gw.approve(&w.tenant, &id, &t.tess, None).await.unwrap().ran().unwrap();
    assert_eq!(ran.disposition, Disposition::Executed, "{}", ran.body);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn rules_the_tenant_cannot_meet_are_refused_when_the_kit_is_saved() {
    let t = team().await;
    let w = &t.w;
    let save = |json: &str| {
        let kit = policy::Kit::from_json(json).unwrap();
        let gw = w.gw.clone();
        let tenant = w.tenant.clone();
        async move { gw.save_kit(&tenant, kit, None, "test").await.map(|_| ()).unwrap_err() }
    };
    let rule = |r: &str| {
        format!(r#"{{"name":"K","primitives":["cards"],"limits":{{"approve":{{"rules":[{r}]}}}}}}"#)
    };
    // Four people may decide: owner, approver, carol (approver roles) and fiona (named).
    let e = save(&rule(r#"{"above":"1","approvers":5,"role":"finance"}"#)).await;
    assert_eq!(e.code(), "approval_rule_unmeetable");
    assert!(e.to_string().contains("limits.approve.rules[0].approvers"), "{e}");
    assert_eq!(save(&rule(r#"{"above":"1","group":"payroll"}"#)).await.code(), "unknown_group");
    w.gw.create_group(&w.tenant, "payroll", "test").await.unwrap();
    assert_eq!(save(&rule(r#"{"above":"1","group":"payroll"}"#)).await.code(), "approval_rule_unmeetable");
    // A group a kit names stays while it does.
    assert_eq!(w.gw.delete_group(&w.tenant, "treasury", "test").await.unwrap_err().code(), "group_in_use");
    w.gw.delete_group(&w.tenant, "payroll", "test").await.unwrap();
}

#[tokio::test]
async fn a_justification_is_bounded_plain_text() {
    let t = team().await;
    let long = "x".repeat(501);
    for (why, code) in [(long.as_str(), "justification_too_long"), ("bell\u{7}", "invalid_justification")] {
        let r =
            t.w.gw
                .perform_justified(
                    &t.agent.subject,
                    "cards.charge".into(),
                    json!({"amount": "40", "merchant": "acme"}),
                    None,
                    Some(why),
                )
                .await;
        assert_eq!(r.unwrap_err().code(), code);
    }
    assert_eq!(t.w.count("approvals").await, 0, "nothing was parked");
}

#[tokio::test]
async fn a_bulk_approval_racing_the_sweeper_ends_each_approval_exactly_once() {
    let t = team().await;
    let w = &t.w;
    let mut ids = Vec::new();
    for _ in 0..25 {
        ids.push(t.park("40", None).await);
    }
    t.later(Duration::minutes(8));
    for _ in 0..25 {
        ids.push(t.park("40", None).await);
    }
    // The first 25 (10m windows) are overdue; the sweeper and the bulk race for them.
    t.later(Duration::minutes(3));
    let (gw, tenant, by, all) = (w.gw.clone(), w.tenant.clone(), t.carol.clone(), ids.clone());
    let bulk = tokio::spawn(async move {
        gw.decide_many(&tenant, &all, BulkDecision::Approve, &by, Some("batch")).await
    });
    let sweeps = w.gw.sweep().await.unwrap();
    let items = bulk.await.unwrap().unwrap();
    assert_eq!(
        items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for (n, item) in items.iter().enumerate() {
        let a = w.gw.approval(&w.tenant, &item.id).await.unwrap();
        if n < 25 {
            assert!(
                !item.ok && ["approval_expired", "approval_already_decided"].contains(&item.outcome.as_str()),
                "{item:?}"
            );
            assert_eq!(a.status, ApprovalStatus::Expired);
        } else {
            assert_eq!((item.ok, item.outcome.as_str()), (true, "executed"), "{item:?}");
            assert_eq!(a.status, ApprovalStatus::Approved);
        }
    }
    assert!(sweeps.approvals_expired <= 25);
    let b = w.gw.budget(&w.tenant, &t.agent.profile).await.unwrap().totals;
    assert_eq!((b.posted, b.pending), (Money::dollars(25 * 40), Money::ZERO));
    w.assert_ledger_ok().await;
    // A bulk that names another tenant's approval, one already decided, or one twice.
    let (other, _) = w.gw.create_tenant("Other", Money::dollars(1), None).await.unwrap();
    let elsewhere =
        w.gw.decide_many(&other.id, &ids[25..26], BulkDecision::Approve, &t.carol, None).await.unwrap();
    assert_eq!((elsewhere[0].ok, elsewhere[0].outcome.as_str()), (false, "not_found"));
    let twice = vec![ids[30].clone(), ids[30].clone()];
    assert_eq!(
        w.gw.decide_many(&w.tenant, &twice, BulkDecision::Approve, &t.carol, None).await.unwrap_err().code(),
        "duplicate_approval"
    );
    let deny_without_note = w.gw.decide_many(&w.tenant, &ids[..1], BulkDecision::Deny, &t.carol, None).await;
    assert_eq!(deny_without_note.unwrap_err().code(), "reason_required");
}
