//! Console sessions (docs/architecture.md#identities-and-roles): a signed-in browser holds a random token
//! in an HttpOnly
//! cookie; only its SHA-256 is stored, with the user and an expiry. Signing in checks the
//! argon2id password ([`Gateway::verify_login`]); every request re-reads the user, so a role
//! change or a deleted user takes effect at once. Sign-in and sign-out are recorded in the
//! activity log.

use chrono::{Duration, Utc};
use serde_json::json;

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry};
use crate::db;
use crate::domain::users::ConsoleUser;
use crate::error::Result;
use crate::ids::{TenantId, UserId};
use crate::secrets;

/// How long a session lasts.
pub const SESSION_HOURS: i64 = 12;

/// Deletes the sessions that ended by `now`.
pub(crate) fn forget_ended(c: &dyn crate::sql::Tx, now: chrono::DateTime<chrono::Utc>) -> Result<()> {
    c.exec("DELETE FROM console_sessions WHERE expires_at <= ?", &[&crate::db::ts(now)])?;
    Ok(())
}

impl Gateway {
    /// Starts a session for `user`; returns the token for the cookie, shown nowhere else.
    pub async fn start_session(&self, user: &ConsoleUser) -> Result<String> {
        let token = format!("ns_{}", secrets::random_password());
        let hash = secrets::hash_token(&token);
        let (u, t, name) = (user.id.clone(), user.tenant_id.clone(), user.username.clone());
        self
            .write(move |c| {
                let now = Utc::now();
                c.exec(
                    "INSERT INTO console_sessions (token_hash, user_id, tenant_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                    &[&hash, &u.as_str(), &t.as_str(), &db::ts(now), &db::ts(now + Duration::hours(SESSION_HOURS))],
                )?;
                activity::append(
                    c,
                    NewEntry::new(&t, name.as_str(), Kind::Console).via(crate::audit::activity::Transport::Console).verdict("signed_in").detail(json!({ "user": name })),
                )
            })
            .await?;
        Ok(token)
    }

    /// The user a session token belongs to, if it is live.
    pub async fn session_user(&self, token: &str) -> Result<Option<ConsoleUser>> {
        let (hash, now) = (secrets::hash_token(token), db::ts(Utc::now()));
        let row: Option<(String, String)> = self
            .store
            .opt(
                "SELECT user_id, tenant_id FROM console_sessions WHERE token_hash = ? AND expires_at > ?",
                &[&hash, &now],
            )
            .await?;
        let Some((user, tenant)) = row else { return Ok(None) };
        match self.user(&TenantId::from_db(tenant), &UserId::from_db(user)).await {
            Ok(u) => Ok(Some(u)),
            Err(crate::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Ends a session (sign-out). Ending an unknown or ended one is not an error.
    pub async fn end_session(&self, token: &str) -> Result<()> {
        let hash = secrets::hash_token(token);
        self.write(move |c| {
            let row = c.row(
                "DELETE FROM console_sessions WHERE token_hash = ? RETURNING tenant_id, \
                     (SELECT username FROM console_users WHERE id = user_id)",
                &[&hash],
            )?;
            let Some(r) = row else { return Ok(Vec::new()) };
            let (tenant, name): (String, String) = (r.get(0)?, r.get(1)?);
            Ok(vec![activity::append(
                c,
                NewEntry::new(&TenantId::from_db(tenant), name.as_str(), Kind::Console)
                    .via(crate::audit::activity::Transport::Console)
                    .verdict("signed_out")
                    .detail(json!({ "user": name })),
            )?])
        })
        .await?;
        self.credentials_changed();
        Ok(())
    }
}
