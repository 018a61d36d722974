//! One big tenant, raced (issue #52): thousands of calls of many profiles of one tenant, with
//! lifetime caps, period caps, a soft cap, rate limits, parks and refusals mixed, sent all at
//! once on the engine under test (on PostgreSQL they meet in the tenant's batches, decided
//! against totals the batch advances in memory and written together). The same calls sent one
//! at a time on SQLite are the model: each profile's calls are alike, so how many of them each
//! answer gets does not depend on the order they arrive in, and the race must give exactly the
//! model's answers. After the race: every cap held (`check_ledger`), every rate window counted
//! each call that passed its rate check once, the chain verifies, and each call's recorded
//! inputs replay under its kit to its recorded verdict. `NAIVE_SEED=<n>` replays a run.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use gateway::GatewayConfig;
use gateway::domain::calls::{ActionResponse, Answer};
use gateway::domain::periods::Clock;
use gateway::ops::replay::ReplayRequest;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use support::{Agent, World};

/// Each kit decides on a different limit; "Mixed" on all of them at once.
const KITS: [&str; 5] = [
    r#"{"name":"Capped","primitives":["cards"],"limits":{"budget":{"hard_cap":"5"}}}"#,
    r#"{"name":"Daily","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000",
       "periods":[{"every":"day","hard_cap":"3"},{"every":"week","hard_cap":"4"}]}}}"#,
    r#"{"name":"Rated","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000"},
       "rate":[{"action":"cards.*","calls":40,"per":"hour"}]}}"#,
    r#"{"name":"Parks","primitives":["cards"],"limits":{"budget":{"hard_cap":"12"},"approve":{"above":"1"}}}"#,
    r#"{"name":"Mixed","primitives":["cards"],
       "can":[{"action":"cards.charge","effect":"allow","merchants":["acme"]}],
       "limits":{"budget":{"hard_cap":"20","soft_cap":"4",
         "periods":[{"every":"day","hard_cap":"6"},{"every":"month","hard_cap":"9"}]},
       "approve":{"above":"2"},"rate":[{"action":"cards.*","calls":30,"per":"hour"}]}}"#,
];
const PROFILES: usize = 20;

/// One profile's calls: its kit, and how many alike charges of what amount to which merchant.
#[derive(Clone, Debug)]
struct Plan {
    kit: usize,
    amount: &'static str,
    merchant: &'static str,
    calls: usize,
}

fn plans(seed: u64) -> Vec<Plan> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..PROFILES)
        .map(|i| Plan {
            kit: i % KITS.len(),
            // Each kit's profiles charge each amount: its every kind of answer comes up.
            amount: ["0.25", "0.40", "0.50", "2.50"][(i / KITS.len() + (seed % 4) as usize) % 4],
            // Agent 4's kit (Mixed) allows only acme: it is refused every call.
            merchant: if i % 7 == 4 { "initech" } else { "acme" },
            calls: rng.gen_range(50..200),
        })
        .collect()
}

fn kit_name(i: usize) -> String {
    policy::Kit::from_json(KITS[i]).unwrap().name
}

/// `w` with the kits and one agent per plan, its clock stopped.
async fn world(w: &World, plans: &[Plan]) -> Vec<Agent> {
    for kit in KITS {
        w.kit(kit).await;
    }
    let mut agents = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        agents.push(w.agent(&format!("agent-{i}"), &kit_name(p.kit), None).await);
    }
    agents
}

fn clock() -> Clock {
    Clock::manual(Utc.with_ymd_and_hms(2026, 3, 4, 9, 0, 0).unwrap())
}

/// What a call was answered: executed, or the envelope's verdict, its reason in detail and
/// the limit that decided.
fn answer(r: &ActionResponse) -> String {
    match &r.body {
        Answer::Executed(_) => "executed".into(),
        Answer::Verdict(env) => {
            let limit = env.error.details.limit.as_deref().unwrap_or("-");
            format!("{:?}:{}:{limit}", env.verdict, env.error.details.reason).to_lowercase()
        }
        other => panic!("a charge answers executed or with a verdict, not {other:?}"),
    }
}

/// How many of each profile's calls got each answer.
type Outcome = BTreeMap<usize, BTreeMap<String, usize>>;

fn tally(answers: impl IntoIterator<Item = (usize, String)>) -> Outcome {
    let mut out = Outcome::new();
    for (profile, a) in answers {
        *out.entry(profile).or_default().entry(a).or_default() += 1;
    }
    out
}

fn body(p: &Plan) -> serde_json::Value {
    json!({"amount": p.amount, "merchant": p.merchant})
}

/// The model: every call sent one after another, on SQLite.
async fn one_at_a_time(plans: &[Plan]) -> Outcome {
    let w = support::sqlite_world_with(GatewayConfig { clock: clock(), ..Default::default() }).await;
    let agents = world(&w, plans).await;
    let mut answers = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        for _ in 0..p.calls {
            answers.push((i, answer(&w.call(&agents[i], "cards.charge", body(p)).await)));
        }
    }
    tally(answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_race_of_many_profiles_gives_each_call_the_answer_it_gets_one_at_a_time() {
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("NAIVE_SEED={seed}");
    let plans = plans(seed);
    let model = one_at_a_time(&plans).await;

    let clock = clock();
    let w = Arc::new(support::world_with(GatewayConfig { clock: clock.clone(), ..Default::default() }).await);
    let agents = world(&w, &plans).await;
    let before = w.gw.store().postgres().map(|pg| pg.stats());
    let mut order: Vec<usize> = plans.iter().enumerate().flat_map(|(i, p)| vec![i; p.calls]).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x5eed));
    let calls: Vec<_> = order
        .into_iter()
        .map(|i| {
            let (w, a, b) = (w.clone(), agents[i].clone(), body(&plans[i]));
            tokio::spawn(async move { (i, answer(&w.call(&a, "cards.charge", b).await)) })
        })
        .collect();
    let mut answers = Vec::new();
    for c in calls {
        answers.push(c.await.unwrap());
    }
    let raced = tally(answers);
    if let (Some(pg), Some(before)) = (w.gw.store().postgres(), before) {
        let ran = pg.stats().since(before);
        assert!(ran.keyed_jobs > 2 * ran.transactions, "seed {seed}: the calls met in batches: {ran:?}");
    }
    assert_eq!(raced, model, "seed {seed}: the race answered as one call at a time does");
    for answer in [
        "executed",
        "park:soft_cap_crossed:limits.budget.soft_cap",
        "park:above_approval_threshold:-",
        "deny:hard_cap_exceeded:limits.budget.hard_cap",
        "deny:period_hard_cap_exceeded:limits.budget.periods[0].hard_cap",
        "deny:kit_rate_limit:limits.rate[0]",
        "deny:merchant_not_allowed:-",
    ] {
        assert!(model.values().any(|o| o.contains_key(answer)), "seed {seed}: no {answer} in {model:#?}");
    }

    w.assert_ledger_ok().await;
    assert_windows_counted(&w, &raced).await;
    let log = w.gw.verify_log(&w.tenant).await.unwrap();
    assert!(log.ok, "seed {seed}: the chain verifies: {log:?}");
    clock.set(clock.now() + Duration::minutes(1));
    for (k, _) in KITS.iter().enumerate() {
        let calls: usize = plans.iter().filter(|p| p.kit == k).map(|p| p.calls).sum();
        let req = ReplayRequest {
            draft: None,
            version: None,
            from: None,
            to: None,
            days: None,
            after: None,
            limit: 10,
            profile: None,
        };
        let r = w.gw.replay(&w.tenant, &kit_name(k), req).await.unwrap();
        assert_eq!(
            r.summary.calls,
            calls as u64,
            "seed {seed}: every call under {} was recorded",
            kit_name(k)
        );
        assert_eq!(r.summary.changed, 0, "seed {seed}: {:#?}", r.changes);
    }
}

/// Every call that passed its rate check counted once in its window: the windows hold, in
/// all, the calls of the rate-limited kits' profiles that were not refused for the rate.
async fn assert_windows_counted(w: &World, raced: &Outcome) {
    let rated: usize = raced
        .iter()
        .filter(|(i, _)| [2, 4].contains(&(*i % KITS.len())))
        .flat_map(|(_, o)| o.iter().filter(|(a, _)| !a.starts_with("deny:kit_rate_limit")).map(|(_, n)| *n))
        .sum();
    let (counted,): (i64,) =
        w.gw.store()
            .one("SELECT CAST(COALESCE(SUM(calls), 0) AS BIGINT) FROM rate_counts", &[])
            .await
            .unwrap();
    assert_eq!(counted as usize, rated, "the rate windows counted each call that passed its rate check once");
}
