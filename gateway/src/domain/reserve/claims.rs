//! The `idempotency` table: an agent's `Idempotency-Key` claims on governed calls. A call
//! with a key claims it in its reserve job (in flight, under its hold, or with its answer
//! when it ends there); the settle replaces the claim with the answer, or forgets it when the
//! call ended without one, so a resend runs. A repeated key is answered from here. An answer
//! is kept for [`RETAIN_HOURS`](crate::domain::idempotency::RETAIN_HOURS), as every stored
//! response is ([`forget_answered_before`]); a claim still in flight is kept until it ends.

use chrono::Utc;

use crate::domain::calls::{ActionResponse, Answer, Disposition};
use crate::error::{Error, Result};
use crate::ids::ProfileId;
use crate::sql::{Tx, lock_key};
use crate::stored;

/// The stored first answer to `key` from `profile`, if there is one; a key used for another
/// call (`digest` differs) or one whose first call is still running is refused. On PostgreSQL,
/// calls with the same key take turns from here to commit, so the second finds the first's
/// row instead of both inserting one.
pub(crate) fn answer(
    c: &dyn Tx,
    profile: &ProfileId,
    key: &str,
    digest: &str,
) -> Result<Option<ActionResponse>> {
    lock_key(c, &["action idempotency", profile.as_str(), key])?;
    let row = c.row(
        "SELECT request_digest, status, response FROM idempotency WHERE profile_id = ? AND idempotency_key = ?",
        &[&profile.as_str(), &key],
    )?;
    let Some(r) = row else { return Ok(None) };
    let (stored_digest, status, response): (String, i64, Option<String>) = (r.get(0)?, r.get(1)?, r.get(2)?);
    if stored_digest != digest {
        return Err(Error::Conflict {
            code: "idempotency_key_reused",
            message: "this Idempotency-Key was used for a different call; use a new key for a new call"
                .into(),
        });
    }
    let Some(d) = Disposition::from_i64(status) else {
        return Err(Error::Conflict {
            code: "idempotency_in_progress",
            message: "the first call with this Idempotency-Key is still running; poll again shortly".into(),
        });
    };
    let body = Answer::read_back(d, response.as_deref().unwrap_or_default())?;
    Ok(Some(ActionResponse { disposition: d, body, replayed: true }))
}

/// Forgets the in-progress Idempotency-Key claim of a hold that ended without an answer, so a
/// resend runs.
pub(crate) fn forget_claim(c: &dyn Tx, hold: &str) -> Result<()> {
    c.exec("DELETE FROM idempotency WHERE status = 0 AND hold_id = ?", &[&hold])?;
    Ok(())
}

/// Replaces the in-progress idempotency claim of `hold` with the call's answer.
pub(crate) fn finish_idempotency(c: &dyn Tx, hold: &str, d: Disposition, body: &Answer) -> Result<()> {
    c.exec(
        "UPDATE idempotency SET status = ?, response = ?, hold_id = NULL WHERE status = 0 AND hold_id = ?",
        &[&d.as_i64(), &body.to_string(), &hold],
    )?;
    Ok(())
}

/// What an Idempotency-Key's row first holds: the call's answer, or the hold of the call
/// still in flight (status 0), replaced by its answer when it settles.
pub(crate) enum First<'a> {
    Answer(Disposition, &'a str),
    InFlight(&'a str),
}

pub(crate) fn store_idempotency(
    c: &dyn Tx,
    profile: &ProfileId,
    key: Option<&str>,
    digest: &str,
    first: First,
) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    let (status, response, hold) = match first {
        First::Answer(d, body) => (d.as_i64(), Some(body), None),
        First::InFlight(hold) => (0, None, Some(hold)),
    };
    c.exec(
        "INSERT INTO idempotency (profile_id, idempotency_key, request_digest, status, response, hold_id, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[&profile.as_str(), &key, &digest, &status, &response, &hold, &stored::ts(Utc::now())],
    )?;
    Ok(())
}

/// Deletes up to `limit` answered claims made before `cutoff`, oldest first; how many. A claim
/// still in flight (status 0) is kept whatever its age: its call has not ended.
pub(crate) fn forget_answered_before(c: &dyn Tx, cutoff: chrono::DateTime<Utc>, limit: i64) -> Result<usize> {
    let n = c.exec(
        "DELETE FROM idempotency WHERE (profile_id, idempotency_key) IN ( \
           SELECT profile_id, idempotency_key FROM idempotency \
           WHERE created_at < ? AND status <> 0 ORDER BY created_at LIMIT ?)",
        &[&stored::ts(cutoff), &limit],
    )?;
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::testing::TestDb;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_older_than_the_cutoff_are_forgotten_and_claims_in_flight_kept_on_both_engines() {
        for db in TestDb::both().await {
            let now = Utc::now();
            db.run(move |c| {
                let rows = [("old-answer", 1, now - Duration::hours(30)), ("old-claim", 0, now - Duration::hours(30)),
                    ("new-answer", 1, now - Duration::hours(1))];
                for (key, status, at) in rows {
                    // An answer has its response; a claim in flight names its hold instead.
                    let (response, hold) = if status == 0 { (None, Some("hld_x")) } else { (Some("{}"), None) };
                    c.exec(
                        "INSERT INTO idempotency (profile_id, idempotency_key, request_digest, status, response, hold_id, created_at) \
                         VALUES ('prf_x', ?, 'd', ?, ?, ?, ?)",
                        &[&key, &status, &response, &hold, &stored::ts(at)],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
            let cutoff = now - Duration::hours(24);
            let n = db.run(move |c| forget_answered_before(c, cutoff, 1_000)).await.unwrap();
            assert_eq!(n, 1, "{}", db.name());
            let left: Vec<String> = db
                .run(|c| {
                    let rows =
                        c.rows("SELECT idempotency_key FROM idempotency ORDER BY idempotency_key", &[])?;
                    rows.iter().map(|r| Ok(r.get(0)?)).collect::<Result<Vec<_>>>()
                })
                .await
                .unwrap();
            assert_eq!(left, ["new-answer", "old-claim"], "{}", db.name());
        }
    }
}
