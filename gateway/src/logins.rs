//! The sign-in limit: at most [`MAX_FAILED_LOGINS`] attempts per username in a
//! [`LOGIN_WINDOW_SECS`] window, counted before the password is checked (so attempts sent in
//! parallel cannot all be checked before the first failure counts) and cleared by a
//! successful sign-in.
//!
//! Guarantees: the count lives in the database and each attempt is counted in one writer job,
//! so every instance on the database enforces the same limit (a per-process count let an
//! attacker spread guesses over instances and get five per instance).

use chrono::{Duration, Utc};
use rusqlite::{OptionalExtension, params};

use crate::Gateway;
use crate::db;
use crate::error::Result;

/// Failed sign-ins allowed per username within a window.
pub const MAX_FAILED_LOGINS: i64 = 5;
/// The window's length.
pub const LOGIN_WINDOW_SECS: i64 = 5 * 60;

impl Gateway {
    /// Counts a sign-in attempt for `username`. `Ok(Err(secs))` when the window's attempts
    /// are used up: the seconds to wait.
    pub async fn count_login_attempt(&self, username: &str) -> Result<std::result::Result<(), u64>> {
        let username = username.to_string();
        self.writer
            .run(move |c| {
                let now = Utc::now();
                let row: Option<(i64, String)> = c
                    .prepare_cached("SELECT attempts, window_start FROM login_attempts WHERE username = ?")?
                    .query_row([&username], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let window = Duration::seconds(LOGIN_WINDOW_SECS);
                let (attempts, start) = match row {
                    Some((n, s)) if db::parse_ts(&s) + window > now => (n, db::parse_ts(&s)),
                    _ => (0, now),
                };
                if attempts >= MAX_FAILED_LOGINS {
                    let left = (start + window - now).num_seconds().max(1);
                    return Ok(Err(left as u64));
                }
                c.prepare_cached(
                    "INSERT INTO login_attempts (username, attempts, window_start) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (username) DO UPDATE SET attempts = ?2, window_start = ?3",
                )?
                .execute(params![username, attempts + 1, db::ts(start)])?;
                Ok(Ok(()))
            })
            .await
    }

    /// Clears `username`'s attempts after a successful sign-in.
    pub async fn login_succeeded(&self, username: &str) -> Result<()> {
        let username = username.to_string();
        self.writer
            .run(move |c| {
                c.prepare_cached("DELETE FROM login_attempts WHERE username = ?")?.execute([&username])?;
                Ok(())
            })
            .await
    }
}

/// Forgets windows that have ended (the sweeper calls it).
pub(crate) fn forget_ended(c: &rusqlite::Connection, now: chrono::DateTime<Utc>) -> Result<()> {
    let cutoff = now - Duration::seconds(LOGIN_WINDOW_SECS);
    c.prepare_cached("DELETE FROM login_attempts WHERE window_start <= ?")?.execute([db::ts(cutoff)])?;
    Ok(())
}
