//! Limits over time (issue #33), decided at a clock the test drives: random clocks, time
//! zones (DST ones included), charges, approvals, denials and expiries. Within every period
//! of every limit, posted plus pending never passes its cap, and each hold counts once, in
//! the tenant-local day it was reserved on, wherever it settled. `NAIVE_SEED` replays a run.

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use gateway::GatewayConfig;
use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
use gateway::domain::calls::Disposition;
use gateway::domain::periods::Clock;
use gateway::domain::tenants::SettingsInput;
use serde_json::json;
use support::{Agent, World, world_with};

const ZONES: [&str; 7] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kolkata",
    "Pacific/Chatham",
];
const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const TTL_SECS: i64 = 3 * 3600;

/// A hold as the check reads it: id, day, status, amount, posted.
type HoldRow = (String, Option<String>, String, i64, Option<i64>);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One run: its world, its clock, its zone and what the test expects of each hold.
struct Run {
    w: World,
    clock: Clock,
    zone: Tz,
    agent: Agent,
    /// Each hold made, with the local day it must count toward.
    days: BTreeMap<String, NaiveDate>,
    refused_by_period: usize,
    executed: usize,
}

impl Run {
    async fn start(rng: &mut Rng) -> Run {
        let start = Utc.with_ymd_and_hms(2026, 12, 20, 12, 0, 0).unwrap()
            + Duration::hours(rng.below(24 * 60) as i64);
        let clock = Clock::manual(start);
        let config =
            GatewayConfig { clock: clock.clone(), approval_ttl_secs: TTL_SECS, ..Default::default() };
        let w = world_with(config).await;
        let zone: Tz = ZONES[rng.below(7) as usize].parse().unwrap();
        let set = SettingsInput { time_zone: zone.name().into(), rate_limit: None };
        let s = w.gw.set_tenant_settings(&w.tenant, set, "test").await.unwrap();
        // A new zone waits for the old zone's midnight.
        if let Some(at) = s.time_zone_changes_at {
            clock.set(at + Duration::seconds(1));
        }
        let week = WEEKDAYS[rng.below(7) as usize];
        w.kit(&format!(
            r#"{{"name":"Periods","primitives":["cards"],"limits":{{"budget":{{"hard_cap":"100000","periods":[
              {{"every":"day","hard_cap":"20","soft_cap":"15"}},
              {{"every":"week","week_starts":"{week}","hard_cap":"60"}},
              {{"every":"month","hard_cap":"150"}}]}},"approve":{{"above":"8"}}}}}}"#
        ))
        .await;
        let agent = w.agent("buyer", "Periods", None).await;
        Run { w, clock, zone, agent, days: BTreeMap::new(), refused_by_period: 0, executed: 0 }
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    async fn newest_hold(&self) -> Option<String> {
        let (id,): (Option<String>,) = self.w.gw.store().one("SELECT MAX(id) FROM holds", &[]).await.unwrap();
        id
    }

    async fn charge(&mut self, rng: &mut Rng) {
        let before = self.newest_hold().await;
        let amount = format!("{}.{:02}", 1 + rng.below(10), rng.below(100));
        let day = self.now().with_timezone(&self.zone).date_naive();
        let resp =
            self.w.call(&self.agent, "cards.charge", json!({"amount": amount, "merchant": "acme"})).await;
        let detail = resp.json()["error"]["details"]["reason"].as_str().unwrap_or_default().to_string();
        match resp.disposition {
            Disposition::Executed => self.executed += 1,
            Disposition::Refused if detail == "period_hard_cap_exceeded" => self.refused_by_period += 1,
            _ => {}
        }
        let after = self.newest_hold().await;
        if after != before {
            self.days.insert(after.expect("a hold was made"), day);
        }
    }

    async fn decide(&mut self, rng: &mut Rng, approve: bool) {
        let q = ApprovalQuery {
            status: Some(ApprovalStatus::Pending),
            profile: None,
            limit: Some(50),
            ..Default::default()
        };
        let pending = self.w.gw.approvals(&self.w.tenant, &q).await.unwrap();
        if pending.is_empty() {
            return;
        }
        let a = &pending[rng.below(pending.len() as u64) as usize];
        let r = if approve {
            self.w.gw.approve(&self.w.tenant, &a.id, &self.w.approver, None).await.map(|_| ())
        } else {
            self.w.gw.deny(&self.w.tenant, &a.id, &self.w.approver, "not now").await.map(|_| ())
        };
        // An approval past its window is a conflict: the sweep expires it.
        if let Err(e) = r {
            assert!(format!("{e:?}").contains("approval_expired"), "{e:?}");
        }
    }

    /// Moves the clock: often to just before a local midnight, so that calls, approvals and
    /// expiries straddle the boundaries.
    fn advance(&self, rng: &mut Rng) {
        let now = self.now();
        let to = match rng.below(3) {
            0 => {
                let local = now.with_timezone(&self.zone).date_naive() + Duration::days(1);
                let midnight = (0..4)
                    .find_map(|h| self.zone.from_local_datetime(&local.and_hms_opt(h, 0, 0)?).earliest())
                    .unwrap()
                    .with_timezone(&Utc);
                midnight - Duration::seconds(1 + rng.below(120) as i64)
            }
            1 => now + Duration::minutes(1 + rng.below(180) as i64),
            _ => now + Duration::hours(1 + rng.below(40) as i64),
        };
        self.clock.set(to.max(now + Duration::seconds(1)));
    }

    /// Every hold is on the day the test expects, and each day's totals are exactly its
    /// holds' (pending ones by amount, posted ones by what posted).
    async fn check(&self) {
        self.w.assert_ledger_ok().await;
        let holds: Vec<HoldRow> = self
            .w
            .gw
            .store()
            .all("SELECT id, day, status, amount_units, posted_units FROM holds", &[])
            .await
            .unwrap();
        let mut by_day: BTreeMap<String, i64> = BTreeMap::new();
        for (id, day, status, amount, posted) in holds {
            let day = day.expect("every hold has a day");
            assert_eq!(Some(&day.parse::<NaiveDate>().unwrap()), self.days.get(&id), "hold {id}");
            let counted = match status.as_str() {
                "pending" => amount,
                "posted" => posted.unwrap_or(0),
                _ => 0,
            };
            *by_day.entry(day).or_default() += counted;
        }
        let rows: Vec<(String, i64)> = self
            .w
            .gw
            .store()
            .all(
                "SELECT day, posted_units + pending_units FROM budget_days WHERE profile_id = ?",
                &[&self.agent.profile],
            )
            .await
            .unwrap();
        let days: BTreeMap<String, i64> = rows.into_iter().filter(|(_, n)| *n != 0).collect();
        by_day.retain(|_, n| *n != 0);
        assert_eq!(days, by_day, "each hold counts once, on its own day");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_every_period_of_every_limit_posted_and_pending_never_pass_the_cap() {
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("NAIVE_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let (mut refused, mut executed) = (0, 0);
    for _ in 0..3 {
        let mut run = Run::start(&mut rng).await;
        for _ in 0..90 {
            match rng.below(12) {
                0..=5 => run.charge(&mut rng).await,
                6 | 7 => run.decide(&mut rng, true).await,
                8 => run.decide(&mut rng, false).await,
                9 => {
                    run.clock.set(run.now() + Duration::seconds(TTL_SECS + 1));
                    run.w.gw.sweep().await.unwrap();
                }
                _ => run.advance(&mut rng),
            }
            run.check().await;
        }
        refused += run.refused_by_period;
        executed += run.executed;
    }
    println!("executed {executed}, refused by a period cap {refused}");
    assert!(executed > 0 && refused > 0, "the runs both spent and met period caps: {executed} / {refused}");
}

/// A zone change asked for while another is pending replaces it, and waits for the midnight
/// of the zone in effect now; asking for the zone in effect cancels it.
#[tokio::test]
async fn a_second_zone_change_replaces_the_pending_one_at_the_current_zones_midnight() {
    let clock = Clock::manual(Utc.with_ymd_and_hms(2026, 12, 30, 12, 0, 0).unwrap());
    let w = world_with(GatewayConfig { clock: clock.clone(), ..Default::default() }).await;
    let set = |zone: &str| SettingsInput { time_zone: zone.into(), rate_limit: None };
    let utc_midnight = Utc.with_ymd_and_hms(2026, 12, 31, 0, 0, 0).unwrap();
    let s = w.gw.set_tenant_settings(&w.tenant, set("America/New_York"), "test").await.unwrap();
    assert_eq!(
        (s.next_time_zone.as_deref(), s.time_zone_changes_at),
        (Some("America/New_York"), Some(utc_midnight))
    );
    let s = w.gw.set_tenant_settings(&w.tenant, set("Europe/Berlin"), "test").await.unwrap();
    assert_eq!(
        (s.next_time_zone.as_deref(), s.time_zone_changes_at),
        (Some("Europe/Berlin"), Some(utc_midnight))
    );
    let s = w.gw.set_tenant_settings(&w.tenant, set("UTC"), "test").await.unwrap();
    assert_eq!((s.time_zone.as_str(), s.next_time_zone), ("UTC", None));
    clock.set(utc_midnight + Duration::hours(1));
    assert_eq!(w.gw.tenant_settings(&w.tenant).await.unwrap().time_zone, "UTC");
}
