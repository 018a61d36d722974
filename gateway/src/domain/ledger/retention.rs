//! The ledger under a tenant's retention (docs/archive.md#the-ledger): the entries of ended
//! holds are deleted in seq order once their day is older than the cut the caller computes
//! (gone from the log, and past the spend page's window), and what they moved is carried in
//! `ledger_carried` per account and tenant-local day. The running totals, the day totals and
//! the holds are untouched, so no cap moves; an account's entries plus its carried sums still
//! equal its totals, which is what [`super::check`] verifies.
//!
//! A sweep walks the tenant's entries from its cut (`ledger_cuts`) in chunks of seqs, and
//! stops at the first entry whose day is not yet old enough. An entry of a hold still pending
//! when the sweep passes stays for good, with its hold (rare: a hold ends within hours, and
//! the cut is at least a month old).

use crate::error::Result;
use crate::ids::TenantId;
use crate::sql::Tx;

/// The fewest days the ledger keeps whatever the tenant's retention: the spend page's chart
/// and burn rate read a profile's last 30 days of posted entries.
pub const LEDGER_FLOOR_DAYS: i64 = 31;

/// The entries of the tenant in `?2 < seq <= ?3` whose hold has ended.
const SWEPT: &str = "e.tenant_id = ?1 AND e.seq > ?2 AND e.seq <= ?3 \
     AND EXISTS (SELECT 1 FROM holds h WHERE h.id = e.hold_id AND h.status <> 'pending')";

/// One chunk of the sweep, in the caller's transaction: deletes the tenant's swept entries
/// among the next `limit` seqs after its cut whose day is before `cut_day`, carries their
/// sums, and moves the cut. How many entries it deleted, and whether the cut moved (the
/// caller stops when it did not).
pub(crate) fn forget_entries(
    tx: &dyn Tx,
    tenant: &TenantId,
    cut_day: &str,
    limit: i64,
) -> Result<(u64, bool)> {
    crate::audit::activity::lock_tenant(tx, tenant)?;
    let t = tenant.as_str();
    let from: i64 = tx
        .row("SELECT through_seq FROM ledger_cuts WHERE tenant_id = ?", &[&t])?
        .map_or(Ok(0), |r| r.get(0))?;
    // The newest entry of all is never deleted: SQLite numbers a new row one past the
    // largest left, and an entry's seq only grows (the index and the cut count on it).
    let newest: i64 =
        tx.row("SELECT COALESCE(MAX(seq), 0) FROM ledger_entries", &[])?.map_or(Ok(0), |r| r.get(0))?;
    let mut upto = (from + limit).min(newest - 1);
    let young: Option<i64> = tx
        .row(
            "SELECT MIN(seq) FROM ledger_entries WHERE tenant_id = ?1 AND seq > ?2 AND seq <= ?3 \
             AND COALESCE(day, substr(created_at, 1, 10)) >= ?4",
            &[&t, &from, &upto, &cut_day],
        )?
        .map_or(Ok(None), |r| r.get(0))?;
    if let Some(y) = young {
        upto = y - 1;
    }
    if upto <= from {
        return Ok((0, false));
    }
    tx.exec(
        &format!(
            "INSERT INTO ledger_carried (account_id, day, tenant_id, posted_units, pending_units) \
             SELECT e.account_id, COALESCE(e.day, ''), ?1, SUM(e.posted_delta), SUM(e.pending_delta) \
             FROM ledger_entries e WHERE {SWEPT} GROUP BY e.account_id, COALESCE(e.day, '') \
             ON CONFLICT (account_id, day) DO UPDATE SET \
               posted_units = ledger_carried.posted_units + excluded.posted_units, \
               pending_units = ledger_carried.pending_units + excluded.pending_units"
        ),
        &[&t, &from, &upto],
    )?;
    let deleted = tx.exec(&format!("DELETE FROM ledger_entries AS e WHERE {SWEPT}"), &[&t, &from, &upto])?;
    tx.exec(
        "INSERT INTO ledger_cuts (tenant_id, through_seq) VALUES (?, ?) \
         ON CONFLICT (tenant_id) DO UPDATE SET through_seq = excluded.through_seq",
        &[&t, &upto],
    )?;
    Ok((deleted, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestDb;

    /// Two tenants' holds and entries, in seq order: (tenant, hold, status, day, kind,
    /// pending delta, posted delta).
    const ENTRIES: [(&str, &str, &str, &str, &str, i64, i64); 7] = [
        ("ten_a", "hld_1", "posted", "2026-01-01", "hold", 100, 0),
        ("ten_a", "hld_2", "pending", "2026-01-01", "hold", 50, 0),
        ("ten_a", "hld_1", "posted", "2026-01-01", "post", -100, 90),
        ("ten_b", "hld_3", "posted", "2026-01-01", "post", 0, 70),
        ("ten_a", "hld_4", "posted", "2026-03-01", "post", 0, 30),
        ("ten_a", "hld_5", "posted", "2026-01-02", "post", 0, 20),
        ("ten_b", "hld_6", "posted", "2026-01-01", "post", 0, 10),
    ];

    fn seed(c: &dyn Tx) -> Result<()> {
        for t in ["ten_a", "ten_b"] {
            c.exec(
                "INSERT INTO tenants (id, name, credit_units, created_at) VALUES (?, ?, 0, 'x')",
                &[&t, &t],
            )?;
            c.exec(
                "INSERT INTO agent_profiles (id, tenant_id, name, kit_name, status, runtime_state, created_at) \
                 VALUES (?, ?, 'agent', 'Default', 'active', 'running', 'x')",
                &[&format!("prf_{t}"), &t],
            )?;
        }
        for (t, hold, status, day, kind, pending, posted) in ENTRIES {
            let profile = format!("prf_{t}");
            c.exec(
                "INSERT INTO holds (id, tenant_id, profile_id, chain, action, amount_units, credit_units, kit_version, status, created_at, day) \
                 VALUES (?1, ?2, ?3, ?3, 'cards.charge', 100, 0, 1, ?4, 'x', ?5) ON CONFLICT (id) DO NOTHING",
                &[&hold, &t, &profile, &status, &day],
            )?;
            c.exec(
                "INSERT INTO ledger_entries (tenant_id, account_id, hold_id, action, kit_version, kind, pending_delta, posted_delta, created_at, day) \
                 VALUES (?, ?, ?, 'cards.charge', 1, ?, ?, ?, 'x', ?)",
                &[&t, &profile, &hold, &kind, &pending, &posted, &day],
            )?;
        }
        Ok(())
    }

    /// A carried row: account, day, posted, pending.
    type Carried = (String, String, i64, i64);

    fn left(c: &dyn Tx) -> Result<(Vec<i64>, Vec<Carried>)> {
        let seqs = c.rows("SELECT seq FROM ledger_entries ORDER BY seq", &[])?;
        let carried = c.rows(
            "SELECT account_id, day, posted_units, pending_units FROM ledger_carried ORDER BY account_id, day",
            &[],
        )?;
        Ok((
            seqs.iter().map(|r| r.get(0)).collect::<::store::Result<_>>()?,
            carried
                .iter()
                .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .collect::<Result<_>>()?,
        ))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sweep_deletes_old_entries_of_ended_holds_carries_them_and_stops_at_a_young_one() {
        for db in TestDb::both().await {
            db.run(seed).await.unwrap();
            let a = TenantId::from_db("ten_a".into());
            let sweep = move |c: &dyn Tx| forget_entries(c, &a, "2026-02-01", 100);
            // The first of ten_a's entries not old enough (seq 5) stops the sweep before it;
            // the entries of the pending hold (2) and of the other tenant (4) stay.
            assert_eq!(db.run(sweep.clone()).await.unwrap(), (2, true), "{}", db.name());
            let (seqs, carried) = db.run(left).await.unwrap();
            assert_eq!(seqs, [2, 4, 5, 6, 7], "{}", db.name());
            assert_eq!(carried, [("prf_ten_a".into(), "2026-01-01".into(), 90, 0)], "{}", db.name());
            // Until that entry is old enough, the sweep does not move.
            assert_eq!(db.run(sweep).await.unwrap(), (0, false), "{}", db.name());
            // Once it is, it goes with the next old one (6), but never the newest of all (7).
            let a = TenantId::from_db("ten_a".into());
            let later = move |c: &dyn Tx| forget_entries(c, &a, "2026-04-01", 100);
            assert_eq!(db.run(later).await.unwrap(), (2, true), "{}", db.name());
            let (seqs, carried) = db.run(left).await.unwrap();
            assert_eq!(seqs, [2, 4, 7], "{}", db.name());
            let want: Vec<Carried> = vec![
                ("prf_ten_a".into(), "2026-01-01".into(), 90, 0),
                ("prf_ten_a".into(), "2026-01-02".into(), 20, 0),
                ("prf_ten_a".into(), "2026-03-01".into(), 30, 0),
            ];
            assert_eq!(carried, want, "{}", db.name());
        }
    }
}
