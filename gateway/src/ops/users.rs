//! Console users as operations: creating one (the password hashed off the async workers),
//! reading them, replacing their roles, and checking a password.

use chrono::Utc;

use crate::Gateway;
use crate::domain::users::{
    self as users, ConsoleUser, DUMMY_HASH, MAX_PASSWORD_LEN, MAX_USERNAME_LEN, MIN_PASSWORD_LEN,
    PASSWORD_CHECK_WAIT, Role, insert_user, replace_roles,
};
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::secrets;

impl Gateway {
    pub async fn create_user(
        &self,
        tenant: &TenantId,
        username: &str,
        password: &str,
        roles: &[Role],
    ) -> Result<ConsoleUser> {
        self.create_user_as(tenant, username, password, roles, None).await
    }

    /// Creates a console user; with `by`, records in the activity log which admin added them,
    /// in the same transaction.
    pub async fn create_user_as(
        &self,
        tenant: &TenantId,
        username: &str,
        password: &str,
        roles: &[Role],
        by: Option<&str>,
    ) -> Result<ConsoleUser> {
        let username = username.trim();
        if username.is_empty()
            || username.len() > MAX_USERNAME_LEN
            || !username.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-@".contains(&b))
        {
            return Err(Error::invalid(
                "invalid_username",
                format!("a username is 1 to {MAX_USERNAME_LEN} lowercase letters, digits or . _ - @"),
            ));
        }
        if policy::activity::Actor::is_reserved(username) {
            return Err(Error::invalid(
                "reserved_username",
                format!(
                    "`{username}` names the gateway, the company key or an agent in the log; choose another username"
                ),
            ));
        }
        if password.chars().count() < MIN_PASSWORD_LEN || password.len() > MAX_PASSWORD_LEN {
            return Err(Error::invalid(
                "weak_password",
                format!("a password needs at least {MIN_PASSWORD_LEN} characters"),
            ));
        }
        if roles.is_empty() {
            return Err(Error::invalid(
                "no_roles",
                "give the user at least one role: admin, approver, reviewer or finance",
            ));
        }
        self.tenant(tenant).await?;
        let mut roles = roles.to_vec();
        roles.sort();
        roles.dedup();
        let user = ConsoleUser {
            id: UserId::generate(),
            tenant_id: tenant.clone(),
            username: username.to_string(),
            roles,
            created_at: Utc::now(),
        };
        // argon2 is deliberately slow; keep it off the async workers.
        let pw = password.to_string();
        let hash =
            tokio::task::spawn_blocking(move || secrets::hash_password(&pw)).await.expect("hashing task");
        let u = user.clone();
        let by = by.map(str::to_string);
        self.write(move |c| insert_user(c, &u, &hash, by.as_deref())).await?;
        Ok(user)
    }

    /// Replaces a console user's roles. A tenant always keeps at least one admin.
    pub async fn set_user_roles(
        &self,
        tenant: &TenantId,
        id: &UserId,
        roles: &[Role],
        by: &str,
    ) -> Result<ConsoleUser> {
        if roles.is_empty() {
            return Err(Error::invalid(
                "no_roles",
                "give the user at least one role: admin, approver, reviewer or finance",
            ));
        }
        let mut roles = roles.to_vec();
        roles.sort();
        roles.dedup();
        let (t, u, by) = (tenant.clone(), id.clone(), by.to_string());
        self.write(move |c| replace_roles(c, &t, &u, &roles, &by)).await?;
        self.credentials_changed();
        self.user(tenant, id).await
    }

    pub async fn users(&self, tenant: &TenantId) -> Result<Vec<ConsoleUser>> {
        users::list(&self.store, tenant).await
    }

    /// The tenant's console user with this username.
    pub async fn user_named(&self, tenant: &TenantId, username: &str) -> Result<ConsoleUser> {
        let user = users::by_name(&self.store, tenant, username.trim()).await?;
        user.ok_or(Error::NotFound { what: "console user" })
    }

    /// The user with this username and password, or `None`. Takes the same time for an
    /// unknown user as for a wrong password, so it does not reveal which usernames exist.
    pub async fn verify_login(&self, username: &str, password: &str) -> Result<Option<ConsoleUser>> {
        let row = users::with_hash(&self.store, username.trim()).await?;
        let stored = row.as_ref().map(|r| r.1.clone()).unwrap_or_else(|| DUMMY_HASH.to_string());
        let ok = self.check_password(password, stored).await?;
        if !ok || row.is_none() {
            self.sign_in_failed("password");
        }
        if let (Some((user, _)), false) = (&row, ok) {
            self.record_refused_sign_in(user, "password").await?;
        }
        Ok(row.filter(|_| ok).map(|(user, _)| user))
    }
}

impl Gateway {
    /// Records in `user`'s tenant's log that a sign-in as them was refused (`why`: `password`,
    /// `sso_required`), so their admin and their SIEM see it. A sign-in as nobody known is
    /// counted on `/metrics` only; each attempt was counted against the user's sign-in limit
    /// first, so these entries are bounded as the attempts are.
    pub async fn record_refused_sign_in(&self, user: &ConsoleUser, why: &'static str) -> Result<()> {
        let (t, name) = (user.tenant_id.clone(), user.username.clone());
        self.write_for(&user.tenant_id, move |c| crate::domain::sessions::refused(c, &t, &name, why)).await?;
        Ok(())
    }

    /// Verifies a password against its hash, at most [`MAX_PASSWORD_CHECKS`](crate::domain::users::MAX_PASSWORD_CHECKS) at a time, off
    /// the async workers.
    async fn check_password(&self, password: &str, stored: String) -> Result<bool> {
        let permit = tokio::time::timeout(PASSWORD_CHECK_WAIT, self.password_checks.clone().acquire_owned())
            .await
            .map_err(|_| {
                Error::unavailable("sign_in_busy", "too many sign-ins at once; try again in a moment", 2)
            })?
            .expect("the semaphore is never closed");
        let pw = password.to_string();
        let (running, peak) = (self.password_checks_running.clone(), self.password_check_peak.clone());
        let ok = tokio::task::spawn_blocking(move || {
            use std::sync::atomic::Ordering::SeqCst;
            peak.fetch_max(running.fetch_add(1, SeqCst) + 1, SeqCst);
            let ok = secrets::verify_password(&pw, &stored);
            running.fetch_sub(1, SeqCst);
            ok
        })
        .await
        .map_err(|_| Error::internal("verify_failed", "the password check stopped; try again"))?;
        drop(permit);
        Ok(ok)
    }

    /// The most password verifications that ran at once so far.
    pub fn password_check_peak(&self) -> usize {
        self.password_check_peak.load(std::sync::atomic::Ordering::Relaxed)
    }
}
