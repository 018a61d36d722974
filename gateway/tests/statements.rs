//! The statements a governed action costs, counted on the engine under test, so they cannot
//! creep back up (issue #32: on PostgreSQL each one is a round trip while the tenant's locks
//! are held). The counts are process-wide, so this file holds one test and nothing else runs
//! beside it. The figures are the ones in `docs/architecture.md` (what a governed action
//! costs).

mod support;

use gateway::domain::calls::Disposition;
use gateway::store::counts::Statements;
use gateway::store::sql::Engine;
use serde_json::json;
use support::world;

const KIT: &str = r#"{"name":"Buyer","primitives":["cards","web"],
  "limits":{"budget":{"hard_cap":"1000"},"approve":{"above":"500"}}}"#;
/// The same with three period limits and a rate limit: the periods' totals and the rate
/// window's count come with the standing, in its one statement.
const PERIOD_KIT: &str = r#"{"name":"Periods","primitives":["cards","web"],
  "limits":{"budget":{"hard_cap":"1000","periods":[{"every":"day","hard_cap":"100"},
  {"every":"week","week_starts":"sunday","hard_cap":"300"},{"every":"month","hard_cap":"900"}]},
  "approve":{"above":"500"},"rate":[{"calls":100000,"per":"hour"}]}}"#;
const CALLS: u64 = 20;

/// What a call alone costs today: (statements inside its jobs, statements outside them,
/// jobs). On PostgreSQL a lone call is a batch of one, so it pays the batch's own statements
/// too (the tenant's lock, the chain head, the notification); in a batch of a tenant's calls
/// they share one read of their standing and one write (`domain/reserve/book.rs`). SQLite's single writer needs no lock or notification, and runs each
/// part of the ledger write on its own (`web.read` is priced, so it moves credit too; every
/// call moves its day's totals, and a call under a rate limit counts in its window).
fn today(action: &str, engine: Engine, rated: bool) -> (u64, u64, u64) {
    let rate = u64::from(rated);
    match (action, engine) {
        ("web.read", Engine::Sqlite) => (7 + rate, 0, 1),
        (_, Engine::Sqlite) => (6 + rate, 0, 1),
        (_, Engine::Postgres) => (5, 0, 1),
    }
}

/// Work of the gateway's own beside the calls (a key's last use, written once a minute) may
/// add a statement now and then; one more statement on every call may not.
const STRAY: u64 = CALLS / 4;

#[tokio::test]
async fn a_governed_action_costs_no_more_statements_than_it_did() {
    let engine = gateway::testing::engine_under_test();
    let w = world().await;
    w.kit(KIT).await;
    w.kit(PERIOD_KIT).await;
    for kit in ["Buyer", "Periods"] {
        let a = w.agent(&format!("buyer-{kit}"), kit, None).await;
        count(&w, &a, engine, kit == "Periods").await;
    }
}

async fn count(w: &support::World, a: &support::Agent, engine: Engine, rated: bool) {
    for (action, args) in [
        ("web.read", json!({"url": "https://example.test/"})),
        ("cards.charge", json!({"amount": "0.01", "merchant": "acme"})),
    ] {
        // The first calls fill the caches (the key, the profile's chain and kits).
        for _ in 0..3 {
            assert_eq!(w.call(a, action, args.clone()).await.disposition, Disposition::Executed);
        }
        let before = Statements::now();
        for _ in 0..CALLS {
            assert_eq!(w.call(a, action, args.clone()).await.disposition, Disposition::Executed);
        }
        let ran = Statements::now().since(before);
        let per_call = |n: u64| n as f64 / CALLS as f64;
        println!(
            "{action} on {engine:?} (rate limited: {rated}): {:.1} statements in {:.1} jobs and {:.1} outside them per call; \
             {:.1} PostgreSQL round trips",
            per_call(ran.in_jobs),
            per_call(ran.jobs),
            per_call(ran.outside_jobs),
            per_call(ran.postgres_round_trips())
        );
        let (in_jobs, outside, jobs) = today(action, engine, rated);
        assert!(ran.in_jobs <= in_jobs * CALLS + STRAY, "{action}: {ran:?} for {CALLS} calls");
        assert!(ran.outside_jobs <= outside * CALLS + STRAY, "{action}: {ran:?} for {CALLS} calls");
        assert!(ran.jobs <= jobs * CALLS + STRAY, "{action}: {ran:?} for {CALLS} calls");
    }
}
