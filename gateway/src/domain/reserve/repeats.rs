//! The `refusal_repeats` table: how often a profile has been refused the same call (same
//! action, same arguments), so a refusal can say it is a repeat and an agent that keeps
//! retrying is stopped.

use chrono::Utc;

use crate::error::{Error, Result};
use crate::ids::ProfileId;
use crate::sql::Tx;
use crate::stored;

/// Counts an identical refusal and returns how many there have been.
pub(crate) fn count_repeat(c: &dyn Tx, profile: &ProfileId, action: &str, args_digest: &str) -> Result<u32> {
    let n: i64 = c
        .row(
            "INSERT INTO refusal_repeats AS r (profile_id, action, args_digest, count, last_at) VALUES (?, ?, ?, 1, ?) \
             ON CONFLICT (profile_id, action, args_digest) DO UPDATE SET count = r.count + 1, last_at = excluded.last_at RETURNING count",
            &[&profile.as_str(), &action, &args_digest, &stored::ts(Utc::now())],
        )?
        .ok_or_else(|| Error::internal("write_failed", "the repeat count was not written; try again"))?
        .get(0)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}
