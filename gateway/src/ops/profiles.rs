//! Agent profiles as operations: creating one, reading one, a tenant's list and tree, and the
//! owner check every human decision makes.

use crate::Gateway;
use crate::domain::profiles::{
    self as profiles, MAX_NAME_LEN, Profile, TreeEntry, insert_profile, tree_order,
};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId, UserId};

impl Gateway {
    pub async fn create_profile(
        &self,
        tenant: &TenantId,
        name: &str,
        owner: Option<&UserId>,
        parent: Option<&ProfileId>,
        kit_name: &str,
    ) -> Result<Profile> {
        let name = crate::ids::display_name(name, MAX_NAME_LEN, "invalid_profile_name", "a profile name")?;
        let name = name.as_str();
        if let Some(p) = parent {
            self.profile(tenant, p).await?;
        }
        if let Some(u) = owner {
            self.user(tenant, u).await?;
        }
        self.current_kit(tenant, kit_name).await?;
        let profile = Profile::fresh(tenant, name, owner, parent, kit_name);
        let p = profile.clone();
        self.write(move |c| insert_profile(c, &p)).await?;
        Ok(profile)
    }

    pub async fn profiles(&self, tenant: &TenantId) -> Result<Vec<Profile>> {
        profiles::all(&self.store, tenant).await
    }

    /// The tenant's profiles in tree order: each parent followed by its sub-agents.
    pub async fn profile_tree(&self, tenant: &TenantId) -> Result<Vec<TreeEntry>> {
        Ok(tree_order(self.profiles(tenant).await?))
    }
}
