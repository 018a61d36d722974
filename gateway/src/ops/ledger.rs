//! The ledger as operations: budgets and daily spend against caps, a ledger check, and the
//! entries of an account.

use policy::{Kit, Money};

use crate::Gateway;
use crate::domain::ledger::{Budget, ENTRY_COLUMNS, InvariantReport, LedgerEntry, LedgerQuery, check, money};
use crate::domain::periods;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    pub async fn budget(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Budget> {
        let p = self.profile(tenant, profile).await?;
        let links = self.links(tenant, &p.id).await?;
        let chain: Vec<ProfileId> = links.iter().map(|l| l.profile.clone()).collect();
        let mut totals = Vec::with_capacity(chain.len());
        for id in &chain {
            totals.push(check::totals(&self.store, id).await?);
        }
        let kits: Vec<Kit> = links.into_iter().map(|l| l.kit).collect();
        let clock = self.tenant_clock(tenant).await?;
        let (now, limits) = (self.now(), &kits[0].limits.budget.periods);
        let from = periods::first_day_shown(limits, clock.calendar.day(now));
        let days = if limits.is_empty() {
            Vec::new()
        } else {
            periods::account_days(&self.store, &p.id, from).await?
        };
        Ok(Budget {
            time_zone: clock.calendar.zone_at(now).name().to_string(),
            periods: periods::standings(limits, &clock.calendar, now, &days),
            profile: p.id,
            totals: totals[0],
            hard_cap: kits[0].limits.budget.hard_cap,
            soft_cap: kits[0].limits.budget.soft_cap,
            pools: chain[1..]
                .iter()
                .zip(&totals[1..])
                .zip(&kits[1..])
                .map(|((id, t), k)| (id.clone(), *t, k.limits.budget.hard_cap))
                .collect(),
        })
    }

    /// One profile's posted spend (its own and its sub-agents') per UTC day from `since` on,
    /// oldest first; days without spend are left out. Reads daily sums kept by the indexer,
    /// so its cost follows the number of days, not the number of entries.
    pub async fn daily_spend(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        since: chrono::NaiveDate,
    ) -> Result<Vec<(chrono::NaiveDate, Money)>> {
        self.profile(tenant, profile).await?;
        let since = since.format("%Y-%m-%d").to_string();
        let rows: Vec<(String, i64)> = self
            .store
            .all(crate::store::profile_index::spend_by_day(self.store.kind()), &[tenant, profile, &since])
            .await?;
        let mut days = std::collections::BTreeMap::new();
        for (day, units) in rows {
            let day = chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d").map_err(|e| {
                Error::internal("corrupt_ledger", format!("a ledger day could not be read: {e}"))
            })?;
            *days.entry(day).or_insert(0i64) += units;
        }
        Ok(days.into_iter().filter(|(_, u)| *u != 0).map(|(d, u)| (d, money(u))).collect())
    }

    /// Checks the ledger's invariants for a tenant: every account's entries sum to its running
    /// totals, pending totals equal the open holds beneath it, posted + pending stays within
    /// each hard cap, and no hold has more than one ending entry per account.
    pub async fn check_ledger(&self, tenant: &TenantId) -> Result<InvariantReport> {
        let mut v = Vec::new();
        for a in check::account_sums(&self.store, tenant).await? {
            v.extend(a.mismatch());
            let kits = self.effective_kits(tenant, std::slice::from_ref(&a.account)).await?;
            v.extend(self.period_overruns(&a.account, &kits[0]).await?);
            if let Some(cap) = kits[0].limits.budget.hard_cap
                && a.posted + a.pending > cap.units()
            {
                let (account, posted, pending) = (&a.account, a.posted, a.pending);
                v.push(format!(
                    "{account}: posted {posted} + pending {pending} exceeds hard cap {}",
                    cap.units()
                ));
            }
        }
        v.extend(check::day_mismatch(&self.store, tenant).await?);
        v.extend(check::holds_ended_twice(&self.store, tenant).await?);
        v.extend(check::credit_mismatch(&self.store, tenant).await?);
        Ok(InvariantReport { violations: v })
    }
}

impl Gateway {
    /// What `kit`'s period and rate limits stand at for a call of `action` by `profile` (or
    /// by a new agent, with no spend) at `at`, in the tenant's calendar: for the kit editor's
    /// simulator, which decides a draft kit on them with the same engine.
    pub async fn limit_views(
        &self,
        tenant: &TenantId,
        profile: Option<&ProfileId>,
        kit: &Kit,
        action: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(Vec<policy::PeriodView>, Vec<policy::RateView>)> {
        let clock = self.tenant_clock(tenant).await?;
        let days = match (profile, periods::first_day_needed(&[kit], at.date_naive())) {
            (Some(p), Some(from)) => periods::account_days(&self.store, p, from).await?,
            _ => Vec::new(),
        };
        let views = periods::period_views(&[kit], &clock.calendar, clock.calendar.day(at), &days);
        let Some(p) = profile else { return Ok((views, Vec::new())) };
        let mut windows = periods::rate_windows(p, kit, clock.rate, action, at);
        let keys: Vec<&str> = windows.iter().map(|w| w.key.as_str()).collect();
        let counts = crate::domain::reserve::rate_counts(&self.store, tenant, &keys).await?;
        periods::fill_counts(&mut windows, &counts);
        Ok((views, windows.into_iter().map(|w| w.view).collect()))
    }

    /// A wall-clock moment in the tenant's time zone (`2026-12-31T23:50`) as an instant; a
    /// time the zone skips (a DST gap) is read as the first that exists after it.
    pub async fn tenant_moment(
        &self,
        tenant: &TenantId,
        local: &str,
    ) -> Result<chrono::DateTime<chrono::Utc>> {
        let not_a_moment = || {
            Error::invalid(
                "invalid_moment",
                format!(
                    "`{local}` is not a moment between the years 1970 and 9999; write it as 2026-12-31T23:50"
                ),
            )
        };
        let naive = chrono::NaiveDateTime::parse_from_str(local.trim(), "%Y-%m-%dT%H:%M")
            .map_err(|_| not_a_moment())?;
        // Periods are found by date arithmetic a year past the calendar's end would overflow.
        if !(1970..=9999).contains(&chrono::Datelike::year(&naive)) {
            return Err(not_a_moment());
        }
        let zone = self.tenant_clock(tenant).await?.calendar.zone_at(self.now());
        use chrono::TimeZone;
        (0..3)
            .find_map(|h| zone.from_local_datetime(&(naive + chrono::Duration::hours(h))).earliest())
            .map(|t| t.with_timezone(&chrono::Utc))
            .ok_or_else(|| {
                Error::invalid("invalid_moment", format!("`{local}` does not exist in {}", zone.name()))
            })
    }

    /// Every period of `kit`'s period limits in which `account`'s posted and pending days
    /// sum past the hard cap.
    async fn period_overruns(&self, account: &ProfileId, kit: &Kit) -> Result<Vec<String>> {
        let limits = &kit.limits.budget.periods;
        if limits.is_empty() {
            return Ok(Vec::new());
        }
        let days = periods::account_days(&self.store, account, chrono::NaiveDate::MIN).await?;
        let mut v = Vec::new();
        for (i, l) in limits.iter().enumerate() {
            let Some(cap) = l.hard_cap else { continue };
            let starts: std::collections::BTreeSet<_> =
                days.iter().map(|d| periods::period_dates(l, d.day)).collect();
            for (first, end) in starts {
                let (posted, pending) = periods::sum_days(&days, 0, first, end);
                if posted.units() + pending.units() > cap.units() {
                    v.push(format!("{account}: {posted} + {pending} in the period from {first} passes limits.budget.periods[{i}]'s hard cap {cap}"));
                }
            }
        }
        Ok(v)
    }

    /// One profile's ledger entries, oldest first, in a period, after a cursor.
    pub async fn ledger_entries(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        q: &LedgerQuery,
        max: i64,
    ) -> Result<Vec<LedgerEntry>> {
        self.profile(tenant, profile).await?;
        let sql = crate::store::profile_index::ledger_for(self.store.kind(), ENTRY_COLUMNS);
        let (after, limit) = (q.after.unwrap_or(0), q.limit.unwrap_or(max).clamp(1, max));
        Ok(self.store.all(&sql, &[tenant, profile, &after, &q.from, &q.to, &limit]).await?)
    }
}
