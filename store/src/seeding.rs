//! Direct access to an SQLite file that no gateway has open, for a benchmark that seeds a
//! large history faster than the gateway's own operations would: one transaction on a
//! connection of its own, through the same statement interface ([`Tx`]) jobs use, then the
//! write-ahead logs folded back into the files.
//!
//! Nothing here runs in the gateway itself; it writes rows without the rules, so only a
//! benchmark's fresh database may be seeded this way.

use crate::Result;
use crate::sql::Tx;

/// Runs `f` in one transaction on the SQLite file at `path`: all of its writes commit, or
/// none do and its error returns.
pub fn sqlite_batch<T>(path: &str, f: impl FnOnce(&dyn Tx) -> Result<T>) -> Result<T> {
    let mut c = crate::database::open_rusqlite(path)?;
    c.busy_timeout(std::time::Duration::from_secs(30))?;
    let tx = c.transaction()?;
    let value = f(&*tx)?;
    tx.commit()?;
    Ok(value)
}

/// Folds the write-ahead logs of the database at `path` and of its index (`{path}-index`)
/// back into their files, so a server started on them does not spend its first seconds
/// checkpointing what the seeding wrote.
pub fn sqlite_checkpoint(path: &str) -> Result<()> {
    let c = crate::database::open_rusqlite(path)?;
    c.execute("ATTACH DATABASE ? AS idx", [format!("{path}-index")])?;
    c.execute_batch("PRAGMA main.wal_checkpoint(TRUNCATE); PRAGMA idx.wal_checkpoint(TRUNCATE);")?;
    Ok(())
}
