//! `gateway-load archive [--per-day 50000] [--days 30] [--retention 7]`: the log's archive and
//! retention over a simulated month (issue #54). A fresh SQLite file gets `per-day` entries
//! of one tenant per simulated day: chained charges, each with the decision inputs a governed
//! call records (about the size a real entry is). Then the gateway's clock moves to the next
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
        let seeded = seed_day(&path, (&tenant, &profiles), day, per_day);
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
        println!(
            "  day {d:>2}: seeded {seeded:.1}s, archived {:>7.0} entries/s, deleted {deleted:>7} in {forgot:.1}s, database {:>6.1} MB (index {:>4.1} MB)",
            per_day as f64 / archived,
            size as f64 / 1e6,
            index as f64 / 1e6
        );
    }
    report(&sizes, per_day, retention);
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

/// What the sizes say: bytes per entry before retention started deleting, the size at the
/// end, and the size 100 calls a second would level off at.
fn report(sizes: &[u64], per_day: u64, retention: u32) {
    let grown = sizes.get(retention as usize).copied().unwrap_or(0).saturating_sub(sizes[0]);
    let per_entry = grown as f64 / (per_day as f64 * f64::from(retention).max(1.0));
    let last = *sizes.last().unwrap_or(&0);
    let most = sizes.iter().copied().max().unwrap_or(0);
    println!(
        "  {per_entry:.0} bytes per entry; the database levels off at {:.1} MB (largest {:.1} MB, {:.1} days of entries)",
        last as f64 / 1e6,
        most as f64 / 1e6,
        most as f64 / per_entry / per_day as f64
    );
    let at_100 = per_entry * 100.0 * 86_400.0 * (most as f64 / per_entry / per_day as f64);
    println!(
        "  at 100 calls/s with the same retention, the log's part of the database levels off near {:.0} GB",
        at_100 / 1e9
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
