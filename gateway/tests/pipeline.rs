//! Black-box service tests of the governed pipeline, approvals, revoke, brain and the log.

mod support;

use gateway::audit::activity::{Kind, Transport};
use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
use gateway::domain::brain::{ClaimInput, Decider, Decision, ProposalStatus, WritebackInput};
use gateway::domain::calls::Disposition;
use gateway::{Error, GatewayConfig, RuntimeState};
use policy::{Money, SubjectStatus};
use serde_json::json;
use support::{World, sqlite_world, world, world_with};

const CARDS: &str = r#"{"name":"Cards","primitives":["cards","web","email","brain"],
  "limits":{"budget":{"hard_cap":"100"},"approve":{"above":"25"}}}"#;

fn approval_id(body: &gateway::domain::calls::Answer) -> String {
    match body {
        gateway::domain::calls::Answer::Verdict(env) => match env.recovery.first() {
            Some(policy::RecoveryStep::WaitForApproval { approval_id, .. }) => approval_id.clone(),
            other => panic!("a park carries an approval id first, not {other:?}"),
        },
        other => panic!("a park answers with an envelope, not {other:?}"),
    }
}

#[tokio::test]
async fn an_allowed_action_executes_posts_its_hold_and_is_logged() {
    let w = world().await;
    let a = w.agent("reader", "Default", None).await;
    let r = w.call(&a, "web.read", json!({"url": "https://example.test"})).await;
    assert_eq!(r.disposition, Disposition::Executed, "{}", r.body);
    assert_eq!(r.json()["cost"], "0.0025");
    assert!(r.json()["result"]["text"].as_str().unwrap().contains("Sandbox page"));
    let b = w.gw.budget(&w.tenant, &a.profile).await.unwrap();
    assert_eq!(b.totals.posted, Money::units_const(25));
    assert_eq!(b.totals.pending, Money::ZERO);
    let t = w.gw.tenant(&w.tenant).await.unwrap();
    assert_eq!(t.credit, Money::dollars(100).checked_sub(Money::units_const(25)).unwrap());
    let log = w.gw.log(&w.tenant, &Default::default()).await.unwrap();
    assert_eq!(log[0].kind, Kind::Action);
    assert_eq!(log[0].amount, Some(Money::units_const(25)));
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn a_hard_cap_denies_and_stops_the_runtime() {
    let w = world().await;
    w.kit(r#"{"name":"Tiny","primitives":["web"],"limits":{"budget":{"hard_cap":"0.01"}}}"#).await;
    let a = w.agent("reader", "Tiny", None).await;
    for i in 0..4 {
        assert_eq!(
            w.call(&a, "web.read", json!({"url": format!("u{i}")})).await.disposition,
            Disposition::Executed
        );
    }
    let r = w.call(&a, "web.read", json!({"url": "u5"})).await;
    assert_eq!(r.disposition, Disposition::Refused);
    assert_eq!(r.json()["reason"], "budget_exceeded");
    let p = w.gw.profile(&w.tenant, &a.profile).await.unwrap();
    assert_eq!(p.runtime, RuntimeState::Stopped);
    assert_eq!(p.runtime_reason.as_deref(), Some("budget_exhausted"));
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn a_saved_kit_governs_the_next_call_of_an_agent_already_acting() {
    let w = world().await;
    w.kit(r#"{"name":"Reader","primitives":["web"],"limits":{"budget":{"hard_cap":"10"}}}"#).await;
    let a = w.agent("reader", "Reader", None).await;
    let read = json!({"url": "https://example.test"});
    assert_eq!(w.call(&a, "web.read", read.clone()).await.disposition, Disposition::Executed);
    let kit = w.gw.current_kit(&w.tenant, "Reader").await.unwrap().kit;
    let mut lower = kit.clone();
    lower.limits.budget.hard_cap = Some(Money::units_const(25));
    w.gw.save_kit(&w.tenant, lower, Some(kit.version), "admin").await.unwrap();
    let r = w.call(&a, "web.read", read).await;
    assert_eq!((r.disposition, r.json()["reason"].clone()), (Disposition::Refused, json!("budget_exceeded")));
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn bad_input_is_refused_before_any_write() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    let before = (w.count("holds").await, w.count("activity").await, w.count("ledger_entries").await);
    let cases = [
        ("warp.drive", json!({}), "unknown_action"),
        ("cards.charge", json!({"amount": "1.00001", "merchant": "acme"}), "invalid_amount"),
        ("cards.charge", json!({"amount": "-3"}), "invalid_amount"),
        ("cards.charge", json!({"amount": 2.5}), "invalid_amount"),
        ("web.read", json!({"blob": "x".repeat(20_000)}), "args_too_large"),
        ("web.read", json!(["not", "an", "object"]), "invalid_args"),
    ];
    for (action, args, code) in cases {
        let err = w.call_idem(&a, action, args, None).await.unwrap_err();
        assert_eq!(err.code(), code, "{action}");
    }
    let err =
        w.gw.perform(gateway::domain::calls::ActionCall {
            token: "nv_bad".into(),
            action: "web.read".into(),
            args: json!({}),
            idempotency_key: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unauthenticated { .. }));
    assert_eq!(before, (w.count("holds").await, w.count("activity").await, w.count("ledger_entries").await));
}

#[tokio::test]
async fn idempotency_returns_the_first_result_without_a_second_effect() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let args = json!({"amount": "5.00", "merchant": "acme"});
    let first = w.call_idem(&a, "cards.charge", args.clone(), Some("k1")).await.unwrap();
    let second = w.call_idem(&a, "cards.charge", args.clone(), Some("k1")).await.unwrap();
    assert_eq!(first.disposition, Disposition::Executed);
    assert!(second.replayed);
    assert_eq!(first.body, second.body);
    assert_eq!(w.gw.sandbox().calls(), 1);
    assert_eq!(w.gw.budget(&w.tenant, &a.profile).await.unwrap().totals.posted, Money::dollars(5));
    let err = w
        .call_idem(&a, "cards.charge", json!({"amount": "6.00", "merchant": "acme"}), Some("k1"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_key_reused");
    w.assert_ledger_ok().await;
}

/// A stored answer that does not read back (the database was changed outside the gateway) is
/// the internal `corrupt_row` error when the key is sent again, not an answer with a null
/// body, and nothing runs a second time.
#[tokio::test]
async fn a_corrupt_stored_answer_is_an_error_on_replay_not_a_null_body() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let args = json!({"amount": "5.00", "merchant": "acme"});
    w.call_idem(&a, "cards.charge", args.clone(), Some("k1")).await.unwrap();
    let sql = "UPDATE idempotency SET response = '{not json' WHERE idempotency_key = 'k1' AND status <> 0";
    assert_eq!(w.gw.store().exec(sql, &[]).await.unwrap(), 1);
    let err = w.call_idem(&a, "cards.charge", args, Some("k1")).await.unwrap_err();
    assert_eq!(err.code(), "corrupt_row", "{err}");
    assert!(err.is_internal());
    assert_eq!(w.gw.sandbox().calls(), 1);
}

#[tokio::test]
async fn a_connector_failure_is_unavailable_voids_the_hold_and_can_be_retried() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    w.gw.sandbox().fail_next(1);
    let r = w.call_idem(&a, "email.send", json!({"to": "a@x.test"}), Some("e1")).await.unwrap();
    assert_eq!(r.disposition, Disposition::Unavailable);
    assert_eq!(r.json()["retryable"], true);
    assert_eq!(r.json()["recovery"][0]["kind"], "retry_after");
    let b = w.gw.budget(&w.tenant, &a.profile).await.unwrap();
    assert_eq!((b.totals.posted, b.totals.pending), (Money::ZERO, Money::ZERO));
    let again = w.call_idem(&a, "email.send", json!({"to": "a@x.test"}), Some("e1")).await.unwrap();
    assert_eq!(again.disposition, Disposition::Executed);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn a_park_keeps_its_hold_and_approval_executes_that_exact_call_once() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let args = json!({"amount": "48.00", "merchant": "acme"});
    let r = w.call(&a, "cards.charge", args.clone()).await;
    assert_eq!(r.disposition, Disposition::Parked);
    assert_eq!(r.json()["recovery"][0]["on_expiry"], "deny");
    let id = approval_id(&r.body);
    assert_eq!(w.gw.budget(&w.tenant, &a.profile).await.unwrap().totals.pending, Money::dollars(48));

    // The owner of the requesting profile may not decide.
    let err = w.gw.approve(&w.tenant, &id, &w.owner, None).await.unwrap_err();
    assert_eq!(err.code(), "requester_cannot_decide");

    let done = w.gw.approve(&w.tenant, &id, &w.approver, Some("ok")).await.unwrap().ran().unwrap();
    assert_eq!(done.disposition, Disposition::Executed);
    // The result is for the bound arguments: the sandbox charge id is derived from them.
    let again = w
        .call(
            &w.agent("buyer2", "Cards", None).await,
            "cards.charge",
            json!({"amount": "5.00", "merchant": "acme"}),
        )
        .await;
    assert_ne!(done.json()["result"]["charge_id"], again.json()["result"]["charge_id"]);
    let approval = w.gw.approval(&w.tenant, &id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Approved);
    assert_eq!(approval.args, args);
    let steps: Vec<&str> = approval.trail.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, ["requested", "approved", "executed"]);
    let b = w.gw.budget(&w.tenant, &a.profile).await.unwrap();
    assert_eq!((b.totals.posted, b.totals.pending), (Money::dollars(48), Money::ZERO));

    // Exactly once: a second approval of the same id is refused and nothing runs again.
    let calls = w.gw.sandbox().calls();
    assert_eq!(
        w.gw.approve(&w.tenant, &id, &w.approver, None).await.unwrap_err().code(),
        "approval_already_decided"
    );
    assert_eq!(w.gw.sandbox().calls(), calls);
    // Approval is not permission: the same call again parks again.
    let r2 = w.call(&a, "cards.charge", args).await;
    assert_eq!(r2.disposition, Disposition::Parked);
    assert_ne!(approval_id(&r2.body), id);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn deny_needs_a_reason_and_voids_the_hold() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let id = approval_id(&w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await.body);
    assert_eq!(w.gw.deny(&w.tenant, &id, &w.approver, "  ").await.unwrap_err().code(), "reason_required");
    // The gateway checks the decider's roles itself, whichever transport asks: finance reads
    // the inbox but decides nothing.
    let finance =
        gateway::domain::principal::Human { roles: vec![gateway::Role::Finance], ..w.approver.clone() };
    assert_eq!(w.gw.deny(&w.tenant, &id, &finance, "no").await.unwrap_err().code(), "role_required");
    assert_eq!(w.gw.approve(&w.tenant, &id, &finance, None).await.unwrap_err().code(), "role_required");
    let denied = w.gw.deny(&w.tenant, &id, &w.approver, "not this month").await.unwrap();
    assert_eq!(denied.status, ApprovalStatus::Denied);
    assert_eq!(denied.decision_reason.as_deref(), Some("not this month"));
    assert_eq!(w.gw.budget(&w.tenant, &a.profile).await.unwrap().totals.pending, Money::ZERO);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn expiry_turns_into_a_deny_and_voids_the_hold_with_no_traffic() {
    let w = world_with(GatewayConfig { approval_ttl_secs: 0, ..Default::default() }).await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let id = approval_id(&w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await.body);
    let _sweeper = w.gw.start_sweeper();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let ap = w.gw.approval(&w.tenant, &id).await.unwrap();
        if ap.status == ApprovalStatus::Expired {
            assert_eq!(ap.trail.last().unwrap().step, "expired");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the sweeper did not expire the approval");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let holds: Vec<(String,)> = w.gw.store().all("SELECT status FROM holds", &[]).await.unwrap();
    assert_eq!(holds, [("expired".to_string(),)]);
    assert_eq!(
        w.gw.approve(&w.tenant, &id, &w.approver, None).await.unwrap_err().code(),
        "approval_already_decided"
    );
    w.assert_ledger_ok().await;
}

/// A backlog larger than one sweep job's batch (a sweeper that could not run for a while, or
/// a start after downtime) is drained by one `sweep`, not one batch a tick.
#[tokio::test]
async fn one_sweep_drains_a_backlog_larger_than_a_batch() {
    let w = world_with(GatewayConfig { approval_ttl_secs: 0, ..Default::default() }).await;
    w.kit(r#"{"name":"Park","primitives":["web"],"limits":{"approve":{"always":["web.read"]}}}"#).await;
    let a = w.agent("reader", "Park", None).await;
    let n = gateway::domain::approvals::SWEEP_BATCH + 37;
    let calls = (0..n).map(|i| w.call(&a, "web.read", json!({ "url": format!("https://x.test/{i}") })));
    for r in futures_util::future::join_all(calls).await {
        assert_eq!(r.disposition, Disposition::Parked);
    }
    let report = w.gw.sweep().await.unwrap();
    assert_eq!(report.approvals_expired, n, "every due approval expired in one sweep");
    let (pending,): (i64,) =
        w.gw.store().one("SELECT COUNT(*) FROM holds WHERE status = 'pending'", &[]).await.unwrap();
    assert_eq!(pending, 0);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn revoke_cascades_to_sub_agents_their_keys_and_approvals() {
    let w = world().await;
    w.kit(CARDS).await;
    let parent = w.agent("parent", "Cards", None).await;
    let child = w.agent("child", "Cards", Some(&parent.profile)).await;
    let grandchild = w.agent("grandchild", "Cards", Some(&child.profile)).await;
    let other = w.agent("other", "Cards", None).await;
    let id = approval_id(
        &w.call(&grandchild, "cards.charge", json!({"amount": "40", "merchant": "acme"})).await.body,
    );

    let preview = w.gw.revoke_preview(&w.tenant, &child.profile).await.unwrap();
    assert_eq!(preview.profiles, [child.profile.clone(), grandchild.profile.clone()]);
    assert_eq!(preview.approvals_denied, std::slice::from_ref(&id));
    // A revoke confirmed for a cascade of another size changes nothing.
    let stale = w.gw.revoke_profile(&w.tenant, &child.profile, "owner", Some(1)).await.unwrap_err();
    assert_eq!(stale.code(), "cascade_changed", "{stale}");
    assert_eq!(w.gw.profile(&w.tenant, &child.profile).await.unwrap().status, SubjectStatus::Active);
    assert_eq!(w.gw.approval(&w.tenant, &id).await.unwrap().status, ApprovalStatus::Pending);
    let report = w.gw.revoke_profile(&w.tenant, &child.profile, "owner", Some(2)).await.unwrap();
    assert_eq!(report, preview);

    for a in [&child, &grandchild] {
        let p = w.gw.profile(&w.tenant, &a.profile).await.unwrap();
        assert_eq!((p.status, p.runtime), (SubjectStatus::Revoked, RuntimeState::Stopped));
        // Reads are refused too.
        let r = w.call(a, "web.read", json!({"url": "x"})).await;
        assert_eq!(r.json()["reason"], "agent_profile_revoked");
    }
    assert_eq!(w.gw.approval(&w.tenant, &id).await.unwrap().status, ApprovalStatus::Denied);
    assert_eq!(w.call(&parent, "web.read", json!({"url": "x"})).await.disposition, Disposition::Executed);
    assert_eq!(w.call(&other, "web.read", json!({"url": "x"})).await.disposition, Disposition::Executed);
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn sub_agents_spend_from_the_parents_budget() {
    let w = world().await;
    w.kit(r#"{"name":"Pool","primitives":["cards"],"limits":{"budget":{"hard_cap":"50"}}}"#).await;
    let parent = w.agent("parent", "Pool", None).await;
    let child = w.agent("child", "Pool", Some(&parent.profile)).await;
    assert_eq!(
        w.call(&child, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await.disposition,
        Disposition::Executed
    );
    let r = w.call(&parent, "cards.charge", json!({"amount": "25", "merchant": "acme"})).await;
    assert_eq!(r.json()["reason"], "budget_exceeded", "{}", r.body);
    assert_eq!(
        w.call(&parent, "cards.charge", json!({"amount": "20", "merchant": "acme"})).await.disposition,
        Disposition::Executed
    );
    let r = w.call(&child, "cards.charge", json!({"amount": "0.01", "merchant": "acme"})).await;
    assert_eq!(r.json()["reason"], "budget_exceeded");
    let pb = w.gw.budget(&w.tenant, &parent.profile).await.unwrap();
    assert_eq!(pb.totals.posted, Money::dollars(50));
    let cb = w.gw.budget(&w.tenant, &child.profile).await.unwrap();
    assert_eq!(cb.totals.posted, Money::dollars(30));
    assert_eq!(cb.pools[0].1.posted, Money::dollars(50));
    w.assert_ledger_ok().await;
}

#[tokio::test]
async fn repeated_identical_refusals_escalate_on_the_third() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    for n in 1..=3 {
        let r = w.call(&a, "brain.query", json!({"q": "x"})).await;
        assert_eq!(r.json()["repeat"], n);
        if n == 3 {
            assert_eq!(r.json()["recovery"].as_array().unwrap().len(), 1);
            assert_eq!(r.json()["recovery"][0]["kind"], "escalate_to_human");
        } else {
            assert_eq!(r.json()["recovery"][0]["kind"], "request_capability");
        }
    }
    // A different argument digest counts separately.
    assert_eq!(w.call(&a, "brain.query", json!({"q": "y"})).await.json()["repeat"], 1);
}

#[tokio::test]
async fn the_audit_chain_detects_an_edited_row() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    for i in 0..3 {
        w.call(&a, "web.read", json!({"url": format!("u{i}")})).await;
    }
    let ok = w.gw.verify_log(&w.tenant).await.unwrap();
    assert!(ok.ok && ok.entries >= 4, "{ok:?}");
    let (victim,): (i64,) =
        w.gw.store()
            .one("SELECT seq FROM activity WHERE kind = 'action' ORDER BY seq LIMIT 1 OFFSET 1", &[])
            .await
            .unwrap();
    w.gw.store().exec("UPDATE activity SET amount_units = 1 WHERE seq = ?", &[&victim]).await.unwrap();
    let broken = w.gw.verify_log(&w.tenant).await.unwrap();
    assert!(!broken.ok);
    assert_eq!(broken.first_broken, Some(victim));
}

/// The transport each entry records is part of what its hash covers.
#[tokio::test]
async fn an_entrys_transport_is_recorded_and_covered_by_the_chain() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    let mut over_mcp = a.subject.clone();
    over_mcp.via = gateway::audit::activity::Transport::Mcp;
    w.call(&a, "web.read", json!({"url": "u-http"})).await;
    let r = w.gw.perform_as(&over_mcp, "web.read".into(), json!({"url": "u-mcp"}), None).await.unwrap();
    assert_eq!(r.disposition, Disposition::Executed, "{}", r.body);
    let log = w.gw.log(&w.tenant, &Default::default()).await.unwrap();
    let actions: Vec<_> = log.iter().filter(|e| e.kind == Kind::Action).map(|e| e.transport).collect();
    assert_eq!(actions, [Some(Transport::Mcp), Some(Transport::Http)]);
    let mcp_seq = log.iter().find(|e| e.transport == Some(Transport::Mcp)).unwrap().seq;
    assert!(w.gw.verify_log(&w.tenant).await.unwrap().ok);
    w.gw.store().exec("UPDATE activity SET transport = 'http' WHERE seq = ?", &[&mcp_seq]).await.unwrap();
    let broken = w.gw.verify_log(&w.tenant).await.unwrap();
    assert_eq!((broken.ok, broken.first_broken), (false, Some(mcp_seq)));
}

#[tokio::test]
async fn brain_writebacks_become_proposals_and_decisions_keep_a_trail() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("scribe", "Cards", None).await;
    let wb =
        w.gw.submit_writeback(
            &a.subject,
            WritebackInput {
                run_id: "run-1".into(),
                source: "meeting notes".into(),
                claims: vec![
                    ClaimInput { object_type: "fact".into(), content: json!({"text": "Acme pays net 30"}) },
                    ClaimInput {
                        object_type: "preference".into(),
                        content: json!({"text": "CFO prefers email"}),
                    },
                ],
            },
        )
        .await
        .unwrap();
    assert_eq!(wb.disposition, Disposition::Executed);
    let props = w.gw.proposals(&w.tenant, &Default::default()).await.unwrap();
    assert_eq!(props.len(), 2);
    let fact = props.iter().find(|p| p.object_type == "fact").unwrap().id.clone();
    let pref = props.iter().find(|p| p.object_type == "preference").unwrap().id.clone();

    let err =
        w.gw.decide_proposal(&w.tenant, &fact, &Decider::Agent(a.subject.clone()), Decision::Accept, "")
            .await
            .unwrap_err();
    assert_eq!(err.code(), "because_required");
    let parked = w
        .gw
        .decide_proposal(&w.tenant, &fact, &Decider::Agent(a.subject.clone()), Decision::Accept, "seen twice")
        .await
        .unwrap();
    assert_eq!(parked.disposition, Disposition::Parked);
    assert!(
        w.gw.beliefs(&w.tenant, &Default::default()).await.unwrap().is_empty(),
        "an agent's accept never canonizes"
    );
    let id = approval_id(&parked.body);
    w.gw.approve(&w.tenant, &id, &w.approver, None).await.unwrap();
    let p = w.gw.proposal(&w.tenant, &fact).await.unwrap();
    assert_eq!(p.status, ProposalStatus::Accepted);
    let steps: Vec<(&str, Option<&str>)> =
        p.trail.iter().map(|s| (s.step.as_str(), s.note.as_deref())).collect();
    assert_eq!(steps, [("proposed", None), ("parked", Some("seen twice")), ("accepted", Some("seen twice"))]);
    let beliefs = w.gw.beliefs(&w.tenant, &Default::default()).await.unwrap();
    assert_eq!(beliefs.len(), 1);
    let b = &beliefs[0];
    assert_eq!((b.proposal_id.as_str(), b.run_id.as_str()), (fact.as_str(), p.run_id.as_str()));
    assert_eq!(
        (b.accepted_by.as_deref(), b.because.as_deref()),
        (Some(w.approver.username.as_str()), Some("seen twice"))
    );
    assert_eq!(b.writeback_id, p.writeback_id);

    // Deciding a proposal is a reviewer's: the gateway checks the role whoever asks.
    let human = Decider::Human(w.approver.clone());
    let refused = w.gw.decide_proposal(&w.tenant, &pref, &human, Decision::Reject, "hearsay").await;
    assert_eq!(refused.unwrap_err().code(), "role_required");
    let reviewer =
        gateway::domain::principal::Human { roles: vec![gateway::Role::Reviewer], ..w.approver.clone() };
    let human = Decider::Human(reviewer);
    let r = w.gw.decide_proposal(&w.tenant, &pref, &human, Decision::Reject, "hearsay").await.unwrap();
    assert_eq!(r.json()["proposal"]["status"], "rejected");
    assert_eq!(
        w.gw.decide_proposal(&w.tenant, &pref, &human, Decision::Accept, "x").await.unwrap_err().code(),
        "proposal_already_decided"
    );
    let filtered =
        w.gw.proposals(
            &w.tenant,
            &gateway::domain::brain::ProposalQuery {
                status: Some(ProposalStatus::Rejected),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(filtered.len(), 1);
    assert_eq!(w.gw.writeback(&w.tenant, &props[0].writeback_id).await.unwrap().proposals.len(), 2);
}

#[tokio::test]
async fn brain_is_refused_under_a_kit_without_it() {
    let w = world().await;
    let a = w.agent("scribe", "Default", None).await;
    let r =
        w.gw.submit_writeback(
            &a.subject,
            WritebackInput {
                run_id: "r".into(),
                source: "s".into(),
                claims: vec![ClaimInput { object_type: "fact".into(), content: json!({"n": 1}) }],
            },
        )
        .await
        .unwrap();
    assert_eq!(r.disposition, Disposition::Refused);
    assert_eq!(r.json()["error"]["details"]["reason"], "primitive_disabled_by_kit");
    assert_eq!(w.count("proposals").await, 0);
}

#[tokio::test]
async fn no_read_crosses_tenants() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let id = approval_id(&w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await.body);
    let (other, _) = w.gw.create_tenant("Other", Money::ZERO, None).await.unwrap();
    let o = &other.id;
    assert!(matches!(w.gw.approval(o, &id).await, Err(Error::NotFound { .. })));
    assert!(w.gw.approvals(o, &ApprovalQuery::default()).await.unwrap().is_empty());
    assert!(matches!(w.gw.approve(o, &id, &w.approver, None).await, Err(Error::NotFound { .. })));
    assert!(matches!(w.gw.deny(o, &id, &w.approver, "x").await, Err(Error::NotFound { .. })));
    assert!(matches!(w.gw.budget(o, &a.profile).await, Err(Error::NotFound { .. })));
    assert!(matches!(w.gw.keys(o, &a.profile).await, Err(Error::NotFound { .. })));
    assert!(matches!(w.gw.revoke_preview(o, &a.profile).await, Err(Error::NotFound { .. })));
    assert!(w.gw.log(o, &Default::default()).await.unwrap().is_empty());
    assert!(w.gw.proposals(o, &Default::default()).await.unwrap().is_empty());
    assert!(w.gw.writebacks(o, None).await.unwrap().is_empty());
    assert_eq!(w.gw.verify_log(o).await.unwrap().entries, 0);
}

#[tokio::test]
async fn keys_rotate_with_a_grace_period_and_revoke() {
    let w: World = world().await;
    let a = w.agent("bot", "Default", None).await;
    let (_, fresh) =
        w.gw.rotate_key(&w.tenant, &a.profile, &a.subject.key, Some(3600), "owner").await.unwrap();
    assert!(
        w.gw.authenticate(&a.token).await.unwrap().is_some(),
        "the old key works during the grace period"
    );
    assert!(w.gw.authenticate(&fresh.token).await.unwrap().is_some());
    let (_, newer) = w.gw.rotate_key(&w.tenant, &a.profile, &fresh.id, None, "owner").await.unwrap();
    assert!(
        w.gw.authenticate(&fresh.token).await.unwrap().is_none(),
        "without grace the old key stops at once"
    );
    w.gw.revoke_key(&w.tenant, &a.profile, &newer.id, "owner").await.unwrap();
    assert!(w.gw.authenticate(&newer.token).await.unwrap().is_none());
    let keys = w.gw.keys(&w.tenant, &a.profile).await.unwrap();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| !k.prefix.is_empty()));
}

/// Per-profile reads join the batch-filled index below its mark with the newest rows above
/// it; paging across the mark must neither skip nor repeat an entry.
#[tokio::test]
async fn per_profile_pages_are_whole_across_the_index_mark() {
    use gateway::audit::activity::LogQuery;
    use gateway::domain::ledger::LedgerQuery;
    let w = world().await;
    let a = w.agent("alpha", "Default", None).await;
    let b = w.agent("beta", "Default", None).await;
    for round in 0..3 {
        for i in 0..5 {
            w.call(&a, "web.read", json!({"url": format!("a{round}-{i}")})).await;
            w.call(&b, "web.read", json!({"url": format!("b{round}-{i}")})).await;
        }
        // Two rounds indexed, the last one not yet.
        if round < 2 {
            w.gw.index_recent().await.unwrap();
        }
    }
    for p in [&a.profile, &b.profile] {
        let want: Vec<(i64,)> =
            w.gw.store()
                .all("SELECT seq FROM activity WHERE profile_id = ? ORDER BY seq DESC", &[p])
                .await
                .unwrap();
        let want: Vec<i64> = want.into_iter().map(|(s,)| s).collect();
        assert!(want.len() >= 15, "{} entries", want.len());
        let mut got = Vec::new();
        let mut before = None;
        loop {
            let q = LogQuery { profile: Some(p.clone()), before, limit: Some(4), ..Default::default() };
            let page = w.gw.log(&w.tenant, &q).await.unwrap();
            assert!(page.iter().all(|e| e.profile_id.as_ref() == Some(p)));
            let Some(last) = page.last() else { break };
            before = Some(last.seq);
            got.extend(page.iter().map(|e| e.seq));
        }
        assert_eq!(got, want, "newest-first pages");
        let q =
            LogQuery { profile: Some(p.clone()), after: Some(want[9]), limit: Some(3), ..Default::default() };
        let asc: Vec<i64> = w.gw.log(&w.tenant, &q).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(asc, vec![want[8], want[7], want[6]], "oldest-first after a cursor");

        let want: Vec<(i64,)> =
            w.gw.store()
                .all("SELECT seq FROM ledger_entries WHERE account_id = ? ORDER BY seq", &[p])
                .await
                .unwrap();
        let want: Vec<i64> = want.into_iter().map(|(s,)| s).collect();
        assert_eq!(want.len(), 15, "one post entry per action settled as it was decided");
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let q = LedgerQuery { after, limit: Some(7), ..Default::default() };
            let page = w.gw.ledger_entries(&w.tenant, p, &q, 1000).await.unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.seq);
            got.extend(page.iter().map(|e| e.seq));
        }
        assert_eq!(got, want, "ledger pages");

        // Daily sums: the indexed days plus the newest entries add up to the running total.
        let since = chrono::Utc::now().date_naive() - chrono::Days::new(1);
        let days = w.gw.daily_spend(&w.tenant, p, since).await.unwrap();
        let sum = days.iter().fold(Money::ZERO, |acc, (_, m)| acc.checked_add(*m).unwrap());
        assert_eq!(sum, w.gw.budget(&w.tenant, p).await.unwrap().totals.posted, "{days:?}");
        w.gw.index_recent().await.unwrap();
        assert_eq!(w.gw.daily_spend(&w.tenant, p, since).await.unwrap(), days, "indexing moves no money");
    }
}

#[tokio::test]
async fn a_request_key_is_claimed_once_replayed_and_released_on_failure() {
    use gateway::domain::idempotency::{Claim, Stored};
    let w = world().await;
    let gw = &w.gw;
    assert_eq!(gw.claim_request("cred", "k", "d1").await.unwrap(), Claim::New);
    assert_eq!(gw.claim_request("cred", "k", "d1").await.unwrap(), Claim::InProgress);
    assert_eq!(gw.claim_request("cred", "k", "d2").await.unwrap(), Claim::Mismatch);
    assert_eq!(gw.claim_request("other-cred", "k", "d2").await.unwrap(), Claim::New, "scopes never share");
    let stored = Stored { status: 201, headers: vec![("etag".into(), "\"3\"".into())], body: b"{}".to_vec() };
    gw.finish_request("cred", "k", stored.clone()).await.unwrap();
    assert_eq!(gw.claim_request("cred", "k", "d1").await.unwrap(), Claim::Replay(stored));
    // A failed (5xx) request lets go of its claim, so the resend runs.
    gw.release_request("other-cred", "k").await.unwrap();
    assert_eq!(gw.claim_request("other-cred", "k", "d2").await.unwrap(), Claim::New);
}

/// A stored request answer whose status or headers do not read back is `corrupt_row` on
/// replay, not a 500 with no headers.
#[tokio::test]
async fn a_corrupt_stored_request_answer_is_an_error_not_a_default() {
    use gateway::domain::idempotency::Stored;
    let w = world().await;
    let stored = Stored { status: 201, headers: vec![("etag".into(), "\"3\"".into())], body: b"{}".to_vec() };
    for (i, set) in ["headers = '{not json'", "status = 70000"].into_iter().enumerate() {
        let key = format!("k{i}");
        w.gw.claim_request("cred", &key, "d").await.unwrap();
        w.gw.finish_request("cred", &key, stored.clone()).await.unwrap();
        let sql = format!("UPDATE request_idempotency SET {set} WHERE idem_key = '{key}'");
        assert_eq!(w.gw.store().exec(&sql, &[]).await.unwrap(), 1);
        let err = w.gw.claim_request("cred", &key, "d").await.unwrap_err();
        assert_eq!(err.code(), "corrupt_row", "{set}: {err}");
    }
}

/// A webhook endpoint whose stored events or format do not read back is `corrupt_row` when
/// it is listed and when an event is queued for it, never an endpoint that wants nothing or a
/// silent change of format; the event's change is not half-written.
#[tokio::test]
async fn a_corrupt_webhook_endpoint_is_an_error_not_an_empty_subscription() {
    use gateway::delivery::webhooks::{EndpointSpec, Format};
    let egress_allow = gateway::delivery::egress::Allowance::loopback();
    let master_key = Some(gateway::domain::vault::MasterKey::generate());
    let w = world_with(GatewayConfig { egress_allow, master_key, ..Default::default() }).await;
    let spec = EndpointSpec {
        url: "http://127.0.0.1:9/hook".into(),
        events: vec!["profile.revoked".into()],
        format: Format::Slack,
    };
    w.gw.create_webhook(&w.tenant, spec, "owner", Transport::Console).await.unwrap();
    let a = w.agent("bot", "Default", None).await;
    for set in ["events = 'profile.revoked'", "format = 'teams'"] {
        let sql = format!("UPDATE webhook_endpoints SET {set}");
        assert_eq!(w.gw.store().exec(&sql, &[]).await.unwrap(), 1);
        let err = w.gw.webhooks(&w.tenant).await.unwrap_err();
        assert_eq!(err.code(), "corrupt_row", "{set}: {err}");
        let sql = "UPDATE webhook_endpoints SET events = '[\"profile.revoked\"]', format = 'slack'";
        w.gw.store().exec(sql, &[]).await.unwrap();
    }
    w.gw.store().exec("UPDATE webhook_endpoints SET events = 'profile.revoked'", &[]).await.unwrap();
    let err = w.gw.revoke_profile(&w.tenant, &a.profile, "owner", None).await.unwrap_err();
    assert_eq!(err.code(), "corrupt_row", "{err}");
    let profile = w.gw.profile(&w.tenant, &a.profile).await.unwrap();
    assert_eq!(profile.status, SubjectStatus::Active, "the revoke is not half-written");
}

/// An index database from before daily sums existed (its marks advanced, its sums empty) is
/// rebuilt when the gateway opens, so the spend chart never silently misses history.
#[tokio::test]
async fn an_index_without_daily_sums_is_rebuilt_when_the_gateway_opens() {
    let w = sqlite_world().await;
    let a = w.agent("reader", "Default", None).await;
    for i in 0..3 {
        w.call(&a, "web.read", json!({"url": format!("u{i}")})).await;
    }
    w.gw.index_recent().await.unwrap();
    w.gw.store().exec("DELETE FROM idx.spend_by_day", &[]).await.unwrap();
    let since = chrono::Utc::now().date_naive() - chrono::Days::new(1);
    let posted = w.gw.budget(&w.tenant, &a.profile).await.unwrap().totals.posted;
    let stale = w.gw.daily_spend(&w.tenant, &a.profile, since).await.unwrap();
    assert!(stale.iter().all(|(_, m)| *m < posted), "the emptied sums miss the indexed spend: {stale:?}");

    let reopened =
        gateway::Gateway::open(&format!("sqlite://{}/t.db", w._dir.path().display())).await.unwrap();
    reopened.index_recent().await.unwrap();
    let days = reopened.daily_spend(&w.tenant, &a.profile, since).await.unwrap();
    let sum = days.iter().fold(Money::ZERO, |acc, (_, m)| acc.checked_add(*m).unwrap());
    assert_eq!(sum, posted, "{days:?}");
}

/// A ledger period reads exactly the entries created in it, oldest first, page by page:
/// whether the period's entries are indexed or still above the index mark, whatever days they
/// fall on, and even when the clock once stepped back between two entries (the per-day seq
/// bounds that keep period reads short must never cut an entry off).
#[tokio::test]
async fn ledger_periods_read_exactly_their_entries_across_days_and_the_index_mark() {
    use chrono::{Days, TimeZone, Utc};
    use gateway::domain::ledger::LedgerQuery;
    let w = world().await;
    let a = w.agent("days", "Default", None).await;
    let today = Utc::now().date_naive();
    let midnight =
        |days_ago: u64| Utc.from_utc_datetime(&(today - Days::new(days_ago)).and_hms_opt(0, 0, 0).unwrap());
    // Five rounds of calls, each backdated to its own day (the fourth steps back a day), the
    // first three indexed and the last two above the mark.
    let mut last = 0i64;
    for (round, days_ago) in [6u64, 5, 3, 4, 1].into_iter().enumerate() {
        for i in 0..4 {
            w.call(&a, "web.read", json!({"url": format!("d{round}-{i}")})).await;
        }
        let at = (midnight(days_ago) + chrono::Duration::hours(12)).to_rfc3339();
        let moved: Vec<(i64,)> =
            w.gw.store()
                .all(
                    "UPDATE ledger_entries SET created_at = ? WHERE account_id = ? AND seq > ? RETURNING seq",
                    &[&at, &a.profile, &last],
                )
                .await
                .unwrap();
        last = moved.into_iter().map(|(s,)| s).max().unwrap_or(last);
        if round < 3 {
            w.gw.index_recent().await.unwrap();
        }
    }
    let periods = [
        (None, None),
        (Some(5), None),
        (Some(4), Some(2)),
        (None, Some(4)),
        (Some(3), Some(3)),
        (Some(2), None),
        (Some(9), Some(7)),
        (Some(30), None),
    ];
    for (from, to) in periods {
        let (from, to) = (from.map(midnight), to.map(midnight));
        let (from_s, to_s) = (from.map(|t| t.to_rfc3339()), to.map(|t| t.to_rfc3339()));
        let want: Vec<(i64,)> =
            w.gw.store()
                .all(
                    "SELECT seq FROM ledger_entries WHERE account_id = ? AND (? IS NULL OR created_at >= ?) \
                 AND (? IS NULL OR created_at < ?) ORDER BY seq",
                    &[&a.profile, &from_s, &from_s, &to_s, &to_s],
                )
                .await
                .unwrap();
        let want: Vec<i64> = want.into_iter().map(|(s,)| s).collect();
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let q = LedgerQuery { from, to, after, limit: Some(3) };
            let page = w.gw.ledger_entries(&w.tenant, &a.profile, &q, 1000).await.unwrap();
            let Some(end) = page.last() else { break };
            after = Some(end.seq);
            got.extend(page.iter().map(|e| e.seq));
        }
        assert_eq!(got, want, "period {from:?} .. {to:?}");
        if (from, to) == (Some(midnight(4)), Some(midnight(2))) {
            assert_eq!(got.len(), 8, "the rounds backdated four and three days");
        }
        if (from, to) == (None, None) {
            assert_eq!(got.len(), 20, "one entry per call");
        }
    }
}

/// An index database from before per-day ledger bounds existed is rebuilt when the gateway
/// opens, so a period read never skips the entries it indexed earlier.
#[tokio::test]
async fn an_index_without_ledger_days_is_rebuilt_when_the_gateway_opens() {
    use gateway::domain::ledger::LedgerQuery;
    let w = sqlite_world().await;
    let a = w.agent("older-index", "Default", None).await;
    for i in 0..3 {
        w.call(&a, "web.read", json!({"url": format!("u{i}")})).await;
    }
    w.gw.index_recent().await.unwrap();
    w.gw.store().exec("DELETE FROM idx.ledger_days", &[]).await.unwrap();
    let q = LedgerQuery { from: Some(chrono::Utc::now() - chrono::Duration::days(1)), ..Default::default() };
    assert!(
        w.gw.ledger_entries(&w.tenant, &a.profile, &q, 100).await.unwrap().is_empty(),
        "without its days the index cannot bound the period"
    );
    let reopened =
        gateway::Gateway::open(&format!("sqlite://{}/t.db", w._dir.path().display())).await.unwrap();
    reopened.index_recent().await.unwrap();
    assert_eq!(reopened.ledger_entries(&w.tenant, &a.profile, &q, 100).await.unwrap().len(), 3);
}

/// A stored value the gateway did not write (an approval's arguments edited by hand) reads as
/// one internal error naming it, never as a default such as `null` that a human would approve.
#[tokio::test]
async fn a_corrupt_row_is_an_error_not_a_default() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("buyer", "Cards", None).await;
    let id = approval_id(&w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await.body);
    w.gw.store().exec(r#"UPDATE approvals SET args = '{"amount": ' WHERE id = ?"#, &[&id]).await.unwrap();
    let err = w.gw.approval(&w.tenant, &id).await.unwrap_err();
    assert_eq!(err.code(), "corrupt_row");
    assert!(err.to_string().contains("approval's arguments"), "{err}");
    assert!(err.is_internal(), "a 5xx, never cached");
    // Credit beyond what money can hold reads as an error, not as no credit.
    w.gw.store().exec("UPDATE tenants SET credit_units = 9223372036854775807", &[]).await.unwrap();
    let err = w.gw.tenant(&w.tenant).await.unwrap_err();
    assert_eq!((err.code(), err.is_internal()), ("corrupt_row", true), "{err}");
}

/// An activity entry whose kind was edited to one the gateway never writes is an error on a
/// read (not a string nobody matches) and the first broken link to `verify`.
#[tokio::test]
async fn a_log_entry_of_an_unknown_kind_is_an_error_and_a_broken_link() {
    let w = world().await;
    let a = w.agent("bot", "Default", None).await;
    w.call(&a, "web.read", json!({"url": "u"})).await;
    let log = w.gw.log(&w.tenant, &Default::default()).await.unwrap();
    let seq = log.iter().find(|e| e.kind == Kind::Action).unwrap().seq;
    w.gw.store().exec("UPDATE activity SET kind = 'actoin' WHERE seq = ?", &[&seq]).await.unwrap();
    let err = w.gw.log(&w.tenant, &Default::default()).await.unwrap_err();
    assert_eq!((err.code(), err.is_internal()), ("corrupt_row", true), "{err}");
    assert!(err.to_string().contains("kind"), "{err}");
    let report = w.gw.verify_log(&w.tenant).await.unwrap();
    assert_eq!((report.ok, report.first_broken), (false, Some(seq)));
}

/// A writeback whose stored envelope, or a belief whose stored content, no longer parses
/// reads as one internal error naming it, not as `null` or a string a reader would take for
/// what the agent wrote.
#[tokio::test]
async fn a_corrupt_writeback_envelope_or_belief_is_an_error_not_a_default() {
    let w = world().await;
    w.kit(CARDS).await;
    let a = w.agent("scribe", "Cards", None).await;
    let claims =
        vec![ClaimInput { object_type: "fact".into(), content: json!({"text": "Acme pays net 30"}) }];
    let input = WritebackInput { run_id: "run-1".into(), source: "notes".into(), claims };
    w.gw.submit_writeback(&a.subject, input).await.unwrap();
    let id = w.gw.writebacks(&w.tenant, None).await.unwrap()[0].id.clone();
    w.gw.store().exec("UPDATE writebacks SET envelope = '{\"run' WHERE id = ?", &[&id]).await.unwrap();
    for err in [
        w.gw.writeback(&w.tenant, &id).await.unwrap_err(),
        w.gw.writebacks(&w.tenant, None).await.unwrap_err(),
    ] {
        assert_eq!((err.code(), err.is_internal()), ("corrupt_row", true), "{err}");
        assert!(err.to_string().contains("writeback's envelope"), "{err}");
    }

    let proposal = w.gw.proposals(&w.tenant, &Default::default()).await.unwrap()[0].id.clone();
    let reviewer =
        gateway::domain::principal::Human { roles: vec![gateway::Role::Reviewer], ..w.approver.clone() };
    let decider = Decider::Human(reviewer);
    w.gw.decide_proposal(&w.tenant, &proposal, &decider, Decision::Accept, "checked").await.unwrap();
    assert_eq!(w.gw.beliefs(&w.tenant, &Default::default()).await.unwrap().len(), 1);
    w.gw.store()
        .exec("UPDATE beliefs SET content = '{\"text' WHERE proposal_id = ?", &[&proposal])
        .await
        .unwrap();
    let err = w.gw.beliefs(&w.tenant, &Default::default()).await.unwrap_err();
    assert_eq!((err.code(), err.is_internal()), ("corrupt_row", true), "{err}");
    assert!(err.to_string().contains("belief's content"), "{err}");
}
