//! Groups of console users that approval rules name (docs/architecture.md#approvals), and
//! whether a kit's rules can be met by the tenant's people.
//!
//! Guarantees: a group's name is unique in its tenant and follows `policy`'s format; its
//! members are users of the same tenant; a group a current kit's rule names cannot be deleted;
//! a kit whose rule asks for more approvers than the tenant has eligible people, or names a
//! role nobody holds or an unknown or empty group, is refused when it is saved. Every read is
//! scoped by tenant.

use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Entry, Kind, NewEntry, Transport, Verdict};
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// A group and its members, by username.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Group {
    pub name: String,
    pub members: Vec<Member>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Member {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub user_id: UserId,
    pub username: String,
}

fn logged(c: &dyn Tx, tenant: &TenantId, by: &str, detail: serde_json::Value) -> Result<Vec<Entry>> {
    let entry = NewEntry::new(tenant, by, Kind::Console).via(Transport::Console).verdict(Verdict::Changed);
    Ok(vec![activity::append(c, entry.detail(detail))?])
}

/// Adds an empty group; `group_exists` when the name is taken.
pub(crate) fn create(c: &dyn Tx, tenant: &TenantId, name: &str, by: &str) -> Result<Vec<Entry>> {
    policy::approval::check_group_name(name).map_err(|m| Error::invalid("invalid_group_name", m))?;
    let sql = "INSERT INTO user_groups (tenant_id, name, created_at) VALUES (?, ?, ?)";
    c.exec(sql, &[&tenant.as_str(), &name, &stored::ts(chrono::Utc::now())]).map_err(|e| {
        if e.is_unique_violation() {
            Error::Conflict { code: "group_exists", message: format!("a group `{name}` exists already") }
        } else {
            e.into()
        }
    })?;
    logged(c, tenant, by, json!({ "group": name, "change": "created" }))
}

/// Deletes a group and its memberships; `group_in_use` while a current kit's rule names it.
pub(crate) fn delete(c: &dyn Tx, tenant: &TenantId, name: &str, by: &str) -> Result<Vec<Entry>> {
    ensure_exists(c, tenant, name)?;
    if let Some(kit) = kit_naming(c, tenant, name)? {
        return Err(Error::Conflict {
            code: "group_in_use",
            message: format!("kit \"{kit}\" names group `{name}` in an approval rule; change the kit first"),
        });
    }
    c.exec("DELETE FROM group_members WHERE tenant_id = ? AND group_name = ?", &[&tenant.as_str(), &name])?;
    c.exec("DELETE FROM user_groups WHERE tenant_id = ? AND name = ?", &[&tenant.as_str(), &name])?;
    logged(c, tenant, by, json!({ "group": name, "change": "deleted" }))
}

/// Adds `user` to the group, or takes them out; a user of another tenant does not exist here.
pub(crate) fn set_member(
    c: &dyn Tx,
    tenant: &TenantId,
    (name, user): (&str, &UserId),
    member: bool,
    by: &str,
) -> Result<Vec<Entry>> {
    ensure_exists(c, tenant, name)?;
    let sql = "SELECT username FROM console_users WHERE id = ? AND tenant_id = ?";
    let username: String = c
        .row(sql, &[&user.as_str(), &tenant.as_str()])?
        .ok_or(Error::NotFound { what: "console user" })?
        .get(0)?;
    let args: [&dyn crate::sql::ToValue; 3] = [&tenant.as_str(), &name, &user.as_str()];
    let changed = if member {
        c.exec(
            "INSERT INTO group_members (tenant_id, group_name, user_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            &args,
        )?
    } else {
        c.exec("DELETE FROM group_members WHERE tenant_id = ? AND group_name = ? AND user_id = ?", &args)?
    };
    if changed == 0 {
        return Ok(Vec::new());
    }
    let change = if member { "member_added" } else { "member_removed" };
    logged(c, tenant, by, json!({ "group": name, "change": change, "user": username }))
}

fn ensure_exists(c: &dyn Tx, tenant: &TenantId, name: &str) -> Result<()> {
    let sql = "SELECT 1 FROM user_groups WHERE tenant_id = ? AND name = ?";
    c.row(sql, &[&tenant.as_str(), &name])?.map(|_| ()).ok_or(Error::NotFound { what: "group" })
}

/// The name of a current kit whose approval rule (or its escalation) names `group`.
fn kit_naming(c: &dyn Tx, tenant: &TenantId, group: &str) -> Result<Option<String>> {
    let bodies: Vec<String> = c
        .rows(
            "SELECT body FROM kits k WHERE tenant_id = ?1 \
             AND version = (SELECT MAX(version) FROM kits WHERE tenant_id = ?1 AND name = k.name)",
            &[&tenant.as_str()],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect::<::store::Result<_>>()?;
    for body in bodies {
        let kit = policy::Kit::from_json(&body)
            .map_err(|e| Error::internal("corrupt_kit", format!("a stored kit could not be read: {e}")))?;
        let names = |r: &policy::ApprovalRule| {
            r.group.as_deref() == Some(group)
                || r.escalate.as_ref().is_some_and(|e| e.group.as_deref() == Some(group))
        };
        if kit.limits.approve.rules.iter().any(names) {
            return Ok(Some(kit.name));
        }
    }
    Ok(None)
}

/// The tenant's groups with their members, by name.
pub(crate) async fn list(store: &Store, tenant: &TenantId) -> Result<Vec<Group>> {
    let names: Vec<(String,)> = store
        .all("SELECT name FROM user_groups WHERE tenant_id = ? ORDER BY name", &[&tenant.as_str()])
        .await?;
    let rows: Vec<(String, String, String)> = store
        .all(
            "SELECT m.group_name, u.id, u.username FROM group_members m JOIN console_users u ON u.id = m.user_id \
             WHERE m.tenant_id = ? ORDER BY u.username",
            &[&tenant.as_str()],
        )
        .await?;
    Ok(names
        .into_iter()
        .map(|(name,)| {
            let members = rows
                .iter()
                .filter(|(g, _, _)| *g == name)
                .map(|(_, id, username)| Member {
                    user_id: UserId::from_db(id.clone()),
                    username: username.clone(),
                })
                .collect();
            Group { name, members }
        })
        .collect())
}

const GROUPS_OF: &str = "SELECT group_name FROM group_members WHERE tenant_id = ? AND user_id = ?";

/// The groups `user` is in, read in a job.
pub(crate) fn of_user(c: &dyn Tx, tenant: &TenantId, user: &UserId) -> Result<Vec<String>> {
    let rows = c.rows(GROUPS_OF, &[&tenant.as_str(), &user.as_str()])?;
    Ok(rows.iter().map(|r| r.get(0)).collect::<::store::Result<_>>()?)
}

/// [`of_user`] on committed rows, outside any job.
pub(crate) async fn of_user_now(store: &Store, tenant: &TenantId, user: &UserId) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = store.all(GROUPS_OF, &[&tenant.as_str(), &user.as_str()]).await?;
    Ok(rows.into_iter().map(|(g,)| g).collect())
}

/// The tenant's people, each with their roles and groups: who could decide what.
struct People(Vec<(UserId, Vec<String>, Vec<String>)>);

impl People {
    fn read(c: &dyn Tx, tenant: &TenantId) -> Result<People> {
        let users = c.rows("SELECT id, roles FROM console_users WHERE tenant_id = ?", &[&tenant.as_str()])?;
        let members =
            c.rows("SELECT user_id, group_name FROM group_members WHERE tenant_id = ?", &[&tenant.as_str()])?;
        let mut people = Vec::new();
        for u in users {
            let (id, roles): (String, String) = (u.get(0)?, u.get(1)?);
            let mut groups = Vec::new();
            for m in &members {
                let (uid, g): (String, String) = (m.get(0)?, m.get(1)?);
                if uid == id {
                    groups.push(g);
                }
            }
            let roles = roles.split(',').map(str::to_string).collect();
            people.push((UserId::from_db(id), roles, groups));
        }
        Ok(People(people))
    }

    /// Who may decide a call under `r`: approvers and admins, and whoever the rule (or its
    /// escalation) names.
    fn eligible(&self, r: &policy::ApprovalRule) -> usize {
        self.0.iter().filter(|p| self.may_decide(p, r)).count()
    }

    fn may_decide(
        &self,
        (_, roles, groups): &(UserId, Vec<String>, Vec<String>),
        r: &policy::ApprovalRule,
    ) -> bool {
        let named = |role: &Option<String>, group: &Option<String>| {
            role.as_ref().is_some_and(|x| roles.contains(x))
                || group.as_ref().is_some_and(|g| groups.contains(g))
        };
        roles.iter().any(|x| x == "approver" || x == "admin")
            || named(&r.role, &r.group)
            || r.escalate.as_ref().is_some_and(|e| named(&e.role, &e.group))
    }

    fn named(&self, role: &Option<String>, group: &Option<String>) -> usize {
        self.0
            .iter()
            .filter(|(_, roles, groups)| {
                role.as_ref().is_some_and(|x| roles.contains(x))
                    || group.as_ref().is_some_and(|g| groups.contains(g))
            })
            .count()
    }
}

/// Refuses a kit whose approval rules the tenant's people cannot meet: an unknown group, a
/// role or group nobody is in, or more approvers than people who may decide.
pub(crate) fn check_rules(c: &dyn Tx, tenant: &TenantId, kit: &policy::Kit) -> Result<()> {
    if kit.limits.approve.rules.is_empty() {
        return Ok(());
    }
    let people = People::read(c, tenant)?;
    for (i, r) in kit.limits.approve.rules.iter().enumerate() {
        let path = format!("limits.approve.rules[{i}]");
        let whos = [(&r.role, &r.group, path.clone())]
            .into_iter()
            .chain(r.escalate.as_ref().map(|e| (&e.role, &e.group, format!("{path}.escalate"))));
        for (role, group, at) in whos {
            if let Some(g) = group {
                ensure_exists(c, tenant, g).map_err(|_| {
                    Error::invalid(
                        "unknown_group",
                        format!("{at}.group: there is no group `{g}`; add it on the users page first"),
                    )
                })?;
            }
            if (role.is_some() || group.is_some()) && people.named(role, group) == 0 {
                let who = role.as_ref().map_or_else(
                    || format!("group {}", group.as_deref().unwrap_or("")),
                    |r| format!("role {r}"),
                );
                return Err(Error::invalid(
                    "approval_rule_unmeetable",
                    format!("{at}: nobody in this tenant has {who}; give someone it first"),
                ));
            }
        }
        let eligible = people.eligible(r);
        if usize::from(r.approvers) > eligible {
            return Err(Error::invalid(
                "approval_rule_unmeetable",
                format!(
                    "{path}.approvers: {} approvers are needed but only {eligible} people here may decide these calls; lower it or add approvers",
                    r.approvers
                ),
            ));
        }
    }
    Ok(())
}

/// Takes `user` out of every group, recording each (their directory deactivated them).
pub(crate) fn leave_all_in(c: &dyn Tx, tenant: &TenantId, user: &UserId, by: &str) -> Result<()> {
    let sql = "SELECT group_name FROM group_members WHERE tenant_id = ? AND user_id = ?";
    let names: Vec<String> = c
        .rows(sql, &[&tenant.as_str(), &user.as_str()])?
        .iter()
        .map(|r| r.get(0))
        .collect::<std::result::Result<_, _>>()?;
    for name in names {
        set_member(c, tenant, (&name, user), false, by)?;
    }
    Ok(())
}
