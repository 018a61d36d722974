//! Per-profile indexes of the activity log and the ledger, filled in batches.
//!
//! An index keyed by profile takes its inserts at one place per profile, so with many agents
//! acting at once every commit dirtied one leaf page per agent: a third of the writer's time.
//! Instead, `activity_by_profile` and `ledger_by_account` hold the same pairs, keyed by a
//! small profile number (`profile_numbers`) so the rows are short, and the writer fills them
//! every [`INTERVAL`] from the rows above each table's mark, in key order, so each page is
//! written once per batch. Both tables are append-only and `seq` only
//! grows, so every row is either at or below the mark (and indexed) or above it (a short,
//! recent rowid range). Reads ask both halves in one statement, so one snapshot answers them:
//! nothing is missed or seen twice. The query plans are pinned by a test: the indexed half
//! is read in index order (no sort of the profile's history) and the newest half by rowid
//! above the mark (`+tenant_id` keeps the planner off the tenant index, which would scan the
//! tenant's whole history).

use rusqlite::Connection;

/// How often the writer indexes what was appended since the last time.
/// Rarely is better: the cost per row is the same, and a pass is a pause for the writer that
/// only the calls in flight at that moment feel.
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Indexes every row above the marks. Runs on the writer thread, inside a transaction.
pub(crate) fn index_tail(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "INSERT OR IGNORE INTO profile_numbers (profile_id)
           SELECT DISTINCT profile_id FROM activity
           WHERE seq > (SELECT seq FROM index_marks WHERE name = 'activity') AND profile_id IS NOT NULL;
         INSERT OR IGNORE INTO profile_numbers (profile_id)
           SELECT DISTINCT account_id FROM ledger_entries
           WHERE seq > (SELECT seq FROM index_marks WHERE name = 'ledger');
         INSERT INTO activity_by_profile (profile_no, seq)
           SELECT n.no, a.seq FROM activity a JOIN profile_numbers n ON n.profile_id = a.profile_id
           WHERE a.seq > (SELECT seq FROM index_marks WHERE name = 'activity')
           ORDER BY 1, 2;
         UPDATE index_marks SET seq = COALESCE((SELECT MAX(seq) FROM activity), seq) WHERE name = 'activity';
         INSERT INTO ledger_by_account (account_no, seq)
           SELECT n.no, e.seq FROM ledger_entries e JOIN profile_numbers n ON n.profile_id = e.account_id
           WHERE e.seq > (SELECT seq FROM index_marks WHERE name = 'ledger')
           ORDER BY 1, 2;
         UPDATE index_marks SET seq = COALESCE((SELECT MAX(seq) FROM ledger_entries), seq) WHERE name = 'ledger';",
    )
}

impl crate::Gateway {
    /// Indexes the newest rows now rather than at the writer's next interval (for tests and
    /// for a tidy shutdown; reads are correct either way).
    pub async fn index_recent(&self) -> crate::error::Result<()> {
        self.writer.run(|c| Ok(index_tail(c)?)).await
    }
}

/// `seq, b` as `i.seq, t.b`: `seq` taken from the index, so the index's order serves the
/// `ORDER BY` with no sort of all the profile's rows.
fn qualified(t: &str, columns: &str) -> String {
    columns
        .split(',')
        .map(|c| match c.trim() {
            "seq" => "i.seq".to_string(),
            c => format!("{t}.{c}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One profile's activity entries with `?3 < seq < ?4`, in `order` (`ASC` or `DESC`), at
/// most `?5` (binds: ?1 tenant, ?2 profile).
pub(crate) fn activity_of_profile(columns: &str, order: &str) -> String {
    let q = qualified("a", columns);
    format!(
        "SELECT {q} FROM activity_by_profile i JOIN activity a ON a.seq = i.seq \
           WHERE i.profile_no = (SELECT no FROM profile_numbers WHERE profile_id = ?2) \
           AND i.seq > ?3 AND i.seq < ?4 AND a.tenant_id = ?1 \
         UNION ALL \
         SELECT {columns} FROM activity WHERE seq > (SELECT seq FROM index_marks WHERE name = 'activity') \
           AND seq > ?3 AND seq < ?4 AND +tenant_id = ?1 AND profile_id = ?2 \
         ORDER BY seq {order} LIMIT ?5"
    )
}

/// One account's ledger entries with `seq > ?3` that pass `filter` (written over the entry's
/// own columns, qualified `e.`), oldest first, at most `?6` (binds: ?1 tenant, ?2 account).
pub(crate) fn ledger_of_account(columns: &str, filter: &str) -> String {
    let q = qualified("e", columns);
    let tail = columns.split(',').map(|c| format!("e.{}", c.trim())).collect::<Vec<_>>().join(", ");
    format!(
        "SELECT {q} FROM ledger_by_account i JOIN ledger_entries e ON e.seq = i.seq \
           WHERE i.account_no = (SELECT no FROM profile_numbers WHERE profile_id = ?2) \
           AND i.seq > ?3 AND e.tenant_id = ?1 AND {filter} \
         UNION ALL \
         SELECT {tail} FROM ledger_entries e WHERE e.seq > (SELECT seq FROM index_marks WHERE name = 'ledger') \
           AND e.seq > ?3 AND +e.tenant_id = ?1 AND e.account_id = ?2 AND {filter} \
         ORDER BY seq LIMIT ?6"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        for sql in [
            include_str!("../../migrations/sqlite/0001_foundation.sql"),
            include_str!("../../migrations/sqlite/0002_gateway_core.sql"),
            include_str!("../../migrations/sqlite/0003_deferred_indexes.sql"),
        ] {
            c.execute_batch(sql).unwrap();
        }
        c
    }

    fn plan(c: &Connection, sql: &str) -> String {
        let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let args: Vec<rusqlite::types::Value> = vec![rusqlite::types::Value::Null; n];
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3)).unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn per_profile_reads_neither_sort_a_history_nor_scan_a_tenant() {
        let c = schema();
        for order in ["ASC", "DESC"] {
            let p = plan(&c, &activity_of_profile("seq, tenant_id, detail", order));
            assert!(!p.contains("TEMP B-TREE") && !p.contains("activity_tenant"), "{order}:\n{p}");
            assert!(p.contains("rowid>?"), "the newest half reads by rowid:\n{p}");
        }
        let p =
            plan(&c, &ledger_of_account("seq, hold_id, created_at", "(?4 IS NULL OR e.created_at >= ?4)"));
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        assert!(p.contains("rowid>?"), "{p}");
    }
}
