//! `Idempotency-Key` for requests other than governed actions (docs/architecture.md#surfaces: mutating
//! calls
//! accept one).
//!
//! A transport claims `(scope, key)` before running a request, where the scope is the
//! credential that sent it, so two callers never share a key. The first claim runs the
//! request and stores its response; a resend of the same request gets that response again
//! and causes nothing; a different request under the same key is refused. A claim whose
//! request never finished (the process stopped mid-request) is taken over after
//! [`ABANDONED_SECS`], and stored responses are forgotten after [`RETAIN_HOURS`].
//!
//! Governed actions keep their own claims inside the pipeline's transaction, where the
//! effect and the stored answer commit together.

use chrono::{DateTime, Duration, Utc};

use crate::error::Result;
use crate::sql::{Tx, for_update};
use crate::stored;

/// An unfinished claim older than this is treated as abandoned.
pub const ABANDONED_SECS: i64 = 60;
/// How long a stored response is replayed.
pub const RETAIN_HOURS: i64 = 24;

/// A stored response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub status: u16,
    /// The headers worth replaying (content type, ETag, location), as name and value.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What a claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Nobody has sent this key: run the request, then [`Gateway::finish_request`](crate::Gateway::finish_request).
    New,
    /// The first response to this key, to send again.
    Replay(Stored),
    /// The first request with this key is still running.
    InProgress,
    /// The key was used for a different request.
    Mismatch,
}

/// The claim: a new row when nobody holds the key, else what its row says, read under a lock
/// so that concurrent first claims on PostgreSQL give exactly one `New`.
pub(crate) fn claim(tx: &dyn Tx, scope: &str, key: &str, digest: &str, now: DateTime<Utc>) -> Result<Claim> {
    let inserted = tx.exec(
        "INSERT INTO request_idempotency (scope, idem_key, request_digest, status, created_at) VALUES (?, ?, ?, 0, ?) \
         ON CONFLICT (scope, idem_key) DO NOTHING",
        &[&scope, &key, &digest, &stored::ts(now)],
    )?;
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let row = tx.row(
        &format!(
            "SELECT request_digest, status, headers, body, created_at FROM request_idempotency \
             WHERE scope = ? AND idem_key = ?{}",
            for_update(tx)
        ),
        &[&scope, &key],
    )?;
    let abandoned = stored::ts(now - Duration::seconds(ABANDONED_SECS));
    if let Some(r) = row {
        let (claimed, status, created): (String, i64, String) = (r.get(0)?, r.get(1)?, r.get(4)?);
        if claimed != digest {
            return Ok(Claim::Mismatch);
        }
        if status == 0 && created > abandoned {
            return Ok(Claim::InProgress);
        }
        if status != 0 {
            return Ok(Claim::Replay(Stored {
                status: u16::try_from(status).map_err(|_| stored::corrupt("status", &status.to_string()))?,
                headers: stored::decode("answer's headers", &r.get::<String>(2)?)?,
                body: r.get(3)?,
            }));
        }
    }
    // Abandoned (or deleted since the insert): take it over.
    tx.exec(
        "INSERT INTO request_idempotency (scope, idem_key, request_digest, status, created_at) VALUES (?, ?, ?, 0, ?) \
         ON CONFLICT (scope, idem_key) DO UPDATE SET status = 0, created_at = excluded.created_at",
        &[&scope, &key, &digest, &stored::ts(now)],
    )?;
    Ok(Claim::New)
}

pub(crate) fn finish(tx: &dyn Tx, scope: &str, key: &str, response: &Stored) -> Result<()> {
    let headers = serde_json::to_string(&response.headers).expect("headers serialize");
    tx.exec(
        "UPDATE request_idempotency SET status = ?, headers = ?, body = ? WHERE scope = ? AND idem_key = ? AND status = 0",
        &[&i64::from(response.status), &headers, &response.body, &scope, &key],
    )?;
    Ok(())
}

pub(crate) fn release(tx: &dyn Tx, scope: &str, key: &str) -> Result<()> {
    tx.exec(
        "DELETE FROM request_idempotency WHERE scope = ? AND idem_key = ? AND status = 0",
        &[&scope, &key],
    )?;
    Ok(())
}

pub(crate) fn forget_old(tx: &dyn Tx, now: DateTime<Utc>) -> Result<usize> {
    let cutoff = stored::ts(now - Duration::hours(RETAIN_HOURS));
    Ok(tx.exec("DELETE FROM request_idempotency WHERE created_at < ?", &[&cutoff])? as usize)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::{TestDb, held_open};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_first_claims_run_the_request_once_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let now = Utc::now();
            let claims = (0..16).map(|_| {
                let db = db.clone();
                tokio::spawn(
                    async move { db.run(held_open(move |tx| claim(tx, "key_a", "k1", "d1", now))).await },
                )
            });
            let mut answers = Vec::new();
            for c in claims.collect::<Vec<_>>() {
                answers.push(c.await.unwrap().unwrap());
            }
            let new = answers.iter().filter(|a| **a == Claim::New).count();
            let waiting = answers.iter().filter(|a| **a == Claim::InProgress).count();
            assert_eq!((new, waiting), (1, 15), "{}: one claim runs, the others wait", db.name());
        }
    }

    #[tokio::test]
    async fn a_finished_claim_replays_and_an_abandoned_one_is_taken_over_on_both_engines() {
        for db in TestDb::both().await {
            let t0 = Utc::now();
            assert_eq!(db.run(move |tx| claim(tx, "s", "k", "d", t0)).await.unwrap(), Claim::New);
            let stored =
                Stored { status: 201, headers: vec![("etag".into(), "\"v1\"".into())], body: b"{}".to_vec() };
            let kept = stored.clone();
            db.run(move |tx| finish(tx, "s", "k", &kept)).await.unwrap();
            assert_eq!(
                db.run(move |tx| claim(tx, "s", "k", "d", t0)).await.unwrap(),
                Claim::Replay(stored),
                "{}",
                db.name()
            );
            assert_eq!(
                db.run(move |tx| claim(tx, "s", "k", "other", t0)).await.unwrap(),
                Claim::Mismatch,
                "{}",
                db.name()
            );
            assert_eq!(
                db.run(move |tx| claim(tx, "s2", "k", "d", t0)).await.unwrap(),
                Claim::New,
                "{}: scoped",
                db.name()
            );
            let late = t0 + Duration::seconds(ABANDONED_SECS + 1);
            assert_eq!(
                db.run(move |tx| claim(tx, "s2", "k", "d", late)).await.unwrap(),
                Claim::New,
                "{}: taken over",
                db.name()
            );
            db.run(|tx| release(tx, "s2", "k")).await.unwrap();
            let gone = t0 + Duration::hours(RETAIN_HOURS + 1);
            assert_eq!(
                db.run(move |tx| forget_old(tx, gone)).await.unwrap(),
                1,
                "{}: the old response goes",
                db.name()
            );
        }
    }
}
