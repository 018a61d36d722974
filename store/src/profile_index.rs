//! Per-profile indexes of the activity log and the ledger, kept in a database of their own.
//!
//! An index keyed by profile takes its inserts at one place per profile, so with many agents
//! acting at once every commit dirtied one leaf page per agent: a third of the writer's time.
//! Instead, the pairs (profile number, seq) live in `activity_by_profile` and
//! `ledger_by_account` in a derived database beside the main one, attached as `idx` to every
//! connection. An indexer thread with its own connection copies the rows appended since each
//! table's mark, in key order, every [`INTERVAL`]. It writes only to `idx`, so it never takes
//! the main database's write lock and never pauses the writer; it only reads the main one.
//!
//! Both source tables are append-only and `seq` only grows, so every row is at or below its
//! table's mark (indexed) or above it (a short, recent rowid range). Reads ask both halves in
//! one statement. The statement's snapshots of the two databases may differ: an index row
//! whose source row that snapshot does not have yet is dropped by the join, and rows above
//! the mark come from the main table itself, so nothing is missed or seen twice. The query
//! plans are pinned by a test: the indexed half is read in index order (no sort of a
//! profile's history) and the newest half by rowid above the mark (`+tenant_id` keeps the
//! planner off the tenant index, which would scan the tenant's whole history).
//!
//! The index database is derived: if it is lost, or is ahead of the main database (a restored
//! backup), it is rebuilt from scratch.
//!
//! Retention deletes a tenant's oldest log entries and moves its checkpoint
//! (`log_checkpoints`), and deletes ledger entries of ended holds behind its ledger cut
//! (`ledger_cuts`); the indexer then drops their pairs ([`prune`]), so the index shrinks
//! with the log and the ledger instead of growing for ever. Reads join the pairs to the main
//! tables, so a pair not dropped yet is never read as an entry. The daily spend sums stay:
//! the spend page reads them.

use rusqlite::Connection;

use crate::sql::Engine;

/// How often the indexer copies what was appended since the last time.
pub const INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// Indexes every row above the marks, in one transaction on `idx`.
pub fn index_tail(c: &Connection) -> rusqlite::Result<()> {
    // Deferred: the main database is only read, so only `idx` is ever locked for writing.
    c.execute_batch(
        "BEGIN;
         INSERT OR IGNORE INTO idx.profile_numbers (profile_id)
           SELECT DISTINCT profile_id FROM main.activity
           WHERE seq > (SELECT seq FROM idx.index_marks WHERE name = 'activity') AND profile_id IS NOT NULL;
         INSERT OR IGNORE INTO idx.profile_numbers (profile_id)
           SELECT DISTINCT account_id FROM main.ledger_entries
           WHERE seq > (SELECT seq FROM idx.index_marks WHERE name = 'ledger');
         INSERT INTO idx.activity_by_profile (profile_no, seq)
           SELECT n.no, a.seq FROM main.activity a JOIN idx.profile_numbers n ON n.profile_id = a.profile_id
           WHERE a.seq > (SELECT seq FROM idx.index_marks WHERE name = 'activity')
           ORDER BY 1, 2;
         UPDATE idx.index_marks SET seq = COALESCE((SELECT MAX(seq) FROM main.activity), seq) WHERE name = 'activity';
         INSERT INTO idx.ledger_by_account (account_no, seq)
           SELECT n.no, e.seq FROM main.ledger_entries e JOIN idx.profile_numbers n ON n.profile_id = e.account_id
           WHERE e.seq > (SELECT seq FROM idx.index_marks WHERE name = 'ledger')
           ORDER BY 1, 2;
         INSERT INTO idx.spend_by_day (account_no, day, posted_units)
           SELECT n.no, substr(e.created_at, 1, 10), SUM(e.posted_delta)
           FROM main.ledger_entries e JOIN idx.profile_numbers n ON n.profile_id = e.account_id
           WHERE e.seq > (SELECT seq FROM idx.index_marks WHERE name = 'ledger') AND e.posted_delta <> 0
           GROUP BY 1, 2
           ON CONFLICT (account_no, day) DO UPDATE SET posted_units = posted_units + excluded.posted_units;
         INSERT INTO idx.ledger_days (account_no, day, first_seq, last_seq)
           SELECT n.no, substr(e.created_at, 1, 10), MIN(e.seq), MAX(e.seq)
           FROM main.ledger_entries e JOIN idx.profile_numbers n ON n.profile_id = e.account_id
           WHERE e.seq > (SELECT seq FROM idx.index_marks WHERE name = 'ledger')
           GROUP BY 1, 2
           ON CONFLICT (account_no, day) DO UPDATE SET first_seq = MIN(first_seq, excluded.first_seq),
             last_seq = MAX(last_seq, excluded.last_seq);
         UPDATE idx.index_marks SET seq = COALESCE((SELECT MAX(seq) FROM main.ledger_entries), seq) WHERE name = 'ledger';
         COMMIT;",
    )
    .inspect_err(|_| {
        let _ = c.execute_batch("ROLLBACK");
    })
}

/// Drops the `activity_by_profile` pairs of entries retention deleted (at or before their
/// tenant's checkpoint), and the `ledger_by_account` pairs of ledger entries it deleted (at or
/// before the tenant's ledger cut, and gone), in one transaction on `idx`, when a checkpoint
/// or a cut moved since the last time; how many it dropped.
pub fn prune(c: &Connection) -> rusqlite::Result<usize> {
    let (cut, pruned): (i64, i64) = c.query_row(
        "SELECT COALESCE((SELECT SUM(seq) FROM main.log_checkpoints), 0) \
              + COALESCE((SELECT SUM(through_seq) FROM main.ledger_cuts), 0), \
                (SELECT checkpoints FROM idx.prune_marks WHERE id = 1)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if cut == pruned {
        return Ok(0);
    }
    c.execute_batch("BEGIN")?;
    let dropped = c
        .execute(PRUNE_ACTIVITY, [])
        .and_then(|a| c.execute(PRUNE_LEDGER, []).map(|l| a + l))
        .and_then(|n| c.execute("UPDATE idx.prune_marks SET checkpoints = ?1 WHERE id = 1", [cut]).map(|_| n))
        .and_then(|n| c.execute_batch("COMMIT").map(|()| n));
    dropped.inspect_err(|_| {
        let _ = c.execute_batch("ROLLBACK");
    })
}

const PRUNE_ACTIVITY: &str = "DELETE FROM idx.activity_by_profile WHERE (profile_no, seq) IN ( \
    SELECT a.profile_no, a.seq FROM idx.profile_numbers n \
    JOIN main.agent_profiles p ON p.id = n.profile_id \
    JOIN main.log_checkpoints k ON k.tenant_id = p.tenant_id \
    JOIN idx.activity_by_profile a ON a.profile_no = n.no AND a.seq <= k.seq)";

const PRUNE_LEDGER: &str = "DELETE FROM idx.ledger_by_account WHERE (account_no, seq) IN ( \
    SELECT a.account_no, a.seq FROM idx.profile_numbers n \
    JOIN main.agent_profiles p ON p.id = n.profile_id \
    JOIN main.ledger_cuts k ON k.tenant_id = p.tenant_id \
    JOIN idx.ledger_by_account a ON a.account_no = n.no AND a.seq <= k.through_seq \
    WHERE NOT EXISTS (SELECT 1 FROM main.ledger_entries e WHERE e.seq = a.seq))";

/// Empties the index when it is ahead of the database it indexes (the database was replaced
/// by an older copy), or when it predates a table it now keeps, so the next pass rebuilds it.
fn check_marks(c: &Connection) -> rusqlite::Result<()> {
    let ahead: bool = c.query_row(
        "SELECT (SELECT seq FROM idx.index_marks WHERE name = 'activity') > COALESCE((SELECT MAX(seq) FROM main.activity), 0) \
             OR (SELECT seq FROM idx.index_marks WHERE name = 'ledger') > COALESCE((SELECT MAX(seq) FROM main.ledger_entries), 0)",
        [],
        |r| r.get(0),
    )?;
    let incomplete: bool = c.query_row(
        "SELECT EXISTS (SELECT 1 FROM idx.ledger_by_account) AND (NOT EXISTS (SELECT 1 FROM idx.ledger_days) \
             OR (NOT EXISTS (SELECT 1 FROM idx.spend_by_day) AND EXISTS (SELECT 1 FROM main.ledger_entries WHERE posted_delta <> 0)))",
        [],
        |r| r.get(0),
    )?;
    if ahead || incomplete {
        tracing::warn!(ahead, incomplete, "the index database does not match the database; rebuilding it");
        c.execute_batch(
            "BEGIN; DELETE FROM idx.activity_by_profile; DELETE FROM idx.ledger_by_account; \
             DELETE FROM idx.spend_by_day; DELETE FROM idx.ledger_days; UPDATE idx.index_marks SET seq = 0; \
             UPDATE idx.prune_marks SET checkpoints = 0; COMMIT;",
        )?;
    }
    Ok(())
}

type Request = std::sync::mpsc::Sender<()>;

/// A handle to the indexer thread; it stops when the last handle drops.
#[derive(Clone, Debug)]
pub struct Indexer {
    tx: std::sync::mpsc::Sender<Request>,
}

impl Indexer {
    pub fn start(store: &crate::Store) -> crate::Result<Indexer> {
        let conn = store.sqlite_side("the indexer")?.open_indexer_connection()?;
        check_marks(&conn)?;
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("naive-indexer".into())
            .spawn(move || {
                crate::writer::background_priority();
                loop {
                    let waiting = match rx.recv_timeout(INTERVAL) {
                        Ok(done) => Some(done),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    if let Err(e) = index_tail(&conn) {
                        tracing::warn!(error = %e, "indexing the newest rows failed; reads still find them");
                    }
                    if let Err(e) = prune(&conn) {
                        tracing::warn!(error = %e, "dropping the index pairs of deleted entries failed; trying again");
                    }
                    if let Some(done) = waiting {
                        let _ = done.send(());
                    }
                }
            })
            .map_err(|e| {
                crate::Error::invalid("indexer_start_failed", format!("cannot start the indexer thread: {e}"))
            })?;
        Ok(Indexer { tx })
    }
}

impl Indexer {
    /// Indexes the newest rows now rather than at the next interval, and returns when done.
    pub async fn catch_up(&self) -> crate::Result<()> {
        let (done, wait) = std::sync::mpsc::channel();
        let stopped =
            || crate::Error::unavailable("indexer_stopped", "the indexer has stopped; try again shortly", 5);
        self.tx.send(done).map_err(|_| stopped())?;
        tokio::task::spawn_blocking(move || wait.recv()).await.map_err(|_| stopped())?.map_err(|_| stopped())
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
pub fn activity_of_profile(columns: &str, order: &str) -> String {
    let q = qualified("a", columns);
    format!(
        "SELECT {q} FROM idx.activity_by_profile i JOIN activity a ON a.seq = i.seq \
           WHERE i.profile_no = (SELECT no FROM idx.profile_numbers WHERE profile_id = ?2) \
           AND i.seq > ?3 AND i.seq < ?4 AND a.tenant_id = ?1 \
         UNION ALL \
         SELECT {columns} FROM activity WHERE seq > (SELECT seq FROM idx.index_marks WHERE name = 'activity') \
           AND seq > ?3 AND seq < ?4 AND +tenant_id = ?1 AND profile_id = ?2 \
         ORDER BY seq {order} LIMIT ?5"
    )
}

/// One account's ledger entries with `seq > ?3` created in the period `[?4, ?5)` (either end
/// may be NULL for open), oldest first, at most `?6` (binds: ?1 tenant, ?2 account).
///
/// Entries carry no time index; instead the indexer keeps each account's first and last seq
/// per UTC day (`ledger_days`), which bounds the indexed half to the period's days, so a
/// period read costs the period's entries, not the account's whole history. The bounds are
/// the smallest first seq of the days from `?4` on and the largest last seq of the days up
/// to `?5`, so they hold even if the clock once stepped back between two entries.
pub fn ledger_of_account(columns: &str) -> String {
    let q = qualified("e", columns);
    let tail = columns.split(',').map(|c| format!("e.{}", c.trim())).collect::<Vec<_>>().join(", ");
    let account = "(SELECT no FROM idx.profile_numbers WHERE profile_id = ?2)";
    let mark = "(SELECT seq FROM idx.index_marks WHERE name = 'ledger')";
    let period = "(?4 IS NULL OR e.created_at >= ?4) AND (?5 IS NULL OR e.created_at < ?5)";
    format!(
        "SELECT {q} FROM idx.ledger_by_account i JOIN ledger_entries e ON e.seq = i.seq \
           WHERE i.account_no = {account} \
           AND i.seq > CASE WHEN ?4 IS NULL THEN ?3 ELSE MAX(?3, COALESCE((SELECT MIN(d.first_seq) - 1 \
               FROM idx.ledger_days d WHERE d.account_no = {account} AND d.day >= substr(?4, 1, 10)), {mark})) END \
           AND i.seq <= CASE WHEN ?5 IS NULL THEN {mark} ELSE COALESCE((SELECT MAX(d.last_seq) \
               FROM idx.ledger_days d WHERE d.account_no = {account} AND d.day <= substr(?5, 1, 10)), 0) END \
           AND e.tenant_id = ?1 AND {period} \
         UNION ALL \
         SELECT {tail} FROM ledger_entries e WHERE e.seq > {mark} \
           AND e.seq > ?3 AND +e.tenant_id = ?1 AND e.account_id = ?2 AND {period} \
         ORDER BY seq LIMIT ?6"
    )
}

/// One account's posted spend per UTC day from `?3` (a `YYYY-MM-DD` day) on: the indexer's
/// daily sums below the mark and the newest entries above it, in one statement (binds: ?1
/// tenant, ?2 account). A day can appear in both halves; the caller adds them.
pub const SPEND_BY_DAY: &str = "
SELECT d.day, d.posted_units FROM idx.spend_by_day d
  WHERE d.account_no = (SELECT no FROM idx.profile_numbers WHERE profile_id = ?2) AND d.day >= ?3
UNION ALL
SELECT substr(e.created_at, 1, 10), SUM(e.posted_delta) FROM ledger_entries e
  WHERE e.seq > (SELECT seq FROM idx.index_marks WHERE name = 'ledger')
    AND +e.tenant_id = ?1 AND e.account_id = ?2 AND substr(e.created_at, 1, 10) >= ?3
  GROUP BY 1";

/// [`activity_of_profile`] on `engine`.
pub fn activity_for(engine: Engine, columns: &str, order: &str) -> String {
    match engine {
        Engine::Sqlite => activity_of_profile(columns, order),
        Engine::Postgres => postgres::activity_of_profile(columns, order),
    }
}

/// [`ledger_of_account`] on `engine`.
pub fn ledger_for(engine: Engine, columns: &str) -> String {
    match engine {
        Engine::Sqlite => ledger_of_account(columns),
        Engine::Postgres => postgres::ledger_of_account(columns),
    }
}

/// [`SPEND_BY_DAY`] on `engine`.
pub fn spend_by_day(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => SPEND_BY_DAY,
        Engine::Postgres => postgres::SPEND_BY_DAY,
    }
}

/// The same three reads on PostgreSQL, which keeps its per-profile indexes in place
/// (`activity_by_profile`, `ledger_by_account` in `migrations/postgres`): same binds, same
/// rows.
pub mod postgres {
    /// [`super::activity_of_profile`].
    pub fn activity_of_profile(columns: &str, order: &str) -> String {
        format!(
            "SELECT {columns} FROM activity WHERE tenant_id = ?1 AND profile_id = ?2 \
             AND seq > ?3 AND seq < ?4 ORDER BY seq {order} LIMIT ?5"
        )
    }

    /// [`super::ledger_of_account`].
    pub fn ledger_of_account(columns: &str) -> String {
        format!(
            "SELECT {columns} FROM ledger_entries WHERE tenant_id = ?1 AND account_id = ?2 AND seq > ?3 \
             AND (?4 IS NULL OR created_at >= ?4) AND (?5 IS NULL OR created_at < ?5) ORDER BY seq LIMIT ?6"
        )
    }

    /// [`super::SPEND_BY_DAY`].
    pub const SPEND_BY_DAY: &str = "
SELECT substr(created_at, 1, 10), CAST(SUM(posted_delta) AS BIGINT) FROM ledger_entries
  WHERE tenant_id = ?1 AND account_id = ?2 AND substr(created_at, 1, 10) >= ?3 GROUP BY 1";
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
        c.execute_batch("ATTACH DATABASE ':memory:' AS idx").unwrap();
        c.execute_batch(
            &crate::database::INDEX_SCHEMA
                .replace("EXISTS ", "EXISTS idx.")
                .replace("INTO index_marks", "INTO idx.index_marks"),
        )
        .unwrap();
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
        let p = plan(&c, &ledger_of_account("seq, hold_id, created_at"));
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        assert!(p.contains("rowid>?"), "{p}");
        assert!(
            p.contains("SEARCH i USING PRIMARY KEY (account_no=? AND seq>? AND seq<?)"),
            "a period reads a seq range:\n{p}"
        );
        assert!(
            p.contains("SEARCH d USING PRIMARY KEY (account_no=? AND day>?)"),
            "the period's days by key:\n{p}"
        );
        let p = plan(&c, SPEND_BY_DAY);
        assert!(p.contains("rowid>?"), "the newest entries read by rowid:\n{p}");
        assert!(p.contains("SEARCH d USING PRIMARY KEY (account_no=? AND day>?)"), "daily sums by key:\n{p}");
    }
}
