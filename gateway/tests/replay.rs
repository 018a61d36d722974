//! Replay and shadow (issue #35) against the gateway on the engine under test: recorded
//! decision inputs, replay under the live kit and under drafts, and shadows beside the live kit.

mod support;

use chrono::{Duration, TimeZone, Utc};
use gateway::domain::calls::{Answer, Disposition};
use gateway::domain::periods::Clock;
use gateway::ops::replay::ReplayRequest;
use gateway::{GatewayConfig, Role};
use policy::{Kit, KitVersion, Money};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use support::{World, world_with};

/// Caps, a soft cap, a daily period, an approval threshold and rule, a merchant rule and a
/// rate limit: every kind of reason the engine gives.
const SHOP: &str = r#"{"name":"Shop","primitives":["cards","web"],
  "can":[{"action":"cards.charge","effect":"allow","merchants":["acme","globex"]}],
  "limits":{"budget":{"hard_cap":"2500","soft_cap":"1800","periods":[{"every":"day","hard_cap":"400"}]},
    "approve":{"above":"90","rules":[{"above":"150","approvers":1,"window":"30m"}]},
    "rate":[{"action":"cards.*","calls":6,"per":"minute"}]}}"#;

fn dollars(s: &str) -> Money {
    Money::parse(s).unwrap()
}

fn all_of(kit: Option<Kit>) -> ReplayRequest {
    ReplayRequest {
        draft: kit,
        version: None,
        from: None,
        to: None,
        days: None,
        after: None,
        limit: 500,
        profile: None,
    }
}

fn approval_id(body: &Answer) -> String {
    match body {
        Answer::Verdict(env) => match env.recovery.first() {
            Some(policy::RecoveryStep::WaitForApproval { approval_id, .. }) => approval_id.clone(),
            other => panic!("a park carries an approval id first, not {other:?}"),
        },
        other => panic!("a park answers with an envelope, not {other:?}"),
    }
}

/// Random traffic of two agents over several days: charges small and large, to allowed and
/// refused merchants, bursts past the rate limit, web reads; parks approved, denied or left
/// to expire.
/// A sub-agent's own kit, wider than its parent's `Shop`: every merchant, higher caps and
/// limits of its own (a day cap and a rate limit on the same pattern and unit as its
/// parent's). Its calls are decided under it narrowed by `Shop`.
const HELPER: &str = r#"{"name":"Helper","primitives":["cards","web"],
  "limits":{"budget":{"hard_cap":"900","periods":[{"every":"day","hard_cap":"250"}]},
    "rate":[{"action":"cards.*","calls":4,"per":"minute"}]}}"#;

async fn random_traffic(w: &World, clock: &Clock, seed: u64) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = w.agent("a", "Shop", None).await;
    let child = w.agent("c", "Helper", Some(&a.profile)).await;
    let agents = [a, w.agent("b", "Shop", None).await, child];
    let mut calls = 0;
    for _ in 0..120 {
        let a = &agents[rng.gen_range(0..3)];
        let r = if rng.gen_bool(0.15) {
            w.call(a, "web.read", json!({"url": "https://example.test"})).await
        } else {
            let merchant = ["acme", "globex", "initech"][rng.gen_range(0..3)];
            let amount = [5, 20, 60, 95, 160, 300][rng.gen_range(0..6)];
            w.call(a, "cards.charge", json!({"amount": amount.to_string(), "merchant": merchant})).await
        };
        calls += 1;
        if r.disposition == Disposition::Parked {
            let id = approval_id(&r.body);
            match rng.gen_range(0..3) {
                0 => drop(w.gw.approve(&w.tenant, &id, &w.approver, None).await.unwrap()),
                1 => drop(w.gw.deny(&w.tenant, &id, &w.approver, "not this one").await.unwrap()),
                _ => {}
            }
        }
        let step = [0, 0, 5, 30, 600, 3_600, 20_000][rng.gen_range(0..7)];
        clock.set(clock.now() + Duration::seconds(step));
        w.gw.sweep().await.unwrap();
    }
    calls
}

async fn shop_world() -> (World, Clock) {
    let clock = Clock::manual(Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap());
    let w = world_with(GatewayConfig { clock: clock.clone(), ..Default::default() }).await;
    w.kit(SHOP).await;
    w.kit(HELPER).await;
    (w, clock)
}

#[tokio::test]
async fn replaying_the_live_kit_over_random_traffic_changes_nothing() {
    for seed in 1..=3 {
        let (w, clock) = shop_world().await;
        let calls = random_traffic(&w, &clock, seed).await;
        let r = w.gw.replay(&w.tenant, "Shop", all_of(None)).await.unwrap();
        assert_eq!(r.summary.calls, calls as u64, "seed {seed}: every call under Shop, the sub-agent's too");
        assert_eq!((r.summary.changed, r.changes.len()), (0, 0), "seed {seed}: {:#?}", r.changes);
        let child = w.gw.replay(&w.tenant, "Helper", all_of(None)).await.unwrap();
        assert!(child.summary.calls > 0, "seed {seed}: the sub-agent called");
        assert_eq!(child.summary.changed, 0, "seed {seed}: {:#?}", child.changes);
        // The traffic had every kind of outcome, or the property says little.
        let verdicts: Vec<String> = w
            .gw
            .store()
            .all::<(String,)>(
                "SELECT DISTINCT kind || '/' || COALESCE(verdict, '') FROM activity WHERE inputs IS NOT NULL",
                &[],
            )
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.0)
            .collect();
        for v in ["action/allow", "refusal/deny", "park/park"] {
            assert!(verdicts.contains(&v.to_string()), "seed {seed}: no {v} in {verdicts:?}");
        }
        let log = w.gw.verify_log(&w.tenant).await.unwrap();
        assert!(log.ok, "the inputs are covered by the chain and it holds: {log:?}");
    }
}

#[tokio::test]
async fn a_lower_cap_refuses_the_calls_after_it_would_have_been_reached() {
    let (w, clock) = shop_world().await;
    let a = w.agent("a", "Shop", None).await;
    for _ in 0..10 {
        clock.set(clock.now() + Duration::seconds(61));
        let r = w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await;
        assert_eq!(r.disposition, Disposition::Executed, "{}", r.body);
    }
    let r = w.gw.replay(&w.tenant, "Shop", all_of(Some(w_draft(100)))).await.unwrap();
    // $30 each: three fit under $100, the fourth would pass it. No call alone is above $100.
    assert_eq!((r.summary.calls, r.summary.changed), (10, 7), "{:#?}", r.summary);
    assert_eq!(r.summary.money.refused, dollars("210"));
    let t = &r.summary.transitions;
    assert_eq!((t.len(), t[0].from.as_str(), t[0].to.as_str(), t[0].calls), (1, "allow", "deny", 7));
    assert!(r.changes.iter().all(|c| c.would_be.detail.as_deref() == Some("hard_cap_exceeded")));
    // Paged: three at a time, each page after the last.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = ReplayRequest { limit: 3, after, ..all_of(Some(w_draft(100))) };
        let p = w.gw.replay(&w.tenant, "Shop", page).await.unwrap();
        seen.extend(p.changes.iter().map(|c| c.seq));
        match p.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, r.changes.iter().map(|c| c.seq).collect::<Vec<_>>());
    // Replay wrote nothing.
    assert_eq!(w.gw.budget(&w.tenant, &a.profile).await.unwrap().totals.posted, dollars("300"));
}

fn w_draft(cap: i64) -> Kit {
    let mut draft = Kit::from_json(SHOP).unwrap();
    draft.limits.budget.hard_cap = Some(Money::dollars(cap));
    draft.limits.budget.soft_cap = None;
    draft
}

#[tokio::test]
async fn a_park_the_draft_refuses_stops_counting_only_until_its_human_decision() {
    let (w, clock) = shop_world().await;
    let a = w.agent("a", "Shop", None).await;
    // A $95 park, denied ten minutes later; $60 charges before and after.
    let r = w.call(&a, "cards.charge", json!({"amount": "95", "merchant": "acme"})).await;
    let id = approval_id(&r.body);
    let charge = || w.call(&a, "cards.charge", json!({"amount": "60", "merchant": "acme"}));
    assert_eq!(charge().await.disposition, Disposition::Executed);
    clock.set(clock.now() + Duration::minutes(10));
    w.gw.deny(&w.tenant, &id, &w.approver, "no").await.unwrap();
    // (A park's hold ends at its decision or its expiry, whichever is first: here the test's
    // clock is behind the wall clock the decision is stamped with, so at its expiry.)
    clock.set(clock.now() + Duration::minutes(10));
    assert_eq!(charge().await.disposition, Disposition::Executed);
    // A draft that lets the $95 run at once and caps the day at $200: the first $60 still fits
    // (95 + 60), the second does not (95 + 60 + 60), since the $95 would have run for good.
    let mut draft = Kit::from_json(SHOP).unwrap();
    draft.limits.approve.above = None;
    draft.limits.budget.periods[0].hard_cap = Some(dollars("200"));
    let r = w.gw.replay(&w.tenant, "Shop", all_of(Some(draft))).await.unwrap();
    let changed: Vec<(&str, &str)> =
        r.changes.iter().map(|c| (c.was.verdict.as_str(), c.would_be.verdict.as_str())).collect();
    assert_eq!(changed, [("park", "allow"), ("allow", "deny")], "{:#?}", r.changes);
    assert_eq!((r.summary.money.ran, r.summary.money.refused), (dollars("95"), dollars("60")));
}

#[tokio::test]
async fn a_shadow_decides_beside_the_live_kit_without_effect_then_is_promoted() {
    let (w, _clock) = shop_world().await;
    let a = w.agent("a", "Shop", None).await;
    let mut draft = Kit::from_json(SHOP).unwrap();
    draft.limits.budget.hard_cap = Some(dollars("50"));
    draft.limits.budget.soft_cap = None;
    let started = w.gw.start_shadow(&w.tenant, draft.clone(), "alice").await.unwrap();
    assert_eq!(started.based_on, 1);
    let again = w.gw.start_shadow(&w.tenant, draft.clone(), "alice").await.unwrap_err();
    assert_eq!(again.code(), "shadow_exists");

    for _ in 0..3 {
        let r = w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await;
        assert_eq!(
            r.disposition,
            Disposition::Executed,
            "a shadow deny never refuses a live call: {}",
            r.body
        );
    }
    let v = w.gw.shadow(&w.tenant, "Shop").await.unwrap();
    assert_eq!((v.totals.calls, v.totals.differed), (3, 2), "{:#?}", v.totals);
    assert_eq!(v.totals.money.refused, dollars("60"));
    assert_eq!(v.live_version, 1);
    assert!(!v.diff.changes.is_empty(), "the diff says what promoting changes");

    // Promote with a stale version: refused, shadow kept; then with the live one.
    let mark = v.shadow.after_seq;
    let stale = w.gw.promote_shadow(&w.tenant, "Shop", (KitVersion(7), mark), "alice").await.unwrap_err();
    assert_eq!(stale.code(), "kit_version_conflict");
    let other = w.gw.promote_shadow(&w.tenant, "Shop", (KitVersion(1), mark + 1), "alice").await.unwrap_err();
    assert_eq!(other.code(), "shadow_changed");
    let saved = w.gw.promote_shadow(&w.tenant, "Shop", (KitVersion(1), mark), "alice").await.unwrap();
    assert_eq!((saved.kit.version, saved.kit.limits.budget.hard_cap), (KitVersion(2), Some(dollars("50"))));
    assert_eq!(w.gw.shadow(&w.tenant, "Shop").await.unwrap_err().code(), "not_found");
    let r = w.call(&a, "cards.charge", json!({"amount": "30", "merchant": "acme"})).await;
    assert_eq!(r.disposition, Disposition::Refused, "the promoted kit governs");
    assert_eq!(w.gw.discard_shadow(&w.tenant, "Shop", "alice").await.unwrap_err().code(), "not_found");
}

#[tokio::test]
async fn bad_replays_and_shadows_are_refused_and_write_nothing() {
    let (w, _clock) = shop_world().await;
    let before = w.count("activity").await;
    let code = |r: gateway::Result<gateway::ops::replay::ReplayReport>| r.unwrap_err().code();
    let now = Utc::now();
    let long = ReplayRequest { from: Some(now - Duration::days(40)), ..all_of(None) };
    assert_eq!(code(w.gw.replay(&w.tenant, "Shop", long).await), "range_too_long");
    let future = ReplayRequest { to: Some(now + Duration::days(1)), ..all_of(None) };
    assert_eq!(code(w.gw.replay(&w.tenant, "Shop", future).await), "range_in_future");
    let backwards = ReplayRequest { from: Some(now), to: Some(now - Duration::hours(1)), ..all_of(None) };
    assert_eq!(code(w.gw.replay(&w.tenant, "Shop", backwards).await), "invalid_range");
    assert_eq!(code(w.gw.replay(&w.tenant, "Nope", all_of(None)).await), "not_found");
    let mut other = Kit::from_json(SHOP).unwrap();
    other.name = "Other".into();
    assert_eq!(code(w.gw.replay(&w.tenant, "Shop", all_of(Some(other.clone()))).await), "kit_name_mismatch");
    let mut bad = Kit::from_json(SHOP).unwrap();
    bad.limits.budget.soft_cap = Some(dollars("9000"));
    assert_eq!(code(w.gw.replay(&w.tenant, "Shop", all_of(Some(bad.clone()))).await), "invalid_kit");
    assert_eq!(w.gw.start_shadow(&w.tenant, bad, "alice").await.unwrap_err().code(), "invalid_kit");
    assert_eq!(w.gw.start_shadow(&w.tenant, other, "alice").await.unwrap_err().code(), "not_found");
    assert_eq!(w.count("activity").await, before, "nothing was written");
    assert_eq!(w.count("kit_shadows").await, 0);
    let _ = Role::Admin;
}
