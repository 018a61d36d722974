//! Server functions behind the console's users: the list, adding a user, and changing roles.
//!
//! Guarantees: admins only; the tenant always keeps at least one admin (the gateway refuses
//! the change that would remove the last).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::form,
    session::{require_roles, require_view},
};

/// A console user as the admin's user list shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserRow {
    pub id: String,
    pub username: String,
    pub roles: Vec<String>,
    pub created_at: String,
}

/// The roles ticked on a users form: one checkbox per role, present when ticked.
#[cfg(feature = "ssr")]
pub(crate) fn ticked(
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Vec<gateway::Role> {
    use gateway::Role;
    [(admin, Role::Admin), (approver, Role::Approver), (reviewer, Role::Reviewer), (finance, Role::Finance)]
        .into_iter()
        .filter_map(|(v, r)| v.map(|_| r))
        .collect()
}

#[server]
pub async fn list_users() -> Result<Vec<UserRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("users").await?;
    Ok(gw
        .users(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|u| UserRow {
            id: u.id.to_string(),
            roles: u.roles.iter().map(|r| r.as_str().to_string()).collect(),
            username: u.username,
            created_at: u.created_at.to_rfc3339(),
        })
        .collect())
}

/// Adds a console user with a password and roles (admin only). A plain form post.
#[server(prefix = "/api", endpoint = "add_user")]
pub async fn add_user(
    username: String,
    password: String,
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing console users").await?;
        let roles = ticked(admin, approver, reviewer, finance);
        gw.create_user_as(&tenant.id, &username.to_lowercase(), &password, &roles, Some(&by.username))
            .await
            .map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

/// Replaces a console user's roles (admin only; the tenant keeps at least one admin).
#[server(prefix = "/api", endpoint = "set_roles")]
pub async fn set_roles(
    user_id: String,
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing console users").await?;
        let id = gateway::UserId::parse(&user_id)
            .ok_or_else(|| ServerFnError::new("not_found: no such console user"))?;
        gw.set_user_roles(&tenant.id, &id, &ticked(admin, approver, reviewer, finance), &by.username)
            .await
            .map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

/// A group of console users, as the users page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    pub name: String,
    pub members: Vec<String>,
}

#[server]
pub async fn list_groups() -> Result<Vec<GroupRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("users").await?;
    Ok(gw
        .groups(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|g| GroupRow { name: g.name, members: g.members.into_iter().map(|m| m.username).collect() })
        .collect())
}

/// Adds an empty group (admin only), for approval rules to name. A plain form post.
#[server(prefix = "/api", endpoint = "create_group")]
pub async fn create_group(name: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing groups").await?;
        gw.create_group(&tenant.id, &name, &by.username).await.map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

/// Deletes a group no kit's approval rule names (admin only).
#[server(prefix = "/api", endpoint = "delete_group")]
pub async fn delete_group(name: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing groups").await?;
        gw.delete_group(&tenant.id, &name, &by.username).await.map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

/// Puts a user in a group, or takes them out (`change` is `add` or `remove`; admin only).
#[server(prefix = "/api", endpoint = "group_member")]
pub async fn group_member(group: String, username: String, change: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing groups").await?;
        let user = gw.user_named(&tenant.id, &username).await.map_err(to_fn_error)?;
        let member = match change.as_str() {
            "add" => true,
            "remove" => false,
            _ => return Err(ServerFnError::new("invalid_change: add or remove")),
        };
        gw.set_group_member(&tenant.id, (&group, &user.id), member, &by.username)
            .await
            .map_err(to_fn_error)?;
        Ok(())
    })
    .await
}
