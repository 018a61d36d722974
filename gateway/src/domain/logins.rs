//! The sign-in limit: at most [`MAX_FAILED_LOGINS`] attempts per username in a
//! [`LOGIN_WINDOW_SECS`] window, counted before the password is checked (so attempts sent in
//! parallel cannot all be checked before the first failure counts) and cleared by a
//! successful sign-in.
//!
//! Guarantees: the count lives in the database and each attempt is counted in one writer job,
//! so every instance on the database enforces the same limit (a per-process count let an
//! attacker spread guesses over instances and get five per instance).

use chrono::{DateTime, Duration, Utc};

use crate::error::Result;
use crate::sql::Tx;
use crate::stored;

/// Failed sign-ins allowed per username within a window.
pub const MAX_FAILED_LOGINS: i64 = 5;
/// The window's length.
pub const LOGIN_WINDOW_SECS: i64 = 5 * 60;

/// Counts an attempt at `now`, unless the window's are used up: then the seconds to wait.
pub(crate) fn count_attempt(
    tx: &dyn Tx,
    username: &str,
    now: DateTime<Utc>,
) -> Result<std::result::Result<(), u64>> {
    // On PostgreSQL a username's attempts take turns from here to commit: two read at once,
    // both saw the same count and wrote the same next one, so parallel guesses outran the limit.
    crate::sql::lock_key(tx, &["login attempts", username])?;
    let row = tx.row("SELECT attempts, window_start FROM login_attempts WHERE username = ?", &[&username])?;
    let window = Duration::seconds(LOGIN_WINDOW_SECS);
    let (attempts, start) = match row {
        Some(r) => match stored::parse_ts(&r.get::<String>(1)?)? {
            start if start + window > now => (r.get::<i64>(0)?, start),
            _ => (0, now),
        },
        None => (0, now),
    };
    if attempts >= MAX_FAILED_LOGINS {
        let left = (start + window - now).num_seconds().max(1);
        return Ok(Err(left as u64));
    }
    tx.exec(
        "INSERT INTO login_attempts (username, attempts, window_start) VALUES (?1, ?2, ?3) \
         ON CONFLICT (username) DO UPDATE SET attempts = ?2, window_start = ?3",
        &[&username, &(attempts + 1), &stored::ts(start)],
    )?;
    Ok(Ok(()))
}

pub(crate) fn clear_attempts(tx: &dyn Tx, username: &str) -> Result<()> {
    tx.exec("DELETE FROM login_attempts WHERE username = ?", &[&username])?;
    Ok(())
}

/// Forgets windows that have ended (the sweeper calls it).
pub(crate) fn forget_ended(tx: &dyn Tx, now: DateTime<Utc>) -> Result<()> {
    let cutoff = now - Duration::seconds(LOGIN_WINDOW_SECS);
    tx.exec("DELETE FROM login_attempts WHERE window_start <= ?", &[&stored::ts(cutoff)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestDb;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parallel_attempts_are_each_counted_on_both_engines() {
        for db in TestDb::both().await {
            let db = std::sync::Arc::new(db);
            let now = Utc::now();
            let tries: Vec<_> = (0..12)
                .map(|_| {
                    let db = db.clone();
                    tokio::spawn(async move {
                        db.run(crate::testing::held_open(move |tx| count_attempt(tx, "eve", now)))
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut allowed = 0;
            for t in tries {
                allowed += usize::from(t.await.unwrap().is_ok());
            }
            assert_eq!(
                allowed,
                MAX_FAILED_LOGINS as usize,
                "{}: only the window's attempts are checked",
                db.name()
            );
        }
    }

    #[tokio::test]
    async fn the_limit_counts_the_same_on_both_engines() {
        for db in TestDb::both().await {
            let t0 = Utc::now();
            for i in 0..MAX_FAILED_LOGINS {
                let r = db.run(move |tx| count_attempt(tx, "ana", t0 + Duration::seconds(i))).await.unwrap();
                assert_eq!(r, Ok(()), "{}: attempt {i} is allowed", db.name());
            }
            let at = t0 + Duration::seconds(60);
            let refused = db.run(move |tx| count_attempt(tx, "ana", at)).await.unwrap();
            assert_eq!(
                refused,
                Err((LOGIN_WINDOW_SECS - 60) as u64),
                "{}: the sixth waits for the window",
                db.name()
            );
            let other = db.run(move |tx| count_attempt(tx, "bo", at)).await.unwrap();
            assert_eq!(other, Ok(()), "{}: another username has its own count", db.name());
            let later = t0 + Duration::seconds(LOGIN_WINDOW_SECS);
            assert_eq!(
                db.run(move |tx| count_attempt(tx, "ana", later)).await.unwrap(),
                Ok(()),
                "{}",
                db.name()
            );
            db.run(|tx| clear_attempts(tx, "ana")).await.unwrap();
            let gone = t0 + Duration::seconds(2 * LOGIN_WINDOW_SECS);
            db.run(move |tx| forget_ended(tx, gone)).await.unwrap();
            let left =
                db.run(|tx| Ok(tx.rows("SELECT username FROM login_attempts", &[])?.len())).await.unwrap();
            assert_eq!(left, 0, "{}: cleared and ended windows are gone", db.name());
        }
    }
}
