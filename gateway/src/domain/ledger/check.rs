//! The ledger's reads outside jobs, for its own check (`Gateway::check_ledger`), a budget and
//! an explanation: the running totals of an account and the credit left, those totals beside
//! what the account's entries sum to, holds ended more than once, and the tenant's credit
//! beside its open holds. Reads only; each finding is a
//! sentence naming what is wrong.

use crate::error::Result;
use crate::ids::{ProfileId, TenantId};
use crate::store::Store;

use super::{Totals, money};

/// Each account's day totals beside what its entries of that day sum to, with what retention
/// carried of that day ([`super::retention`]): a finding for every day where they differ (a hold counted twice, or in another day than its own).
pub(crate) async fn day_mismatch(store: &Store, tenant: &TenantId) -> Result<Vec<String>> {
    let rows: Vec<(String, String, i64, i64, i64, i64)> = store
        .all(
            "SELECT d.profile_id, d.day, d.posted_units, d.pending_units, \
                    CAST(COALESCE(SUM(e.posted_delta), 0) + COALESCE(c.posted_units, 0) AS BIGINT), \
                    CAST(COALESCE(SUM(e.pending_delta), 0) + COALESCE(c.pending_units, 0) AS BIGINT) \
             FROM budget_days d JOIN budget_accounts a ON a.profile_id = d.profile_id \
             LEFT JOIN ledger_carried c ON c.account_id = d.profile_id AND c.day = d.day \
             LEFT JOIN ledger_entries e ON e.account_id = d.profile_id AND e.day = d.day \
             WHERE a.tenant_id = ? \
             GROUP BY d.profile_id, d.day, d.posted_units, d.pending_units, c.posted_units, c.pending_units",
            &[tenant],
        )
        .await?;
    Ok(rows
        .into_iter()
        .filter(|(_, _, p, q, sp, sq)| p != sp || q != sq)
        .map(|(account, day, p, q, sp, sq)| {
            format!("{account} on {day}: day totals {p}/{q} but entries sum to {sp}/{sq}")
        })
        .collect())
}

/// An account's running totals beside the sums of its entries, in units.
pub(crate) struct AccountSums {
    pub(crate) account: ProfileId,
    pub(crate) posted: i64,
    pub(crate) pending: i64,
    pub(crate) sum_posted: i64,
    pub(crate) sum_pending: i64,
}

impl AccountSums {
    /// The finding when the totals and the entries disagree.
    pub(crate) fn mismatch(&self) -> Option<String> {
        let AccountSums { account, posted, pending, sum_posted, sum_pending } = self;
        (posted != sum_posted || pending != sum_pending).then(|| {
            format!("{account}: totals {posted}/{pending} but entries sum to {sum_posted}/{sum_pending}")
        })
    }
}

/// One account's running totals.
pub(crate) async fn totals(store: &Store, account: &ProfileId) -> Result<Totals> {
    let (posted, pending): (i64, i64) = store
        .one("SELECT posted_units, pending_units FROM budget_accounts WHERE profile_id = ?", &[account])
        .await?;
    Ok(Totals { posted: money(posted), pending: money(pending) })
}

/// Every account of `tenant` with its totals and the sums of its entries, with what retention
/// carried of its deleted entries ([`super::retention`]).
pub(crate) async fn account_sums(store: &Store, tenant: &TenantId) -> Result<Vec<AccountSums>> {
    let rows: Vec<(String, i64, i64, i64, i64)> = store
        .all(
            "SELECT a.profile_id, a.posted_units, a.pending_units, \
             CAST(COALESCE(s.posted, 0) AS BIGINT), CAST(COALESCE(s.pending, 0) AS BIGINT) \
             FROM budget_accounts a LEFT JOIN ( \
               SELECT account_id, SUM(posted) AS posted, SUM(pending) AS pending FROM ( \
                 SELECT account_id, posted_delta AS posted, pending_delta AS pending \
                 FROM ledger_entries WHERE tenant_id = ?1 \
                 UNION ALL SELECT account_id, posted_units, pending_units \
                 FROM ledger_carried WHERE tenant_id = ?1 \
               ) u GROUP BY account_id \
             ) s ON s.account_id = a.profile_id WHERE a.tenant_id = ?1",
            &[tenant],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|(account, posted, pending, sum_posted, sum_pending)| AccountSums {
            account: ProfileId::from_db(account),
            posted,
            pending,
            sum_posted,
            sum_pending,
        })
        .collect())
}

/// A finding for every hold that ended more than once on an account.
pub(crate) async fn holds_ended_twice(store: &Store, tenant: &TenantId) -> Result<Vec<String>> {
    let twice: Vec<(String, String, i64)> = store
        .all(
            "SELECT hold_id, account_id, COUNT(*) FROM ledger_entries WHERE tenant_id = ? AND kind != 'hold' \
             GROUP BY hold_id, account_id HAVING COUNT(*) > 1",
            &[tenant],
        )
        .await?;
    Ok(twice
        .into_iter()
        .map(|(hold, account, n)| format!("hold {hold} ended {n} times on {account}"))
        .collect())
}

/// The finding when the tenant's pending credit is not what its open holds reserve.
pub(crate) async fn credit_mismatch(store: &Store, tenant: &TenantId) -> Result<Option<String>> {
    let (credit_pending, open_credit): (i64, i64) = store
        .one(
            "SELECT credit_pending_units, CAST(COALESCE((SELECT SUM(credit_units) FROM holds \
             WHERE tenant_id = t.id AND status = 'pending'), 0) AS BIGINT) FROM tenants t WHERE id = ?",
            &[tenant],
        )
        .await?;
    Ok((credit_pending != open_credit)
        .then(|| format!("credit pending {credit_pending} but open holds reserve {open_credit}")))
}
