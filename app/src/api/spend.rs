//! Server functions behind spend and caps: each profile's posted and pending totals against
//! its kit's caps with the burn rate and days to the cap, and one profile's ledger by period
//! with its daily chart.

use leptos::prelude::*;
use policy::Money;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpendRow {
    pub id: String,
    pub profile: String,
    pub depth: usize,
    /// Running totals of this account (itself and its sub-agents).
    pub posted: Money,
    pub pending: Money,
    pub kit_name: String,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    pub approve_above: Option<Money>,
    /// Average posted spend per day over the last [`BURN_WINDOW_DAYS`].
    pub burn_per_day: Money,
    /// At that rate, days until posted + pending reaches the hard cap.
    pub days_to_cap: Option<f64>,
    /// Each period limit of its kit in its current period, with the periods before.
    pub periods: Vec<PeriodRow>,
}

/// One period limit in its current period, as the spend page shows it (dates are the
/// tenant's, in its time zone).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodRow {
    /// `day`, `week` or `month`.
    pub every: String,
    /// "month", "week from sunday".
    pub label: String,
    pub current: PeriodBar,
    pub pending: Money,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    pub left: Option<Money>,
    pub burn_per_day: Money,
    /// RFC 3339: when the hard cap would be reached at this burn rate, within this period.
    pub cap_reached_at: Option<String>,
    /// RFC 3339: when the period starts again from zero.
    pub resets_at: String,
    /// The periods before, oldest first.
    pub previous: Vec<PeriodBar>,
}

/// One period's spend: posted and pending, from its first local day to the day after its
/// last.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodBar {
    pub first_day: String,
    pub end_day: String,
    pub used: Money,
}

#[cfg(feature = "ssr")]
impl From<&gateway::domain::periods::PeriodStanding> for PeriodRow {
    fn from(p: &gateway::domain::periods::PeriodStanding) -> PeriodRow {
        let bar = |s: &gateway::domain::periods::PeriodSpend| PeriodBar {
            first_day: s.first_day.to_string(),
            end_day: s.end_day.to_string(),
            used: s.posted.checked_add(s.pending).unwrap_or(Money::MAX),
        };
        let limit = policy::PeriodLimit {
            every: p.every,
            week_starts: p.week_starts,
            hard_cap: p.hard_cap,
            soft_cap: p.soft_cap,
        };
        PeriodRow {
            every: p.every.as_str().to_string(),
            label: limit.label(),
            current: bar(&p.current),
            pending: p.current.pending,
            hard_cap: p.hard_cap,
            soft_cap: p.soft_cap,
            left: p.left,
            burn_per_day: p.burn_per_day,
            cap_reached_at: p.cap_reached_at.map(|t| t.to_rfc3339()),
            resets_at: p.current.end.to_rfc3339(),
            previous: p.previous.iter().rev().map(bar).collect(),
        }
    }
}

/// The days the burn rate averages over.
pub const BURN_WINDOW_DAYS: u64 = 7;
/// The days the spend chart shows.
pub const CHART_DAYS: u64 = 30;

/// One day of the spend chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DayPoint {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub posted: Money,
}

/// The average spend per day over the last `window` days up to `today`, and at that rate
/// the days until `used` reaches `cap` (none without a cap or without spend).
pub fn burn_rate(
    days: &[(chrono::NaiveDate, Money)],
    today: chrono::NaiveDate,
    window: u64,
    used: Money,
    cap: Option<Money>,
) -> (Money, Option<f64>) {
    let first = today - chrono::Days::new(window.saturating_sub(1));
    let total: i64 = days.iter().filter(|(d, _)| *d >= first && *d <= today).map(|(_, m)| m.units()).sum();
    let per_day = Money::from_units(total / window.max(1) as i64).unwrap_or(Money::ZERO);
    let to_cap = cap.filter(|_| !per_day.is_zero()).map(|c| {
        let left = c.units().saturating_sub(used.units()).max(0);
        left as f64 / per_day.units() as f64
    });
    (per_day, to_cap)
}

/// `days` spread over the `n` days ending `today`, zero where nothing was spent.
pub fn chart_points(days: &[(chrono::NaiveDate, Money)], today: chrono::NaiveDate, n: u64) -> Vec<DayPoint> {
    (0..n)
        .rev()
        .map(|back| {
            let day = today - chrono::Days::new(back);
            let posted = days.iter().find(|(d, _)| *d == day).map_or(Money::ZERO, |(_, m)| *m);
            DayPoint { day: day.format("%Y-%m-%d").to_string(), posted }
        })
        .collect()
}

#[server]
pub async fn spend_overview() -> Result<Vec<SpendRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("spend").await?;
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(&tenant.id).await.map_err(to_fn_error)?;
    let today = chrono::Utc::now().date_naive();
    let since = today - chrono::Days::new(BURN_WINDOW_DAYS - 1);
    let mut rows = Vec::with_capacity(tree.len());
    for e in tree {
        let budget = gw.budget(&tenant.id, &e.profile.id).await.map_err(to_fn_error)?;
        let days = gw.daily_spend(&tenant.id, &e.profile.id, since).await.map_err(to_fn_error)?;
        rows.push((e, budget, days));
    }
    Ok(rows
        .into_iter()
        .map(|(e, budget, days)| {
            let totals = budget.totals;
            let kit = kits.iter().find(|k| k.kit.name == e.profile.kit_name).map(|k| &k.kit);
            let used = totals.posted.checked_add(totals.pending).unwrap_or(totals.posted);
            let (burn_per_day, days_to_cap) =
                burn_rate(&days, today, BURN_WINDOW_DAYS, used, kit.and_then(|k| k.limits.budget.hard_cap));
            SpendRow {
                burn_per_day,
                days_to_cap,
                id: e.profile.id.to_string(),
                posted: totals.posted,
                pending: totals.pending,
                profile: e.profile.name,
                depth: e.depth,
                kit_name: e.profile.kit_name.clone(),
                hard_cap: kit.and_then(|k| k.limits.budget.hard_cap),
                soft_cap: kit.and_then(|k| k.limits.budget.soft_cap),
                approve_above: kit.and_then(|k| k.limits.approve.above),
                periods: budget.periods.iter().map(PeriodRow::from).collect(),
            }
        })
        .collect())
}

/// The tenant's calendar as the spend page shows it: the zone its periods count in, a change
/// not yet in effect, and whether the viewer may change it (admins).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalendarView {
    pub time_zone: String,
    pub next_time_zone: Option<String>,
    /// RFC 3339.
    pub changes_at: Option<String>,
    pub can_edit: bool,
}

#[server]
pub async fn tenant_calendar() -> Result<CalendarView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("spend").await?;
    let s = gw.tenant_settings(&tenant.id).await.map_err(to_fn_error)?;
    Ok(CalendarView {
        time_zone: s.time_zone,
        next_time_zone: s.next_time_zone,
        changes_at: s.time_zone_changes_at.map(|t| t.to_rfc3339()),
        can_edit: user.has(gateway::Role::Admin),
    })
}

/// Sets the tenant's time zone (admins only), keeping its rate limit: it takes effect at the
/// current zone's next midnight, which the page then shows.
#[server(prefix = "/api", endpoint = "save_time_zone")]
pub async fn save_time_zone(time_zone: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{
        forms::{back_with_notice, form},
        session::require_roles,
    };
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "changing the time zone").await?;
        let rate_limit = gw.tenant_settings(&tenant.id).await.map_err(to_fn_error)?.rate_limit;
        let input =
            gateway::domain::tenants::SettingsInput { time_zone: time_zone.trim().to_string(), rate_limit };
        let s = gw.set_tenant_settings(&tenant.id, input, &user.username).await.map_err(to_fn_error)?;
        let done = match (s.next_time_zone, s.time_zone_changes_at) {
            (Some(z), Some(at)) => format!(
                "Budget periods count in {z} from {} (the current zone's next midnight).",
                at.to_rfc3339()
            ),
            _ => format!("Budget periods count in {}.", s.time_zone),
        };
        back_with_notice(&done).await;
        Ok(())
    })
    .await
}

/// One ledger entry as the spend page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    pub seq: i64,
    pub at: String,
    pub action: String,
    pub kind: String,
    pub pending_delta: String,
    pub posted_delta: String,
}

/// A page of one profile's ledger; `next` is the cursor of the following page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerPageView {
    pub profile: String,
    pub rows: Vec<LedgerRow>,
    pub next: Option<i64>,
    /// Posted spend per day over the last [`CHART_DAYS`].
    pub chart: Vec<DayPoint>,
}

/// The largest ledger page the console shows.
pub const LEDGER_PAGE: i64 = 50;

/// Parses an optional `YYYY-MM-DD` (start of that day, UTC) for the period filter.
#[cfg(feature = "ssr")]
pub fn day(v: &str, field: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, ServerFnError> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .map(|d| Some(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()))
        .map_err(|_| ServerFnError::new(format!("invalid_period: `{field}` is a date such as 2026-11-01")))
}

/// One profile's ledger entries in a period (`from` inclusive, `to` exclusive, whole days),
/// keyset-paged after `after`.
#[server]
pub async fn ledger_page(
    profile: String,
    from: String,
    to: String,
    after: Option<i64>,
) -> Result<LedgerPageView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("spend").await?;
    let id = gateway::ProfileId::parse(&profile)
        .ok_or_else(|| ServerFnError::new("not_found: no such agent profile"))?;
    let p = gw.profile(&tenant.id, &id).await.map_err(to_fn_error)?;
    let q = gateway::domain::ledger::LedgerQuery {
        from: day(&from, "from")?,
        to: day(&to, "to")?,
        after,
        limit: Some(LEDGER_PAGE),
    };
    let entries = gw.ledger_entries(&tenant.id, &id, &q, LEDGER_PAGE).await.map_err(to_fn_error)?;
    let next = (entries.len() as i64 == LEDGER_PAGE).then(|| entries.last().map(|e| e.seq)).flatten();
    let today = chrono::Utc::now().date_naive();
    let days = gw
        .daily_spend(&tenant.id, &id, today - chrono::Days::new(CHART_DAYS - 1))
        .await
        .map_err(to_fn_error)?;
    Ok(LedgerPageView {
        chart: chart_points(&days, today, CHART_DAYS),
        profile: p.name,
        next,
        rows: entries
            .into_iter()
            .map(|e| LedgerRow {
                seq: e.seq,
                at: e.created_at.to_rfc3339(),
                action: e.action,
                kind: e.kind,
                pending_delta: e.pending_delta,
                posted_delta: e.posted_delta,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn m(s: &str) -> Money {
        Money::parse(s).unwrap()
    }

    #[test]
    fn burn_rate_averages_the_window_and_projects_to_the_cap() {
        let days = [(d("2026-11-20"), m("100")), (d("2026-11-28"), m("14")), (d("2026-11-30"), m("0.00"))];
        // Only the last 7 days count: $14 over 7 days is $2 a day.
        let (per_day, to_cap) = burn_rate(&days, d("2026-11-30"), 7, m("40"), Some(m("50")));
        assert_eq!(per_day, m("2"));
        assert_eq!(to_cap, Some(5.0));
        assert_eq!(burn_rate(&days, d("2026-11-30"), 7, m("40"), None).1, None, "no cap, no projection");
        assert_eq!(burn_rate(&[], d("2026-11-30"), 7, m("40"), Some(m("50"))), (Money::ZERO, None));
        assert_eq!(burn_rate(&days, d("2026-11-30"), 7, m("60"), Some(m("50"))).1, Some(0.0), "over the cap");
    }

    #[test]
    fn chart_points_fill_every_day_oldest_first() {
        let days = [(d("2026-11-29"), m("3"))];
        let points = chart_points(&days, d("2026-11-30"), 3);
        let got: Vec<(&str, Money)> = points.iter().map(|p| (p.day.as_str(), p.posted)).collect();
        assert_eq!(
            got,
            vec![("2026-11-28", Money::ZERO), ("2026-11-29", m("3")), ("2026-11-30", Money::ZERO)]
        );
    }
}
