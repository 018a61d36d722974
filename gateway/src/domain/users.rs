//! Console users: humans with argon2id passwords and roles (docs/architecture.md#identities-and-roles).
//!
//! Guarantees: usernames are unique; passwords are stored only as argon2id hashes; every user
//! has at least one role; every read is scoped by tenant.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Gateway;
use crate::sql::lock_key;

use crate::db;
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::secrets;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Kits, profiles, keys, revoke.
    Admin,
    /// Parked actions.
    Approver,
    /// Brain proposals.
    Reviewer,
    /// Spend and caps; read-only elsewhere.
    Finance,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Admin, Role::Approver, Role::Reviewer, Role::Finance];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Approver => "approver",
            Role::Reviewer => "reviewer",
            Role::Finance => "finance",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleUser {
    pub id: UserId,
    pub tenant_id: TenantId,
    pub username: String,
    pub roles: Vec<Role>,
    pub created_at: DateTime<Utc>,
}

impl ConsoleUser {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}

const MIN_PASSWORD_LEN: usize = 8;
const MAX_PASSWORD_LEN: usize = 256;
const MAX_USERNAME_LEN: usize = 64;

type UserRow = (String, String, String, String, DateTime<Utc>);

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
        self
            .write(move |c| {
                c.exec(
                    "INSERT INTO console_users (id, tenant_id, username, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    &[&u.id.as_str(), &u.tenant_id.as_str(), &u.username, &hash, &roles_to_db(&u.roles), &db::ts(u.created_at)],
                )
                .map_err(|e| {
                    if e.is_unique_violation() {
                        Error::Conflict {
                            code: "username_taken",
                            message: format!("the username `{}` is taken; choose another", u.username),
                        }
                    } else {
                        e
                    }
                })?;
                let Some(by) = &by else { return Ok(Vec::new()) };
                Ok(vec![crate::audit::activity::append(
                    c,
                    crate::audit::activity::NewEntry::new(&u.tenant_id, by.as_str(), crate::audit::activity::Kind::Console)
                        .via(crate::audit::activity::Transport::Console)
                        .verdict("user_added")
                        .detail(serde_json::json!({ "user": u.username, "roles": roles_to_db(&u.roles) })),
                )?])
            })
            .await?;
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
        self
            .write(move |c| {
                // The tenant's role changes take turns on PostgreSQL, so two demotions at once
                // cannot each leave the other as the last admin.
                lock_key(c, &["user roles", t.as_str()])?;
                let r = c
                    .row("SELECT username, roles FROM console_users WHERE id = ? AND tenant_id = ?", &[&u.as_str(), &t.as_str()])?
                    .ok_or(Error::NotFound { what: "console user" })?;
                let (name, old): (String, String) = (r.get(0)?, r.get(1)?);
                let admins: i64 = c
                    .row(
                        "SELECT COUNT(*) FROM console_users WHERE tenant_id = ? AND id != ? AND (',' || roles || ',') LIKE '%,admin,%'",
                        &[&t.as_str(), &u.as_str()],
                    )?
                    .map_or(Ok(0), |r| r.get(0))?;
                if admins == 0 && !roles.contains(&Role::Admin) {
                    return Err(Error::Conflict {
                        code: "last_admin",
                        message: format!("{name} is the tenant's last admin; make someone else an admin first"),
                    });
                }
                c.exec("UPDATE console_users SET roles = ? WHERE id = ?", &[&roles_to_db(&roles), &u.as_str()])?;
                Ok(vec![crate::audit::activity::append(
                    c,
                    crate::audit::activity::NewEntry::new(&t, by.as_str(), crate::audit::activity::Kind::Console)
                        .via(crate::audit::activity::Transport::Console)
                        .verdict("roles_changed")
                        .detail(serde_json::json!({ "user": name, "from": old, "to": roles_to_db(&roles) })),
                )?])
            })
            .await?;
        self.credentials_changed();
        self.user(tenant, id).await
    }

    pub async fn users(&self, tenant: &TenantId) -> Result<Vec<ConsoleUser>> {
        let rows: Vec<UserRow> = self
            .store
            .all(
                "SELECT id, tenant_id, username, roles, created_at FROM console_users WHERE tenant_id = ? ORDER BY username",
                &[tenant],
            )
            .await?;
        Ok(rows.into_iter().map(user_from_row).collect())
    }

    pub async fn user(&self, tenant: &TenantId, id: &UserId) -> Result<ConsoleUser> {
        let row: Option<UserRow> = self
            .store
            .opt(
                "SELECT id, tenant_id, username, roles, created_at FROM console_users WHERE tenant_id = ? AND id = ?",
                &[tenant, id],
            )
            .await?;
        row.map(user_from_row).ok_or(Error::NotFound { what: "console user" })
    }

    /// The tenant's console user with this username.
    pub async fn user_named(&self, tenant: &TenantId, username: &str) -> Result<ConsoleUser> {
        let row: Option<UserRow> = self
            .store
            .opt(
                "SELECT id, tenant_id, username, roles, created_at FROM console_users WHERE tenant_id = ? AND username = ?",
                &[tenant, &username.trim()],
            )
            .await?;
        row.map(user_from_row).ok_or(Error::NotFound { what: "console user" })
    }

    /// The user with this username and password, or `None`. Takes the same time for an
    /// unknown user as for a wrong password, so it does not reveal which usernames exist.
    pub async fn verify_login(&self, username: &str, password: &str) -> Result<Option<ConsoleUser>> {
        let row: Option<(String, String, String, String, DateTime<Utc>, String)> = self
            .store
            .opt(
                "SELECT id, tenant_id, username, roles, created_at, password_hash FROM console_users WHERE username = ?",
                &[&username.trim()],
            )
            .await?;
        let stored = row.as_ref().map(|r| r.5.clone()).unwrap_or_else(|| DUMMY_HASH.to_string());
        let ok = self.check_password(password, stored).await?;
        Ok(match row {
            Some((id, t, u, r, c, _)) if ok => Some(user_from_row((id, t, u, r, c))),
            _ => None,
        })
    }
}

/// The most argon2 verifications at once: each takes 19 MiB and a core for tens of
/// milliseconds, so unbounded parallel sign-ins could exhaust memory.
pub const MAX_PASSWORD_CHECKS: usize = 4;
/// How long a sign-in waits for a verification slot before it is told to try again.
const PASSWORD_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Gateway {
    /// Verifies a password against its hash, at most [`MAX_PASSWORD_CHECKS`] at a time, off
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

/// An argon2id hash of a random string, verified against when the username is unknown.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0/3O7uFmCx2mU6AX7M6Hc1gvyZPxYeZG2bWbN0u9d3Q";

fn roles_to_db(roles: &[Role]) -> String {
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
}

fn user_from_row((id, tenant, username, roles, created_at): UserRow) -> ConsoleUser {
    ConsoleUser {
        id: UserId::from_db(id),
        tenant_id: TenantId::from_db(tenant),
        username,
        roles: roles.split(',').filter_map(Role::parse).collect(),
        created_at,
    }
}
