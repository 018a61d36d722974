//! Calendar periods and rate windows: where a moment falls in a tenant's calendar, and what
//! each period limit and rate limit stands at (docs/architecture.md#periods-and-rate-limits).
//!
//! Guarantees:
//! - A tenant's calendar is its IANA time zone (UTC unless set). A day is a local date, so a
//!   DST day is 23 or 25 hours long. A week is the seven days from its start day; a month is
//!   a calendar month. Every period is a run of whole local days, so one set of per-day totals
//!   (`budget_days`) answers every limit, and a limit added mid-month counts the month's
//!   spend so far.
//! - A hold counts toward the local day it was reserved on ([`Calendar::day`]), wherever it
//!   settles: a burst at 23:59:59 cannot borrow from tomorrow.
//! - A time zone change takes effect at the old zone's next midnight. A date already in use
//!   keeps counting what it holds, so the changeover day may be longer or shorter than 24
//!   hours but spend is never forgotten.
//! - Rate windows are fixed and aligned to the clock (`floor(now / unit)`); a window's count
//!   is read and raised under the tenant's lock, so it is exact under concurrency.
//!
//! The engine (`policy`) knows no clock: this module computes the [`PeriodView`]s and
//! [`RateView`]s it decides on.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use policy::kit::action_pattern_matches;
use policy::{Money, Period, PeriodLimit, PeriodView, RateUnit, RateView};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where budget periods and rate windows read the time. Production reads the system clock;
/// tests drive one ([`Clock::manual`]), or, for a server process, a file holding an RFC 3339
/// moment (`NAIVE_TEST_CLOCK_FILE`), so no test sleeps to reach a boundary.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    #[default]
    System,
    Manual(std::sync::Arc<std::sync::Mutex<DateTime<Utc>>>),
    File(std::path::PathBuf),
}

impl Clock {
    /// A clock that stands at `t` until [`Clock::set`] moves it.
    pub fn manual(t: DateTime<Utc>) -> Clock {
        Clock::Manual(std::sync::Arc::new(std::sync::Mutex::new(t)))
    }

    /// Moves a manual clock; the other kinds ignore it.
    pub fn set(&self, t: DateTime<Utc>) {
        if let Clock::Manual(m) = self {
            *m.lock().expect("the clock's lock") = t;
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Manual(m) => *m.lock().expect("the clock's lock"),
            // A test's file; until it holds a moment, the system's.
            Clock::File(path) => std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse::<DateTime<Utc>>().ok())
                .unwrap_or_else(Utc::now),
        }
    }
}

/// A tenant's calendar: its zone, and the zone it changes to from a given moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Calendar {
    pub zone: Tz,
    pub next: Option<(Tz, DateTime<Utc>)>,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar { zone: Tz::UTC, next: None }
    }
}

/// The tenant's own limit on the calls of all its agents together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TenantRate {
    pub calls: u32,
    pub per: RateUnit,
}

/// What a reservation reads of its tenant beside balances: its calendar and rate limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantClock {
    pub calendar: Calendar,
    pub rate: Option<TenantRate>,
}

impl TenantClock {
    /// From the tenant's stored columns: zone, next zone, when it takes effect, rate calls
    /// and unit.
    pub(crate) fn from_columns(
        zone: String,
        next: Option<String>,
        from: Option<String>,
        calls: Option<i64>,
        per: Option<String>,
    ) -> Result<TenantClock> {
        let parse = |name: &str| crate::stored::named("time zone", name, |z| z.parse::<Tz>().ok());
        let next = match (next, from) {
            (Some(n), Some(f)) => Some((parse(&n)?, crate::stored::parse_ts(&f)?)),
            _ => None,
        };
        let rate = match (calls, per) {
            (Some(calls), Some(per)) => Some(TenantRate {
                calls: u32::try_from(calls).unwrap_or(u32::MAX),
                per: crate::stored::named("rate unit", &per, |p| {
                    [RateUnit::Second, RateUnit::Minute, RateUnit::Hour].into_iter().find(|u| u.as_str() == p)
                })?,
            }),
            _ => None,
        };
        Ok(TenantClock { calendar: Calendar { zone: parse(&zone)?, next }, rate })
    }
}

/// Parses an IANA zone name, or says what to write instead.
pub fn parse_zone(name: &str) -> Result<Tz> {
    name.parse::<Tz>().map_err(|_| {
        Error::invalid(
            "invalid_time_zone",
            format!(
                "time_zone: `{name}` is not an IANA time zone; write a name such as `Europe/Berlin`, `America/New_York` or `UTC`"
            ),
        )
    })
}

impl Calendar {
    /// The zone in effect at `t`.
    pub fn zone_at(&self, t: DateTime<Utc>) -> Tz {
        match self.next {
            Some((next, from)) if t >= from => next,
            _ => self.zone,
        }
    }

    /// The local date `t` falls on: the day a hold reserved at `t` counts toward.
    pub fn day(&self, t: DateTime<Utc>) -> NaiveDate {
        t.with_timezone(&self.zone_at(t)).date_naive()
    }

    /// When `date` starts in `zone`: its first instant (after a DST gap at midnight, the
    /// first hour that exists).
    fn start_in(zone: Tz, date: NaiveDate) -> DateTime<Utc> {
        (0..4)
            .find_map(|h| zone.from_local_datetime(&date.and_hms_opt(h, 0, 0)?).earliest())
            .map_or_else(|| date.and_hms_opt(0, 0, 0).expect("midnight").and_utc(), |t| t.with_timezone(&Utc))
    }

    /// When `date` starts in this calendar: in the zone in effect then. A change takes
    /// effect no earlier than its moment, so a date the new zone starts before the change
    /// starts at the change.
    pub fn start_of(&self, date: NaiveDate) -> DateTime<Utc> {
        let old = Self::start_in(self.zone, date);
        match self.next {
            Some((next, from)) if old >= from => Self::start_in(next, date).max(from),
            _ => old,
        }
    }

    /// The moment a zone change asked for at `now` takes effect: the current zone's next
    /// midnight.
    pub fn next_midnight(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.start_of(self.day(now) + Duration::days(1))
    }
}

/// The local dates `[first, end)` of the period of `limit` that `day` falls in.
pub fn period_dates(limit: &PeriodLimit, day: NaiveDate) -> (NaiveDate, NaiveDate) {
    match limit.every {
        Period::Day => (day, day + Duration::days(1)),
        Period::Week => {
            let back = (day.weekday().num_days_from_monday() + 7 - limit.week_start().from_monday()) % 7;
            let first = day - Duration::days(i64::from(back));
            (first, first + Duration::days(7))
        }
        Period::Month => {
            let first = day.with_day(1).expect("the first of a month");
            let end = first.checked_add_months(chrono::Months::new(1)).expect("a month later");
            (first, end)
        }
    }
}

/// The earliest local date any of `kits`' period limits can reach back to from `utc_day`,
/// with a day either side for zones ahead of and behind UTC: what a reservation reads of
/// `budget_days`. `None` when no kit has a period limit.
pub fn first_day_needed(kits: &[&policy::Kit], utc_day: NaiveDate) -> Option<NaiveDate> {
    let back = kits
        .iter()
        .flat_map(|k| &k.limits.budget.periods)
        .map(|p| match p.every {
            Period::Day => 1,
            Period::Week => 8,
            Period::Month => 32,
        })
        .max()?;
    Some(utc_day - Duration::days(back))
}

/// One account's posted and pending amounts on one local day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DayTotals {
    /// The account's level in the chain (0: the acting profile).
    pub level: usize,
    pub day: NaiveDate,
    pub posted: Money,
    pub pending: Money,
}

/// Every period limit of every level's kit (`kits`, nearest first), for a call made on local
/// day `day`:
/// what each period holds and when it resets.
pub fn period_views(
    kits: &[&policy::Kit],
    calendar: &Calendar,
    day: NaiveDate,
    days: &[DayTotals],
) -> Vec<PeriodView> {
    let mut views = Vec::new();
    for (level, kit) in kits.iter().enumerate() {
        for (i, limit) in kit.limits.budget.periods.iter().enumerate() {
            let (first, end) = period_dates(limit, day);
            let (posted, pending) = sum_days(days, level, first, end);
            views.push(PeriodView {
                budget: level,
                limit: i,
                every: limit.every,
                posted,
                pending,
                hard_cap: limit.hard_cap,
                soft_cap: limit.soft_cap,
                resets_at: calendar.start_of(end).timestamp(),
            });
        }
    }
    views
}

/// The posted and pending totals of `level`'s days in `[first, end)`.
pub fn sum_days(days: &[DayTotals], level: usize, first: NaiveDate, end: NaiveDate) -> (Money, Money) {
    days.iter().filter(|d| d.level == level && d.day >= first && d.day < end).fold(
        (Money::ZERO, Money::ZERO),
        |(p, q), d| {
            (p.checked_add(d.posted).unwrap_or(Money::MAX), q.checked_add(d.pending).unwrap_or(Money::MAX))
        },
    )
}

/// One rate window a call would count toward: its key in `rate_counts` and its view for the
/// engine before this call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub key: String,
    pub ends_at: i64,
    pub view: RateView,
}

/// The windows `action` by `profile` under `kit` counts toward at `now`: each of the kit's
/// rate limits that matches, then the tenant's own. `used` is zero until
/// [`fill_counts`] reads it.
pub fn rate_windows(
    profile: &crate::ids::ProfileId,
    kit: &policy::Kit,
    tenant: Option<TenantRate>,
    action: &str,
    now: DateTime<Utc>,
) -> Vec<Window> {
    let profile = profile.as_str();
    let kit = kit.limits.rate.iter().enumerate();
    let own = kit.filter(|(_, r)| action_pattern_matches(&r.action, action)).map(|(i, r)| {
        let scope = format!("p/{profile}/{}", r.action);
        window(scope, Some(u32::try_from(i).unwrap_or(u32::MAX)), r.calls, r.per, now)
    });
    let tenant = tenant.map(|t| window("t".to_string(), None, t.calls, t.per, now));
    own.chain(tenant).collect()
}

/// The distinct keys of `windows`, each with its end: what one call counts in. Limits of one
/// pattern and unit (a child's tighter copy of its parent's, two limits on `*`) count the same
/// calls in the same window, so they share one count, raised once per call, and each compares
/// it with its own bound.
pub fn distinct_keys(windows: &[Window]) -> Vec<(&str, i64)> {
    let mut out: Vec<(&str, i64)> = Vec::with_capacity(windows.len());
    for w in windows {
        if !out.iter().any(|(k, _)| *k == w.key) {
            out.push((&w.key, w.ends_at));
        }
    }
    out
}

fn window(scope: String, limit: Option<u32>, calls: u32, per: RateUnit, now: DateTime<Utc>) -> Window {
    let unit = per.seconds();
    let n = now.timestamp().div_euclid(unit);
    let ends_at = (n + 1) * unit;
    let retry_after = u32::try_from((ends_at - now.timestamp()).max(1)).unwrap_or(u32::MAX);
    Window {
        key: format!("{scope}/{}/{n}", per.as_str()),
        ends_at,
        view: RateView { limit, calls, used: 0, retry_after },
    }
}

/// Sets each window's `used` from the counts read for its key.
pub fn fill_counts(windows: &mut [Window], counts: &[(String, i64)]) {
    for w in windows {
        let used = counts.iter().find(|(k, _)| *k == w.key).map_or(0, |(_, n)| *n);
        w.view.used = u32::try_from(used).unwrap_or(u32::MAX);
    }
}

/// One period of a limit, as the budget read and the spend page show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PeriodSpend {
    /// Its first local day, and the local day after its last.
    pub first_day: NaiveDate,
    pub end_day: NaiveDate,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub posted: Money,
    pub pending: Money,
}

/// How many earlier periods a [`PeriodStanding`] shows beside the current one.
pub const PREVIOUS_PERIODS: usize = 3;

/// One period limit in its current period: what it holds, what is left, how fast it is
/// spent and, at that rate, when the hard cap would be reached; with earlier periods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PeriodStanding {
    /// `limits.budget.periods[i]` of the profile's kit.
    pub limit: usize,
    pub every: Period,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub week_starts: Option<policy::Weekday>,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    pub current: PeriodSpend,
    /// What the hard cap leaves in this period; `None` without a hard cap.
    pub left: Option<Money>,
    /// Posted and pending per day of the period so far.
    pub burn_per_day: Money,
    /// When the hard cap would be reached at that rate, if before the period ends.
    pub cap_reached_at: Option<DateTime<Utc>>,
    /// The periods before, newest first.
    pub previous: Vec<PeriodSpend>,
}

/// The earliest day [`standings`] needs: the start of the period [`PREVIOUS_PERIODS`] before
/// the current one of the longest limit.
pub fn first_day_shown(limits: &[PeriodLimit], day: NaiveDate) -> NaiveDate {
    limits
        .iter()
        .map(|l| {
            let mut first = period_dates(l, day).0;
            for _ in 0..PREVIOUS_PERIODS {
                first = period_dates(l, first - Duration::days(1)).0;
            }
            first
        })
        .min()
        .unwrap_or(day)
}

/// Each of `limits` in the period of `now`, from one account's `days` (level 0).
pub fn standings(
    limits: &[PeriodLimit],
    calendar: &Calendar,
    now: DateTime<Utc>,
    days: &[DayTotals],
) -> Vec<PeriodStanding> {
    let today = calendar.day(now);
    let spend = |first: NaiveDate, end: NaiveDate| {
        let (posted, pending) = sum_days(days, 0, first, end);
        PeriodSpend {
            first_day: first,
            end_day: end,
            start: calendar.start_of(first),
            end: calendar.start_of(end),
            posted,
            pending,
        }
    };
    limits
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (first, end) = period_dates(l, today);
            let current = spend(first, end);
            let used = current.posted.checked_add(current.pending).unwrap_or(Money::MAX);
            let elapsed = (now - current.start).num_seconds().max(60);
            let per_sec = used.units() as f64 / elapsed as f64;
            let burn_per_day = Money::from_units((per_sec * 86_400.0) as i64).unwrap_or(Money::MAX);
            let cap_reached_at = l.hard_cap.filter(|_| per_sec > 0.0).and_then(|cap| {
                let secs = cap.units().saturating_sub(used.units()) as f64 / per_sec;
                let at = now + Duration::seconds(secs.min(1e10) as i64);
                (at < current.end).then_some(at)
            });
            let mut previous = Vec::with_capacity(PREVIOUS_PERIODS);
            let mut before = first;
            for _ in 0..PREVIOUS_PERIODS {
                let (f, e) = period_dates(l, before - Duration::days(1));
                previous.push(spend(f, e));
                before = f;
            }
            PeriodStanding {
                limit: i,
                every: l.every,
                week_starts: l.week_starts,
                hard_cap: l.hard_cap,
                soft_cap: l.soft_cap,
                left: l.hard_cap.map(|c| c.saturating_sub(used)),
                current,
                burn_per_day,
                cap_reached_at,
                previous,
            }
        })
        .collect()
}

/// One account's day totals from `from` on, as level 0.
pub(crate) async fn account_days(
    store: &crate::store::Store,
    profile: &crate::ids::ProfileId,
    from: NaiveDate,
) -> Result<Vec<DayTotals>> {
    let rows: Vec<(String, i64, i64)> = store
        .all(
            "SELECT day, posted_units, pending_units FROM budget_days WHERE profile_id = ? AND day >= ? ORDER BY day",
            &[profile, &from.to_string()],
        )
        .await?;
    rows.into_iter()
        .map(|(day, posted, pending)| {
            let day = crate::stored::named("budget day", &day, |d| d.parse::<NaiveDate>().ok())?;
            let money = |u: i64| {
                Money::from_units(u).ok_or_else(|| crate::stored::corrupt("day total", &u.to_string()))
            };
            Ok(DayTotals { level: 0, day, posted: money(posted)?, pending: money(pending)? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use policy::Weekday;

    use super::*;

    fn limit(every: Period, week_starts: Option<Weekday>) -> PeriodLimit {
        PeriodLimit { every, week_starts, hard_cap: Some(Money::dollars(1)), soft_cap: None }
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn weeks_start_on_their_day_and_months_on_the_first() {
        let sat = date("2026-12-05");
        assert_eq!(period_dates(&limit(Period::Week, None), sat), (date("2026-11-30"), date("2026-12-07")));
        let sun = Some(Weekday::Sunday);
        assert_eq!(period_dates(&limit(Period::Week, sun), sat), (date("2026-11-29"), date("2026-12-06")));
        let sat_start = Some(Weekday::Saturday);
        assert_eq!(period_dates(&limit(Period::Week, sat_start), sat), (sat, date("2026-12-12")));
        assert_eq!(period_dates(&limit(Period::Month, None), sat), (date("2026-12-01"), date("2027-01-01")));
        assert_eq!(period_dates(&limit(Period::Day, None), sat), (sat, date("2026-12-06")));
    }

    #[test]
    fn a_day_is_a_local_date_and_dst_days_are_23_or_25_hours() {
        let ny = Calendar { zone: "America/New_York".parse().unwrap(), next: None };
        // 02:30 UTC on 1 Jan is still 31 Dec in New York.
        assert_eq!(ny.day(at("2027-01-01T02:30:00Z")), date("2026-12-31"));
        assert_eq!(ny.start_of(date("2027-01-01")), at("2027-01-01T05:00:00Z"));
        let spring = ny.start_of(date("2027-03-15")) - ny.start_of(date("2027-03-14"));
        let autumn = ny.start_of(date("2027-11-08")) - ny.start_of(date("2027-11-07"));
        assert_eq!((spring.num_hours(), autumn.num_hours()), (23, 25));
    }

    #[test]
    fn a_zone_change_waits_for_the_old_zones_midnight() {
        let utc = Calendar::default();
        let from = utc.next_midnight(at("2026-12-05T15:00:00Z"));
        assert_eq!(from, at("2026-12-06T00:00:00Z"));
        let c = Calendar { zone: Tz::UTC, next: Some(("America/New_York".parse().unwrap(), from)) };
        assert_eq!(c.day(at("2026-12-05T23:00:00Z")), date("2026-12-05"));
        // From the change on, New York's date: the 5th again until its own midnight, so the
        // 5th is longer and its spend is counted once.
        assert_eq!(c.day(at("2026-12-06T01:00:00Z")), date("2026-12-05"));
        assert_eq!(c.day(at("2026-12-06T06:00:00Z")), date("2026-12-06"));
        assert_eq!(c.start_of(date("2026-12-06")), at("2026-12-06T05:00:00Z"));
    }

    #[test]
    fn rate_windows_are_aligned_and_say_how_long_is_left() {
        let w = window("t".into(), None, 10, RateUnit::Minute, at("2026-12-05T10:00:45Z"));
        assert_eq!(w.view.retry_after, 15);
        assert!(w.key.starts_with("t/minute/"), "{}", w.key);
        let next = window("t".into(), None, 10, RateUnit::Minute, at("2026-12-05T10:01:00Z"));
        assert_ne!(w.key, next.key);
    }
}
