//! Request idempotency as operations: claiming a request key, storing its answer, releasing a
//! failed claim, and forgetting old keys.

use chrono::Utc;

use crate::Gateway;
use crate::domain::idempotency::{Claim, Stored, claim, finish, forget_old, release};
use crate::error::Result;

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

    /// Forgets stored responses older than [`RETAIN_HOURS`](crate::domain::idempotency::RETAIN_HOURS). The sweeper calls it.
    pub async fn forget_old_requests(&self) -> Result<usize> {
        self.write(|c| forget_old(c, Utc::now())).await
    }
}
