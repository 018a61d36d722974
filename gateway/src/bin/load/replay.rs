//! `gateway-load replay [--calls 1000000] [--profiles 100,10000]`: replay throughput (issue
//! #35). For each profile count, a fresh SQLite file gets `calls` recorded charges of one kit's
//! profiles over the last six days, written straight into the log with the decision inputs the
//! deciding job records ([`gateway::domain::replay::Inputs`], the same type), then
//! `Gateway::replay` (what `POST /v1/kits/{name}/replay` and the console call) decides them
//! all again: under the live kit (nothing changes) and under a draft with a lower cap and a
//! lower daily cap (about half of them change, so the replayed budget state moves on every
//! call after the cap is reached). Prints the time, the time per call and the calls per
//! second of each.

use std::time::Instant;

use chrono::{Duration, Utc};
use gateway::Gateway;
use gateway::domain::replay::{Decided, Inputs, KitRef};
use gateway::ops::replay::ReplayRequest;
use gateway::sql::Tx;
use policy::{BudgetView, EngineVerdict, Kit, Money, Period, PeriodView};

const KIT: &str = r#"{"name":"Replay","primitives":["cards"],"limits":{"budget":{"hard_cap":"100000000","periods":[{"every":"day","hard_cap":"10000000"}]}}}"#;

pub async fn run(calls: u64, profiles: &[usize]) {
    println!("replay of recorded calls (SQLite, one process), {calls} calls:");
    for &n in profiles {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = format!("{}/replay.db", dir.path().display());
        let gw = Gateway::open(&format!("sqlite://{path}")).await.expect("open");
        let tokens = super::setup(&gw, n, KIT).await;
        let subject = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key");
        let tenant = subject.tenant.clone();
        let mut ids = Vec::new();
        for p in gw.profiles(&tenant).await.expect("profiles") {
            ids.push(p.id);
        }
        let t = Instant::now();
        let (tn, ids_) = (tenant.as_str().to_string(), ids.clone());
        gateway::store::seeding::sqlite_batch(&path, |tx| seed(tx, &tn, &ids_, calls)).expect("seed");
        println!("  {n} profiles: seeded in {:.1?}", t.elapsed());
        let spend = calls as i64 * 51 / 2 / n as i64;
        for (label, draft) in
            [("live kit, nothing changes", None), ("lower caps, half change", Some(lower(spend)))]
        {
            let t = Instant::now();
            let r = gw.replay(&tenant, "Replay", ReplayRequest::recent(draft, 7, 100)).await.expect("replay");
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(r.summary.calls, calls, "every seeded call was replayed");
            println!(
                "    {label:<26} {secs:>6.2} s  {:>6.0} ns/call  {:>9.0} calls/s  ({} changed; target < 10 s)",
                secs * 1e9 / calls as f64,
                calls as f64 / secs,
                r.summary.changed
            );
        }
        gw.store().close().await;
    }
    let (read, write) = json_costs(200_000);
    println!(
        "  one call's recorded inputs ({} bytes of JSON): parsing {read:.0} ns (replay), writing {write:.0} ns (each live call)",
        sample_len()
    );
}

fn sample_len() -> usize {
    let p = gateway::ProfileId::generate();
    inputs(&p, (Utc::now(), Utc::now().date_naive()), (1_000_000, 10_000), Money::dollars(7)).len()
}

/// The draft: a lifetime cap about half of what each profile spends (`spend` dollars over six
/// days), and a daily cap about half of a day's.
fn lower(spend: i64) -> Kit {
    let mut k = Kit::from_json(KIT).expect("kit");
    k.limits.budget.hard_cap = Some(Money::dollars((spend / 2).max(1)));
    k.limits.budget.periods[0].hard_cap = Some(Money::dollars((spend / 12).max(1)));
    k
}

/// What parsing one call's recorded JSON costs, and writing it, in ns, on `n` of each.
fn json_costs(n: usize) -> (f64, f64) {
    let p = gateway::ProfileId::generate();
    let text = inputs(&p, (Utc::now(), Utc::now().date_naive()), (1_000_000, 10_000), Money::dollars(7));
    let parsed: Inputs = serde_json::from_str(&text).expect("parses");
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(serde_json::from_str::<Inputs>(std::hint::black_box(&text)).expect("parses"));
    }
    let read = t.elapsed().as_secs_f64() * 1e9 / n as f64;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(serde_json::to_string(std::hint::black_box(&parsed)).expect("writes"));
    }
    (read, t.elapsed().as_secs_f64() * 1e9 / n as f64)
}

/// `calls` allowed charges of $1 to $50, round-robin over `profiles`, spread over the last six
/// days, each with the totals it was decided on.
fn seed(
    tx: &dyn Tx,
    tenant: &str,
    profiles: &[gateway::ProfileId],
    calls: u64,
) -> gateway::store::Result<()> {
    let now = Utc::now();
    let start = now - Duration::days(6);
    let step = Duration::days(6).num_milliseconds() / calls.max(1) as i64;
    let mut posted = vec![0i64; profiles.len()];
    let mut day_posted = vec![(chrono::NaiveDate::MIN, 0i64); profiles.len()];
    for i in 0..calls {
        let at = start + Duration::milliseconds(step * i as i64);
        let p = i as usize % profiles.len();
        let day = at.date_naive();
        if day_posted[p].0 != day {
            day_posted[p] = (day, 0);
        }
        let cost = Money::dollars(1 + (i % 50) as i64);
        let inputs = inputs(&profiles[p], (at, day), (posted[p], day_posted[p].1), cost);
        tx.exec(
            "INSERT INTO activity (tenant_id, at, actor, profile_id, kind, action, verdict, amount_units, kit_version, detail, transport, prev_hash, hash, inputs) \
             VALUES (?, ?, ?, ?, 'action', 'cards.charge', 'allow', ?, 1, '{}', 'http', 'seed', 'seed', ?)",
            &[&tenant, &gateway::store::stored::ts(at), &profiles[p].as_str(), &profiles[p].as_str(), &cost.units(), &inputs],
        )?;
        posted[p] += cost.units();
        day_posted[p].1 += cost.units();
    }
    Ok(())
}

/// A charge's decision inputs as the deciding job records them.
fn inputs(
    profile: &gateway::ProfileId,
    (at, day): (chrono::DateTime<Utc>, chrono::NaiveDate),
    (posted, today): (i64, i64),
    cost: Money,
) -> String {
    let units = |u: i64| Money::from_units(u).unwrap_or(Money::MAX);
    let end = day.succ_opt().expect("a next day").and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    let i = Inputs {
        kit: "Replay".into(),
        kits: vec![KitRef { kit: "Replay".into(), version: 1 }],
        at: at.timestamp(),
        day,
        status: policy::SubjectStatus::Active,
        tool: policy::Catalog::builtin().get("cards.charge").expect("cards.charge").clone(),
        amount: cost,
        recipient: None,
        merchant: Some("acme".into()),
        toolkit: None,
        chain: vec![profile.clone()],
        budgets: vec![BudgetView {
            posted: units(posted),
            pending: Money::ZERO,
            hard_cap: Some(Money::dollars(100_000_000)),
            soft_cap: None,
        }],
        credit: Money::dollars(1_000_000),
        periods: vec![PeriodView {
            budget: 0,
            limit: 0,
            every: Period::Day,
            posted: units(today),
            pending: Money::ZERO,
            hard_cap: Some(Money::dollars(10_000_000)),
            soft_cap: None,
            resets_at: end.timestamp(),
        }],
        rates: Vec::new(),
        unbudgeted: false,
        decided: Decided { verdict: EngineVerdict::Allow, refusal: None, cost },
    };
    serde_json::to_string(&i).expect("decision inputs serialize")
}
