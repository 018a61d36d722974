//! Groups of console users as operations: the users page and `/v1/groups` manage them, and
//! approval rules name them ([`crate::domain::groups`]).

use crate::Gateway;
use crate::domain::groups::{self, Group};
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};

impl Gateway {
    /// The tenant's groups with their members, by name.
    pub async fn groups(&self, tenant: &TenantId) -> Result<Vec<Group>> {
        groups::list(&self.store, tenant).await
    }

    /// One group with its members.
    pub async fn group(&self, tenant: &TenantId, name: &str) -> Result<Group> {
        self.groups(tenant)
            .await?
            .into_iter()
            .find(|g| g.name == name)
            .ok_or(Error::NotFound { what: "group" })
    }

    /// Adds an empty group; `by` is recorded.
    pub async fn create_group(&self, tenant: &TenantId, name: &str, by: &str) -> Result<Group> {
        let (t, n, b) = (tenant.clone(), name.trim().to_string(), by.to_string());
        self.write_for(tenant, move |c| groups::create(c, &t, &n, &b)).await?;
        self.group(tenant, name.trim()).await
    }

    /// Deletes a group no current kit names.
    pub async fn delete_group(&self, tenant: &TenantId, name: &str, by: &str) -> Result<()> {
        let (t, n, b) = (tenant.clone(), name.to_string(), by.to_string());
        self.write_for(tenant, move |c| groups::delete(c, &t, &n, &b)).await?;
        Ok(())
    }

    /// Puts `user` in the group (`member`) or takes them out; doing what is already so
    /// changes and records nothing.
    pub async fn set_group_member(
        &self,
        tenant: &TenantId,
        (name, user): (&str, &UserId),
        member: bool,
        by: &str,
    ) -> Result<Group> {
        let (t, n, u, b) = (tenant.clone(), name.to_string(), user.clone(), by.to_string());
        self.write_for(tenant, move |c| groups::set_member(c, &t, (&n, &u), member, &b)).await?;
        self.group(tenant, name).await
    }
}
