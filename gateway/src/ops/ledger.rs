//! The ledger as operations: budgets and daily spend against caps, a ledger check, and the
//! entries of an account.

use policy::{Kit, Money};

use crate::Gateway;
use crate::domain::ledger::{
    Budget, ENTRY_COLUMNS, InvariantReport, LedgerEntry, LedgerQuery, Totals, money,
};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    pub async fn budget(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Budget> {
        let p = self.profile(tenant, profile).await?;
        let links = self.links(tenant, &p.id).await?;
        let chain: Vec<ProfileId> = links.iter().map(|l| l.profile.clone()).collect();
        let mut totals = Vec::with_capacity(chain.len());
        for id in &chain {
            let (posted, pending): (i64, i64) = self
                .store
                .one("SELECT posted_units, pending_units FROM budget_accounts WHERE profile_id = ?", &[id])
                .await?;
            totals.push(Totals { posted: money(posted), pending: money(pending) });
        }
        let kits: Vec<Kit> = links.into_iter().map(|l| l.kit).collect();
        Ok(Budget {
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
        let rows: Vec<(String, i64, i64, i64, i64)> = self
            .store
            .all(
                "SELECT a.profile_id, a.posted_units, a.pending_units, \
                 CAST(COALESCE(s.posted, 0) AS BIGINT), CAST(COALESCE(s.pending, 0) AS BIGINT) \
                 FROM budget_accounts a LEFT JOIN ( \
                   SELECT account_id, SUM(posted_delta) AS posted, SUM(pending_delta) AS pending \
                   FROM ledger_entries WHERE tenant_id = ?1 GROUP BY account_id \
                 ) s ON s.account_id = a.profile_id WHERE a.tenant_id = ?1",
                &[tenant],
            )
            .await?;
        for (account, posted, pending, sum_posted, sum_pending) in &rows {
            if posted != sum_posted || pending != sum_pending {
                v.push(format!(
                    "{account}: totals {posted}/{pending} but entries sum to {sum_posted}/{sum_pending}"
                ));
            }
            let id = ProfileId::from_db(account.clone());
            let kits = self.effective_kits(tenant, &[id]).await?;
            if let Some(cap) = kits[0].limits.budget.hard_cap
                && posted + pending > cap.units()
            {
                v.push(format!(
                    "{account}: posted {posted} + pending {pending} exceeds hard cap {}",
                    cap.units()
                ));
            }
        }
        let twice: Vec<(String, String, i64)> = self
            .store
            .all(
                "SELECT hold_id, account_id, COUNT(*) FROM ledger_entries WHERE tenant_id = ? AND kind != 'hold' \
                 GROUP BY hold_id, account_id HAVING COUNT(*) > 1",
                &[tenant],
            )
            .await?;
        for (hold, account, n) in twice {
            v.push(format!("hold {hold} ended {n} times on {account}"));
        }
        let (credit_pending, open_credit): (i64, i64) = self
            .store
            .one(
                "SELECT credit_pending_units, CAST(COALESCE((SELECT SUM(credit_units) FROM holds \
                 WHERE tenant_id = t.id AND status = 'pending'), 0) AS BIGINT) FROM tenants t WHERE id = ?",
                &[tenant],
            )
            .await?;
        if credit_pending != open_credit {
            v.push(format!("credit pending {credit_pending} but open holds reserve {open_credit}"));
        }
        Ok(InvariantReport { violations: v })
    }
}

impl Gateway {
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
