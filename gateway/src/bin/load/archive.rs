//! `gateway-load archive [--per-day 50000] [--days 30] [--retention 7]`: the log's archive and
//! retention over a simulated month (issue #54). A fresh SQLite file gets `per-day` entries
//! of one tenant per simulated day: chained charges, each with the decision inputs a governed
//! call records (about the size a real entry is), with each charge's posted hold and ledger
//! entry. Then the gateway's clock moves to the next
//! day, and the archiver's round runs as the server runs it (`Gateway::archive_due` into a
//! local directory, then `Gateway::forget_archived`). Prints per day the archive's rate and the
//! database's size (with its per-profile index); at the end the bytes per entry, where the size levels off, and what that
//! means at 100 calls a second.

use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use gateway::audit::activity::{Actor, Entry, Kind, Transport, Verdict, chain_hash};
use gateway::domain::periods::Clock;
use gateway::domain::tenants::Retention;
use gateway::{Gateway, GatewayConfig, TenantId};
use policy::Money;

const KIT: &str =
    r#"{"name":"Archived","primitives":["cards"],"limits":{"budget":{"hard_cap":"100000000"}}}"#;

pub async fn run(per_day: u64, days: u32, retention: u32) {
    println!(
        "the log's archive and retention: {per_day} entries a day for {days} days, retention {retention} days (SQLite)"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = format!("{}/archive.db", dir.path().display());
    let today = Utc::now().date_naive();
    let clock = Clock::manual(Utc::now());
    let config = GatewayConfig { clock: clock.clone(), ..Default::default() };
    let gw = Gateway::open_with(&format!("sqlite://{path}"), config).await.expect("open");
    // A hundred agents of one tenant, as real profiles: the entries name them, and the
    // per-profile index keeps a pair per entry and profile.
    let tokens = super::setup(&gw, 100, KIT).await;
    let mut profiles = Vec::new();
    for token in &tokens {
        profiles.push(gw.authenticate(token).await.expect("auth").expect("a key").profile);
    }
    let tenant = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key").tenant;
    let keep = Retention { log_days: Some(retention) };
    gw.set_log_retention(&tenant, keep, "bench").await.expect("retention");
    let archive =
        gateway::ops::archive::open_store(&format!("{}/archive", dir.path().display())).expect("store");
    let mut sizes = Vec::new();
    for d in 1..=i64::from(days) {
        let day = today + Duration::days(d);
        let seeded = seed_day(&path, (&tenant, &profiles), day, per_day)
            + seed_ledger_day(&path, (&tenant, &profiles), day, per_day);
        clock.set(midnight(day + Duration::days(1)) + Duration::seconds(1));
        let t = Instant::now();
        gw.archive_due(archive.as_ref(), "bench").await.expect("archive");
        let archived = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let deleted = gw.forget_archived().await.expect("retention");
        let forgot = t.elapsed().as_secs_f64();
        // The indexer's round, as it runs every quarter second in the server: the day's
        // pairs indexed, those of the deleted entries dropped.
        gw.index_recent().await.expect("index");
        gateway::store::seeding::sqlite_checkpoint(&path).expect("checkpoint");
        // The database and its per-profile index beside it (store/src/profile_index.rs).
        let index = std::fs::metadata(format!("{path}-index")).map_or(0, |m| m.len());
        let size = std::fs::metadata(&path).expect("the database").len() + index;
        sizes.push(size);
        let (entries, holds) = ledger_rows(&path);
        println!(
            "  day {d:>2}: seeded {seeded:.1}s, archived {:>7.0} entries/s, deleted {deleted:>7} in {forgot:.1}s, database {:>6.1} MB (index {:>4.1} MB), ledger entries {entries:>8}, holds {holds:>8}",
            per_day as f64 / archived,
            size as f64 / 1e6,
            index as f64 / 1e6
        );
    }
    report(&sizes, per_day, retention);
    let ledger = gw.check_ledger(&tenant).await.expect("check the ledger");
    assert!(
        ledger.violations.is_empty(),
        "the ledger checks with what retention carried: {:?}",
        ledger.violations
    );
    println!("  the ledger checks: every account's entries and carried sums equal its totals and day totals");
    let chain = gw.verify_log(&tenant).await.expect("verify");
    assert!(chain.ok, "the chain verifies from its checkpoint: {chain:?}");
    let archived = gw.check_tenant_archive(archive.as_ref(), &tenant).await.expect("check");
    assert!(archived.ok, "the archive checks: {:?}", archived.problems);
    println!(
        "  the chain verifies from its checkpoint ({} entries left); the archive checks ({} entries in {} ranges)",
        chain.entries, archived.entries, archived.ranges
    );
    gw.store().close().await;
}

/// How many ledger entries and holds the database at `path` holds.
fn ledger_rows(path: &str) -> (i64, i64) {
    gateway::store::seeding::sqlite_batch(path, |tx| {
        let count = |table: &str| -> gateway::store::Result<i64> {
            tx.row(&format!("SELECT COUNT(*) FROM {table}"), &[])?.map_or(Ok(0), |r| r.get(0))
        };
        Ok((count("ledger_entries")?, count("holds")?))
    })
    .expect("count")
}

/// What the sizes say (`sizes[d - 1]` after day `d`): bytes per call while nothing is
/// deleted; what a call leaves once the log is cut (its ledger entry and hold), and once the
/// ledger is cut too (its hold); and what that means at 100 calls a second.
fn report(sizes: &[u64], per_day: u64, retention: u32) {
    let per_call = |from: usize, to: usize| -> Option<f64> {
        let (a, b) = (sizes.get(from.checked_sub(1)?)?, sizes.get(to - 1)?);
        Some(b.saturating_sub(*a) as f64 / ((to - from) as f64 * per_day as f64))
    };
    let r = retention as usize;
    let floor = gateway::domain::ledger::LEDGER_FLOOR_DAYS as usize;
    let (Some(all), Some(cut)) = (per_call(1, r.max(2)), per_call(r + 2, (floor).min(sizes.len()))) else {
        return println!("  (too few days to say what a call leaves)");
    };
    println!(
        "  {all:.0} bytes per call while nothing is deleted; {cut:.0} once the log is cut (its ledger entry and hold)"
    );
    let at_100 = 8.64e6;
    let log = (all - cut) * at_100 * (r + 1) as f64;
    let Some(held) = per_call(floor + 2, sizes.len()).filter(|_| sizes.len() >= floor + 4) else {
        return println!(
            "  at 100 calls/s the log's part levels off near {:.0} GB (run 35 days or more for the ledger's)",
            log / 1e9
        );
    };
    let ledger = (cut - held) * at_100 * floor as f64;
    println!("  {held:.0} bytes per call once the ledger is cut too (the hold, which stays)");
    println!(
        "  at 100 calls/s: the log's part levels off near {:.0} GB, the ledger's near {:.0} GB, and the holds grow {:.1} GB a day",
        log / 1e9,
        ledger / 1e9,
        held * at_100 / 1e9
    );
}

fn midnight(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0).expect("midnight").and_utc()
}

/// `n` chained charges of `tenant` by its `profiles` in turn, spread over `day` (UTC), written
/// straight into the log in one transaction; the seconds it took.
pub(crate) fn seed_day(
    path: &str,
    (tenant, profiles): (&TenantId, &[gateway::ProfileId]),
    day: NaiveDate,
    n: u64,
) -> f64 {
    let t = Instant::now();
    gateway::store::seeding::sqlite_batch(path, |tx| {
        let head = tx.row(
            "SELECT hash FROM activity WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1",
            &[&tenant.as_str()],
        )?;
        let mut prev: String =
            head.map_or(Ok(gateway::audit::activity::GENESIS.to_string()), |r| r.get(0))?;
        let step = 86_400_000 / n.max(1) as i64;
        for i in 0..n {
            let at = midnight(day) + Duration::milliseconds(step * i as i64);
            let e = entry(tenant, &profiles[i as usize % profiles.len()], at, i, &prev);
            gateway::audit::activity::seed(tx, &e)?;
            prev = e.hash;
        }
        Ok(())
    })
    .expect("seed");
    t.elapsed().as_secs_f64()
}

/// The holds and ledger entries of `n` executed charges of `tenant`'s `profiles` on `day`, as
/// a governed call leaves them: a posted hold, one `post` entry on the profile's account, and
/// the account's running and day totals moved ($1 each, far inside the kit's cap). The
/// seconds it took.
pub(crate) fn seed_ledger_day(
    path: &str,
    (tenant, profiles): (&TenantId, &[gateway::ProfileId]),
    day: NaiveDate,
    n: u64,
) -> f64 {
    const UNITS: i64 = 10_000;
    let t = Instant::now();
    let d = day.to_string();
    gateway::store::seeding::sqlite_batch(path, |tx| {
        let step = 86_400_000 / n.max(1) as i64;
        for i in 0..n {
            let at = (midnight(day) + Duration::milliseconds(step * i as i64)).to_rfc3339();
            let (profile, hold) = (profiles[i as usize % profiles.len()].as_str(), format!("hld_{d}_{i:09}"));
            tx.exec(
                "INSERT INTO holds (id, tenant_id, profile_id, chain, action, amount_units, credit_units, kit_version, status, posted_units, created_at, ended_at, day) \
                 VALUES (?1, ?2, ?3, ?3, 'cards.charge', ?4, 0, 1, 'posted', ?4, ?5, ?5, ?6)",
                &[&hold, &tenant.as_str(), &profile, &UNITS, &at, &d],
            )?;
            tx.exec(
                "INSERT INTO ledger_entries (tenant_id, account_id, hold_id, action, kit_version, kind, pending_delta, posted_delta, created_at, day) \
                 VALUES (?, ?, ?, 'cards.charge', 1, 'post', 0, ?, ?, ?)",
                &[&tenant.as_str(), &profile, &hold, &UNITS, &at, &d],
            )?;
        }
        for (k, p) in profiles.iter().enumerate() {
            let units = UNITS * ((n as usize + profiles.len() - 1 - k) / profiles.len()) as i64;
            tx.exec("UPDATE budget_accounts SET posted_units = posted_units + ? WHERE profile_id = ?", &[&units, &p.as_str()])?;
            tx.exec(
                "INSERT INTO budget_days (profile_id, day, posted_units, pending_units) VALUES (?, ?, ?, 0) \
                 ON CONFLICT (profile_id, day) DO UPDATE SET posted_units = budget_days.posted_units + excluded.posted_units",
                &[&p.as_str(), &d, &units],
            )?;
        }
        Ok(())
    })
    .expect("seed the ledger");
    t.elapsed().as_secs_f64()
}

/// A charge's entry, hashed onto `prev`, with recorded inputs of a charge's size.
fn entry(tenant: &TenantId, profile: &gateway::ProfileId, at: DateTime<Utc>, i: u64, prev: &str) -> Entry {
    let mut e = Entry {
        seq: 0,
        tenant_id: tenant.clone(),
        at,
        actor: Actor::parse(profile.as_str()).expect("an agent's actor"),
        profile_id: Some(profile.clone()),
        kind: Kind::Action,
        action: Some("cards.charge".into()),
        verdict: Verdict::parse("allow"),
        amount: Money::from_units(1_000_000 + i as i64 % 50_000_000),
        kit_version: Some(1),
        detail: serde_json::json!({"merchant": "acme", "hold_id": format!("hld_{i:026}")}),
        transport: Some(Transport::Http),
        prev_hash: prev.to_string(),
        hash: String::new(),
        inputs: Some(INPUTS.to_string()),
    };
    e.hash = chain_hash(prev, &e);
    e
}

/// About the JSON a charge's decision records (`gateway-load replay` writes the real type).
const INPUTS: &str = r#"{"kit":"Archived","kits":[{"kit":"Archived","version":1}],"at":1796000000,"day":"2026-12-08","status":"active","tool":{"action":"cards.charge","primitive":"cards","spends":true},"amount":"25.00","recipient":null,"merchant":"acme","toolkit":null,"chain":["prf_bench0001"],"budgets":[{"posted":"1200.00","pending":"0.00","hard_cap":"100000000.00","soft_cap":null}],"credit":"1000000.00","periods":[],"rates":[],"unbudgeted":false,"decided":{"verdict":"allow","refusal":null,"cost":"25.00"}}"#;
