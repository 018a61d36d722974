//! Console users: humans with argon2id passwords and roles (docs/architecture.md#identities-and-roles).
//!
//! Guarantees: usernames are unique; passwords are stored only as argon2id hashes; every user
//! has at least one role; every read is scoped by tenant.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::audit::activity::Verdict;
use crate::sql::{Tx, lock_key};

use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::store::Store;
use crate::stored;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

pub(crate) const MIN_PASSWORD_LEN: usize = 8;
pub(crate) const MAX_PASSWORD_LEN: usize = 256;
pub(crate) const MAX_USERNAME_LEN: usize = 64;

const COLUMNS: &str = "id, tenant_id, username, roles, created_at";

/// Stores a new console user (their password's hash); `username_taken` when the name is. With `by`, records who added them.
pub(crate) fn insert_user(
    c: &dyn Tx,
    u: &ConsoleUser,
    hash: &str,
    by: Option<&str>,
) -> Result<Vec<crate::audit::activity::Entry>> {
    c.exec(
        "INSERT INTO console_users (id, tenant_id, username, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        &[&u.id.as_str(), &u.tenant_id.as_str(), &u.username, &hash, &roles_to_db(&u.roles), &stored::ts(u.created_at)],
    )
    .map_err(|e| {
        if e.is_unique_violation() {
            Error::Conflict {
                code: "username_taken",
                message: format!("the username `{}` is taken; choose another", u.username),
            }
        } else {
            e.into()
        }
    })?;
    let Some(by) = by else { return Ok(Vec::new()) };
    Ok(vec![crate::audit::activity::append(
        c,
        crate::audit::activity::NewEntry::new(&u.tenant_id, by, crate::audit::activity::Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::UserAdded)
            .detail(serde_json::json!({ "user": u.username, "roles": roles_to_db(&u.roles) })),
    )?])
}

/// Replaces a user's roles and records it; `last_admin` when it would leave the tenant without an admin.
pub(crate) fn replace_roles(
    c: &dyn Tx,
    t: &TenantId,
    u: &UserId,
    roles: &[Role],
    by: &str,
) -> Result<Vec<crate::audit::activity::Entry>> {
    // The tenant's role changes take turns on PostgreSQL, so two demotions at once
    // cannot each leave the other as the last admin.
    lock_key(c, &["user roles", t.as_str()])?;
    let r = c
        .row(
            "SELECT username, roles FROM console_users WHERE id = ? AND tenant_id = ?",
            &[&u.as_str(), &t.as_str()],
        )?
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
    c.exec("UPDATE console_users SET roles = ? WHERE id = ?", &[&roles_to_db(roles), &u.as_str()])?;
    Ok(vec![crate::audit::activity::append(
        c,
        crate::audit::activity::NewEntry::new(t, by, crate::audit::activity::Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::RolesChanged)
            .detail(serde_json::json!({ "user": name, "from": old, "to": roles_to_db(roles) })),
    )?])
}

/// The most argon2 verifications at once: each takes 19 MiB and a core for tens of
/// milliseconds, so unbounded parallel sign-ins could exhaust memory.
pub const MAX_PASSWORD_CHECKS: usize = 4;
/// How long a sign-in waits for a verification slot before it is told to try again.
pub(crate) const PASSWORD_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An argon2id hash of a random string, verified against when the username is unknown.
pub(crate) const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0/3O7uFmCx2mU6AX7M6Hc1gvyZPxYeZG2bWbN0u9d3Q";

fn roles_to_db(roles: &[Role]) -> String {
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
}

/// A row of [`COLUMNS`]; `corrupt_row` for a role the gateway does not know.
impl crate::sql::FromRow for ConsoleUser {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<ConsoleUser> {
        let roles: String = r.get(3)?;
        Ok(ConsoleUser {
            id: r.get(0)?,
            tenant_id: r.get(1)?,
            username: r.get(2)?,
            // A user the directory provisioned may have no role yet.
            roles: roles
                .split(',')
                .filter(|role| !role.is_empty())
                .map(|role| stored::named("role", role, Role::parse))
                .collect::<::store::Result<_>>()?,
            created_at: r.get(4)?,
        })
    }
}

/// The tenant's console users, by username.
pub(crate) async fn list(store: &Store, tenant: &TenantId) -> Result<Vec<ConsoleUser>> {
    let sql = format!("SELECT {COLUMNS} FROM console_users WHERE tenant_id = ? ORDER BY username");
    Ok(store.all(&sql, &[tenant]).await?)
}

/// The tenant's console user with this id.
pub(crate) async fn by_id(store: &Store, tenant: &TenantId, id: &UserId) -> Result<Option<ConsoleUser>> {
    let sql = format!("SELECT {COLUMNS} FROM console_users WHERE tenant_id = ? AND id = ?");
    Ok(store.opt(&sql, &[tenant, id]).await?)
}

/// The tenant's console user with this username.
pub(crate) async fn by_name(store: &Store, tenant: &TenantId, username: &str) -> Result<Option<ConsoleUser>> {
    let sql = format!("SELECT {COLUMNS} FROM console_users WHERE tenant_id = ? AND username = ?");
    Ok(store.opt(&sql, &[tenant, &username]).await?)
}

/// The user with this username, in whichever tenant, with their password's hash.
pub(crate) async fn with_hash(store: &Store, username: &str) -> Result<Option<(ConsoleUser, String)>> {
    let sql = format!("SELECT {COLUMNS}, password_hash FROM console_users WHERE username = ?");
    let rows = store.rows(&sql, &[&username]).await?;
    let Some(r) = rows.first() else { return Ok(None) };
    Ok(Some((crate::sql::FromRow::from_row(r)?, r.get(5)?)))
}

/// Sets a user's roles to what their directory groups give (none is allowed: a provisioned
/// user may wait for a role), recording a change; the tenant keeps an admin.
pub(crate) fn set_roles_in(c: &dyn Tx, t: &TenantId, u: &UserId, roles: &[Role], by: &str) -> Result<()> {
    let sql = "SELECT roles FROM console_users WHERE id = ? AND tenant_id = ?";
    let now: String =
        c.row(sql, &[&u.as_str(), &t.as_str()])?.ok_or(Error::NotFound { what: "console user" })?.get(0)?;
    if now == roles_to_db(roles) {
        return Ok(());
    }
    replace_roles(c, t, u, roles, by)?;
    Ok(())
}

/// Takes every role of a deactivated user.
pub(crate) fn clear_roles_in(c: &dyn Tx, t: &TenantId, u: &UserId, by: &str) -> Result<()> {
    set_roles_in(c, t, u, &[], by)
}
