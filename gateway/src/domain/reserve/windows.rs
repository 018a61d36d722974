//! The `rate_counts` table: how many calls each rate window has counted. The reserve job
//! counts a call that passed its rate check in each of its windows ([`count_statement`]); the
//! sweeper forgets windows that have ended; the ledger page reads where an agent stands.

use chrono::{DateTime, Utc};

use crate::domain::periods::{self, Window};
use crate::error::Result;
use crate::ids::TenantId;
use crate::sql::{Statement, Tx};

/// The upsert that counts a call in each of `windows`, if it has any (a window two limits
/// share counts it once).
pub(crate) fn count_statement(tenant: &TenantId, windows: &[Window]) -> Option<Statement> {
    let keys = periods::distinct_keys(windows);
    if keys.is_empty() {
        return None;
    }
    let rows = vec!["(?, ?, 1, ?)"; keys.len()].join(", ");
    let sql = format!(
        "INSERT INTO rate_counts AS r (tenant_id, window_key, calls, ends_at) VALUES {rows} \
         ON CONFLICT (tenant_id, window_key) DO UPDATE SET calls = r.calls + 1"
    );
    let mut args: Vec<Box<dyn crate::sql::ToValue>> = Vec::with_capacity(3 * keys.len());
    for (key, ends_at) in keys {
        args.extend([
            Box::new(tenant.as_str().to_string()) as Box<dyn crate::sql::ToValue>,
            Box::new(key.to_string()),
            Box::new(ends_at),
        ]);
    }
    Some(Statement::new(sql, args))
}

/// The upsert that counts every window of `moves` by the calls that counted in it, each
/// window once (a batch's kept calls, [`crate::domain::reserve::book`]), if any did.
pub(crate) fn counted_together(moves: &[crate::domain::ledger::Moves]) -> Option<Statement> {
    let mut counts: std::collections::BTreeMap<(&TenantId, &str), (i64, i64)> = Default::default();
    for m in moves {
        for (key, ends_at) in &m.windows {
            counts.entry((&m.tenant, key.as_str())).or_insert((*ends_at, 0)).1 += 1;
        }
    }
    if counts.is_empty() {
        return None;
    }
    let rows = vec!["(?, ?, ?, ?)"; counts.len()].join(", ");
    let sql = format!(
        "INSERT INTO rate_counts AS r (tenant_id, window_key, calls, ends_at) VALUES {rows} \
         ON CONFLICT (tenant_id, window_key) DO UPDATE SET calls = r.calls + excluded.calls"
    );
    let mut args: Vec<Box<dyn crate::sql::ToValue>> = Vec::with_capacity(4 * counts.len());
    for ((tenant, key), (ends_at, calls)) in counts {
        args.extend([
            Box::new(tenant.as_str().to_string()) as Box<dyn crate::sql::ToValue>,
            Box::new(key.to_string()),
            Box::new(calls),
            Box::new(ends_at),
        ]);
    }
    Some(Statement::new(sql, args))
}

/// Forgets the call counts of rate windows that ended more than a minute before `now`: no
/// call counts toward them again (a window's key names its number).
pub(crate) fn forget_ended_windows(c: &dyn Tx, now: DateTime<Utc>) -> Result<()> {
    c.exec("DELETE FROM rate_counts WHERE ends_at < ?", &[&(now.timestamp() - 60)])?;
    Ok(())
}

/// The calls counted so far in each of the rate windows `keys` that has any, outside a job
/// (the ledger page's read of where an agent stands).
pub(crate) async fn rate_counts(
    store: &crate::store::Store,
    tenant: &TenantId,
    keys: &[&str],
) -> Result<Vec<(String, i64)>> {
    let mut counts = Vec::new();
    for key in keys {
        let sql = "SELECT window_key, calls FROM rate_counts WHERE tenant_id = ? AND window_key = ?";
        counts.extend(store.opt::<(String, i64)>(sql, &[tenant, key]).await?);
    }
    Ok(counts)
}
