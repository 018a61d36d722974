//! Randomized concurrency: 256 tasks issue mixed actions against a small shared cap while
//! approvers approve and deny and the sweeper expires. At checkpoints and at the end,
//! docs/architecture.md#money-and-the-ledger's
//! invariants must hold: posted + pending ≤ hard cap, entries sum to the running totals, and
//! no hold ends twice. The seed is printed so a failure replays (NAIVE_SEED=<n>).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use gateway::GatewayConfig;
use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
use gateway::domain::calls::Disposition;
use policy::Money;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use support::world_with;

const TASKS: usize = 256;
const OPS_PER_TASK: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_load_never_breaks_the_ledger() {
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026);
    println!("concurrency seed: {seed} (replay with NAIVE_SEED={seed})");
    let w = Arc::new(world_with(GatewayConfig { approval_ttl_secs: 1, ..Default::default() }).await);
    w.kit(r#"{"name":"Small","primitives":["cards","web","email"],"limits":{"budget":{"hard_cap":"60","soft_cap":"45"},"approve":{"above":"3.50"}}}"#).await;
    let parent = w.agent("parent", "Small", None).await;
    let agents = Arc::new(vec![
        w.agent("child-a", "Small", Some(&parent.profile)).await,
        w.agent("child-b", "Small", Some(&parent.profile)).await,
        parent,
        w.agent("solo", "Small", None).await,
    ]);
    let sweeper = w.gw.start_sweeper();
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));

    // Checkpoints while the load runs.
    let checker = {
        let (w, stop, checks) = (w.clone(), stop.clone(), checks.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                w.assert_ledger_ok().await;
                checks.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    // Approvers decide whatever is pending, at random.
    let approvers: Vec<_> = (0..4)
        .map(|i| {
            let (w, stop) = (w.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(seed ^ (0xa000 + i));
                while !stop.load(Ordering::Relaxed) {
                    let pending =
                        w.gw.approvals(
                            &w.tenant,
                            &ApprovalQuery { status: Some(ApprovalStatus::Pending), ..Default::default() },
                        )
                        .await
                        .unwrap();
                    for a in pending {
                        match rng.gen_range(0..3) {
                            0 => drop(w.gw.approve(&w.tenant, &a.id, &w.approver, None).await),
                            1 => drop(w.gw.deny(&w.tenant, &a.id, &w.approver, "random deny").await),
                            _ => {} // left to expire
                        }
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(rng.gen_range(1..15))).await;
                }
            })
        })
        .collect();

    let mut tasks = Vec::with_capacity(TASKS);
    for t in 0..TASKS {
        let (w, agents) = (w.clone(), agents.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(t as u64));
            let mut seen = [0usize; 4];
            for op in 0..OPS_PER_TASK {
                let a = &agents[rng.gen_range(0..agents.len())];
                let (action, args) = match rng.gen_range(0..4) {
                    0 => ("web.read", json!({ "url": format!("https://x.test/{t}/{op}") })),
                    1 => ("email.send", json!({ "to": "ops@x.test", "subject": format!("n{op}") })),
                    _ => ("cards.charge", json!({ "amount": format!("{}.{:02}", rng.gen_range(0..5), rng.gen_range(1..100)), "merchant": "acme", "memo": format!("{t}-{op}") })),
                };
                let idem = rng.gen_bool(0.2).then(|| format!("{t}-{}", op / 2));
                match w.call_idem(a, action, args, idem.as_deref()).await {
                    Ok(r) => seen[r.disposition as usize] += 1,
                    // A reused key with different arguments, or one still in flight, is a
                    // correct refusal under this load.
                    Err(e) => assert!(matches!(e.code(), "idempotency_key_reused" | "idempotency_in_progress"), "{e}"),
                }
            }
            seen
        }));
    }
    let mut totals = [0usize; 4];
    for t in tasks {
        for (i, n) in t.await.unwrap().iter().enumerate() {
            totals[i] += n;
        }
    }
    stop.store(true, Ordering::Relaxed);
    checker.await.unwrap();
    for a in approvers {
        a.await.unwrap();
    }
    // Let every remaining approval expire, then check once more with nothing in flight: the
    // background sweeper is stopped and its last sweep has committed, so the final sweep
    // (which skips rows another transaction holds, on PostgreSQL) sees every due row.
    sweeper.stop().await;
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    w.gw.sweep().await.unwrap();
    w.assert_ledger_ok().await;
    println!(
        "executed {} parked {} refused {} unavailable {}; {} checkpoints",
        totals[Disposition::Executed as usize],
        totals[Disposition::Parked as usize],
        totals[Disposition::Refused as usize],
        totals[Disposition::Unavailable as usize],
        checks.load(Ordering::Relaxed)
    );
    assert!(
        totals[Disposition::Executed as usize] > 0
            && totals[Disposition::Parked as usize] > 0
            && totals[Disposition::Refused as usize] > 0,
        "the mix exercised every path: {totals:?}"
    );
    let statuses: Vec<(String, i64)> =
        w.gw.store().all("SELECT status, COUNT(*) FROM approvals GROUP BY status", &[]).await.unwrap();
    println!("approvals by status: {statuses:?}");
    let (pending_holds,): (i64,) =
        w.gw.store().one("SELECT COUNT(*) FROM holds WHERE status = 'pending'", &[]).await.unwrap();
    assert_eq!(pending_holds, 0, "every hold ended");
    let pool = w.gw.budget(&w.tenant, &agents[2].profile).await.unwrap();
    assert!(
        pool.totals.posted <= Money::dollars(60),
        "the shared pool stayed within its cap: {:?}",
        pool.totals
    );
    assert!(checks.load(Ordering::Relaxed) > 0);
}
