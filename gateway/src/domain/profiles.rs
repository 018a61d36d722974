//! Agent profiles: the acting identities, forming a tree of sub-agents
//! (docs/architecture.md#identities-and-roles).
//!
//! Guarantees: a parent is always in the same tenant as its child; every read is scoped by
//! tenant; a profile's kit exists when the profile is created.

use chrono::{DateTime, Utc};
use policy::SubjectStatus;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId, UserId};
use crate::sql::{Tx, lock_key};
use crate::store::Store;
use crate::stored;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RuntimeState {
    Running,
    Stopped,
}

impl RuntimeState {
    pub const fn as_str(self) -> &'static str {
        match self {
            RuntimeState::Running => "running",
            RuntimeState::Stopped => "stopped",
        }
    }

    pub fn parse(s: &str) -> Option<RuntimeState> {
        [RuntimeState::Running, RuntimeState::Stopped].into_iter().find(|v| v.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Profile {
    pub id: ProfileId,
    pub tenant_id: TenantId,
    pub name: String,
    pub owner: Option<UserId>,
    pub parent: Option<ProfileId>,
    pub kit_name: String,
    pub status: SubjectStatus,
    pub runtime: RuntimeState,
    pub runtime_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A profile with its depth in the sub-agent tree, for display in tree order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TreeEntry {
    pub depth: usize,
    pub profile: Profile,
}

impl Profile {
    /// A new active profile, not yet stored ([`insert_profile`]).
    pub fn fresh(
        tenant: &TenantId,
        name: &str,
        owner: Option<&UserId>,
        parent: Option<&ProfileId>,
        kit_name: &str,
    ) -> Profile {
        Profile {
            id: ProfileId::generate(),
            tenant_id: tenant.clone(),
            name: name.to_string(),
            owner: owner.cloned(),
            parent: parent.cloned(),
            kit_name: kit_name.to_string(),
            status: SubjectStatus::Active,
            runtime: RuntimeState::Running,
            runtime_reason: None,
            created_at: Utc::now(),
        }
    }
}

pub const MAX_NAME_LEN: usize = 80;

pub(crate) const COLUMNS: &str = "id, tenant_id, name, owner_user_id, parent_id, kit_name, status, runtime_state, runtime_reason, created_at";

/// Refuses with `requester_cannot_decide` when `by` owns `profile` or any profile above it:
/// nobody decides what their own agent asked for.
pub(crate) fn ensure_not_owner(
    c: &dyn Tx,
    profile: &ProfileId,
    by: &crate::domain::principal::Human,
) -> Result<()> {
    let owners = c
        .rows(OWNER_CHAIN, &[&profile.as_str()])?
        .iter()
        .map(|r| r.get::<Option<String>>(0))
        .collect::<::store::Result<Vec<_>>>()?;
    refuse_owner(&owners, by)
}

/// The owners of a profile and of every profile above it.
pub(crate) const OWNER_CHAIN: &str = "WITH RECURSIVE chain(id, parent, owner) AS ( \
       SELECT id, parent_id, owner_user_id FROM agent_profiles WHERE id = ? \
       UNION ALL SELECT p.id, p.parent_id, p.owner_user_id FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
     SELECT owner FROM chain";

/// Refuses with `requester_cannot_decide` when `by` is one of `owners`.
pub(crate) fn refuse_owner(owners: &[Option<String>], by: &crate::domain::principal::Human) -> Result<()> {
    if owners.iter().flatten().any(|o| o == by.user_id.as_str()) {
        return Err(Error::Forbidden {
            code: "requester_cannot_decide",
            message: format!(
                "{} owns the agent profile that asked, so someone else must decide",
                by.username
            ),
        });
    }
    Ok(())
}

/// A new profile and its budget account. Its ancestry is checked in the same job, so a
/// revoke queued just before cannot be missed; on PostgreSQL the tenant's tree changes take
/// turns ([`crate::ops::revoke`] takes the same lock), so a revoke cannot miss a sub-agent created
/// while it runs.
pub(crate) fn insert_profile(tx: &dyn Tx, p: &Profile) -> Result<()> {
    lock_key(tx, &["profile tree", p.tenant_id.as_str()])?;
    if let Some(parent) = &p.parent {
        ensure_active_ancestry(tx, parent)?;
    }
    tx.exec(
        "INSERT INTO agent_profiles (id, tenant_id, name, owner_user_id, parent_id, kit_name, status, runtime_state, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            &p.id.as_str(),
            &p.tenant_id.as_str(),
            &p.name,
            &p.owner.as_ref().map(UserId::as_str),
            &p.parent.as_ref().map(ProfileId::as_str),
            &p.kit_name,
            &p.status.as_str(),
            &p.runtime.as_str(),
            &stored::ts(p.created_at),
        ],
    )
    .map_err(|e| {
        if e.is_unique_violation() {
            Error::Conflict {
                code: "profile_name_taken",
                message: format!("a profile named `{}` already exists in this tenant", p.name),
            }
        } else {
            e.into()
        }
    })?;
    crate::domain::ledger::open_account(tx, &p.tenant_id, &p.id)
}

/// Revokes one profile and stops its runtime slot, reason `revoked`.
pub(crate) fn mark_revoked(c: &dyn Tx, id: &ProfileId) -> Result<()> {
    c.exec(
        "UPDATE agent_profiles SET status = 'revoked', runtime_state = 'stopped', runtime_reason = 'revoked' WHERE id = ?",
        &[&id.as_str()],
    )?;
    Ok(())
}

/// Stops a running profile's runtime slot with `reason`; false when it was not running.
pub(crate) fn stop_running(c: &dyn Tx, tenant: &TenantId, profile: &ProfileId, reason: &str) -> Result<bool> {
    let changed = c.exec(
        "UPDATE agent_profiles SET runtime_state = 'stopped', runtime_reason = ? WHERE id = ? AND tenant_id = ? AND runtime_state = 'running'",
        &[&reason, &profile.as_str(), &tenant.as_str()],
    )?;
    Ok(changed != 0)
}

/// Refuses with `parent_not_active` unless `parent` and every profile above it are active.
fn ensure_active_ancestry(tx: &dyn Tx, parent: &ProfileId) -> Result<()> {
    let inactive = tx.row(
        "WITH RECURSIVE chain(id, parent, name, status) AS ( \
           SELECT id, parent_id, name, status FROM agent_profiles WHERE id = ? \
           UNION ALL SELECT p.id, p.parent_id, p.name, p.status FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
         SELECT name, status FROM chain WHERE status != 'active' LIMIT 1",
        &[&parent.as_str()],
    )?;
    match inactive {
        None => Ok(()),
        Some(r) => {
            let (name, status): (String, String) = (r.get(0)?, r.get(1)?);
            Err(Error::Conflict {
                code: "parent_not_active",
                message: format!(
                    "`{name}` above this profile is {status}, so nothing can be created beneath it; choose an active parent"
                ),
            })
        }
    }
}

/// Depth-first order from the roots; a profile whose parent is missing counts as a root.
pub fn tree_order(profiles: Vec<Profile>) -> Vec<TreeEntry> {
    let ids: std::collections::HashSet<ProfileId> = profiles.iter().map(|p| p.id.clone()).collect();
    let mut out = Vec::with_capacity(profiles.len());
    let mut stack: Vec<(usize, &Profile)> = profiles
        .iter()
        .rev()
        .filter(|p| p.parent.as_ref().is_none_or(|x| !ids.contains(x)))
        .map(|p| (0, p))
        .collect();
    while let Some((depth, p)) = stack.pop() {
        out.push(TreeEntry { depth, profile: p.clone() });
        stack.extend(
            profiles.iter().rev().filter(|c| c.parent.as_ref() == Some(&p.id)).map(|c| (depth + 1, c)),
        );
    }
    out
}

/// One of the tenant's profiles; `not_found` for another tenant's or an unknown one.
pub(crate) async fn one(store: &Store, tenant: &TenantId, id: &ProfileId) -> Result<Profile> {
    let sql = format!("SELECT {COLUMNS} FROM agent_profiles WHERE tenant_id = ? AND id = ?");
    store.opt(&sql, &[tenant, id]).await?.ok_or(Error::NotFound { what: "agent profile" })
}

/// The tenant's profiles, oldest first.
pub(crate) async fn all(store: &Store, tenant: &TenantId) -> Result<Vec<Profile>> {
    let sql = format!("SELECT {COLUMNS} FROM agent_profiles WHERE tenant_id = ? ORDER BY created_at, id");
    Ok(store.all(&sql, &[tenant]).await?)
}

/// A row of [`COLUMNS`].
impl crate::sql::FromRow for Profile {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<Profile> {
        let (status, runtime): (String, String) = (r.get(6)?, r.get(7)?);
        Ok(Profile {
            id: r.get(0)?,
            tenant_id: r.get(1)?,
            name: r.get(2)?,
            owner: r.get(3)?,
            parent: r.get(4)?,
            kit_name: r.get(5)?,
            status: stored::named("profile status", &status, SubjectStatus::parse)?,
            runtime: stored::named("runtime state", &runtime, RuntimeState::parse)?,
            runtime_reason: r.get(8)?,
            created_at: r.get(9)?,
        })
    }
}
