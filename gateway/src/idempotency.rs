//! `Idempotency-Key` for requests other than governed actions (SPEC §12: mutating calls
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

use chrono::{Duration, Utc};
use rusqlite::{OptionalExtension, params};

use crate::Gateway;
use crate::db;
use crate::error::Result;

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
    /// Nobody has sent this key: run the request, then [`Gateway::finish_request`].
    New,
    /// The first response to this key, to send again.
    Replay(Stored),
    /// The first request with this key is still running.
    InProgress,
    /// The key was used for a different request.
    Mismatch,
}

impl Gateway {
    /// Claims `key` for a request with `digest`, sent with credential `scope`.
    pub async fn claim_request(&self, scope: &str, key: &str, digest: &str) -> Result<Claim> {
        let (scope, key, digest) = (scope.to_string(), key.to_string(), digest.to_string());
        self.writer
            .run(move |c| {
                let now = Utc::now();
                let row: Option<(String, i64, String, Vec<u8>, String)> = c
                    .prepare_cached(
                        "SELECT request_digest, status, headers, body, created_at FROM request_idempotency \
                         WHERE scope = ? AND idem_key = ?",
                    )?
                    .query_row(params![scope, key], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .optional()?;
                let abandoned = db::ts(now - Duration::seconds(ABANDONED_SECS));
                match row {
                    Some((d, _, _, _, _)) if d != digest => Ok(Claim::Mismatch),
                    Some((_, 0, _, _, created)) if created > abandoned => Ok(Claim::InProgress),
                    Some((_, status, headers, body, _)) if status != 0 => Ok(Claim::Replay(Stored {
                        status: u16::try_from(status).unwrap_or(500),
                        headers: serde_json::from_str(&headers).unwrap_or_default(),
                        body,
                    })),
                    _ => {
                        c.prepare_cached(
                            "INSERT INTO request_idempotency (scope, idem_key, request_digest, status, created_at) VALUES (?, ?, ?, 0, ?) \
                             ON CONFLICT(scope, idem_key) DO UPDATE SET status = 0, created_at = excluded.created_at",
                        )?
                        .execute(params![scope, key, digest, db::ts(now)])?;
                        Ok(Claim::New)
                    }
                }
            })
            .await
    }

    /// Stores the response to a claimed request, to replay to resends.
    pub async fn finish_request(&self, scope: &str, key: &str, response: Stored) -> Result<()> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.writer
            .run(move |c| {
                c.prepare_cached(
                    "UPDATE request_idempotency SET status = ?, headers = ?, body = ? WHERE scope = ? AND idem_key = ? AND status = 0",
                )?
                .execute(params![
                    i64::from(response.status),
                    serde_json::to_string(&response.headers).expect("headers serialize"),
                    response.body,
                    scope,
                    key
                ])?;
                Ok(())
            })
            .await
    }

    /// Drops a claim whose request failed in a way worth retrying (a 5xx), so a resend runs.
    pub async fn release_request(&self, scope: &str, key: &str) -> Result<()> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.writer
            .run(move |c| {
                c.prepare_cached(
                    "DELETE FROM request_idempotency WHERE scope = ? AND idem_key = ? AND status = 0",
                )?
                .execute(params![scope, key])?;
                Ok(())
            })
            .await
    }

    /// Forgets stored responses older than [`RETAIN_HOURS`]. The sweeper calls it.
    pub async fn forget_old_requests(&self) -> Result<usize> {
        self.writer
            .run(|c| {
                let cutoff = db::ts(Utc::now() - Duration::hours(RETAIN_HOURS));
                Ok(c.prepare_cached("DELETE FROM request_idempotency WHERE created_at < ?")?
                    .execute([cutoff])?)
            })
            .await
    }
}
