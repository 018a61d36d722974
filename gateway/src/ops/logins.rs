//! Sign-in attempts as operations: counting a failed attempt and clearing them on success.

use chrono::Utc;

use crate::Gateway;
use crate::domain::logins::{clear_attempts, count_attempt};
use crate::error::Result;

impl Gateway {
    /// Counts a sign-in attempt for `username`. `Ok(Err(secs))` when the window's attempts
    /// are used up: the seconds to wait.
    pub async fn count_login_attempt(&self, username: &str) -> Result<std::result::Result<(), u64>> {
        let username = username.to_string();
        let counted = self.write(move |c| count_attempt(c, &username, Utc::now())).await?;
        if counted.is_err() {
            self.sign_in_failed("rate_limited");
        }
        Ok(counted)
    }

    /// Counts a refused console sign-in for `/metrics` (`password`, `rate_limited`).
    pub(crate) fn sign_in_failed(&self, kind: &'static str) {
        self.metrics.with(|f| f.sign_in_failures.get_or_create(&crate::audit::metrics::One { kind }).inc());
    }

    /// Clears `username`'s attempts after a successful sign-in.
    pub async fn login_succeeded(&self, username: &str) -> Result<()> {
        let username = username.to_string();
        self.write(move |c| clear_attempts(c, &username)).await
    }
}
