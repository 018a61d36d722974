//! Request idempotency as operations: claiming a request key, storing its answer, releasing a
//! failed claim, and forgetting old keys (requests' and governed calls', after 24 hours).

use chrono::Utc;

use crate::Gateway;
use crate::domain::idempotency::{Claim, Stored, claim, finish, forget_old, release};
use crate::domain::reserve::claims::forget_answered_before;
use crate::error::Result;

/// The most answered claims one transaction deletes.
const FORGET_CHUNK: i64 = 5_000;

impl Gateway {
    /// Claims `key` for a request with `digest`, sent with credential `scope`.
    pub async fn claim_request(&self, scope: &str, key: &str, digest: &str) -> Result<Claim> {
        let (scope, key, digest) = (scope.to_string(), key.to_string(), digest.to_string());
        self.write(move |c| claim(c, &scope, &key, &digest, Utc::now())).await
    }

    /// Stores the response to a claimed request, to replay to resends.
    pub async fn finish_request(&self, scope: &str, key: &str, response: Stored) -> Result<()> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.write(move |c| finish(c, &scope, &key, &response)).await
    }

    /// Drops a claim whose request failed in a way worth retrying (a 5xx), so a resend runs.
    pub async fn release_request(&self, scope: &str, key: &str) -> Result<()> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.write(move |c| release(c, &scope, &key)).await
    }

    /// Forgets stored responses older than [`RETAIN_HOURS`](crate::domain::idempotency::RETAIN_HOURS): those of
    /// requests, then the answers of governed calls, in chunks of [`FORGET_CHUNK`] so no
    /// transaction holds the writer long. The sweeper calls it.
    pub async fn forget_old_requests(&self) -> Result<usize> {
        let mut forgotten = self.write(|c| forget_old(c, Utc::now())).await?;
        let cutoff = Utc::now() - chrono::Duration::hours(crate::domain::idempotency::RETAIN_HOURS);
        loop {
            let n = self.write(move |c| forget_answered_before(c, cutoff, FORGET_CHUNK)).await?;
            forgotten += n;
            if n < FORGET_CHUNK as usize {
                return Ok(forgotten);
            }
        }
    }
}
