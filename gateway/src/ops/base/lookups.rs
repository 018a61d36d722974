//! The reads by id that many operations start from: a tenant, a profile, a user, a kit's
//! current version, a proposal and who proposed it, a secret's description, and whether a
//! decider owns what they would decide.

use crate::Gateway;
use crate::delivery::connectors::apps::AppRecord;
use crate::delivery::connectors::config::ConnectorRecord;
use crate::domain::brain::{self, PROPOSER, Proposal};
use crate::domain::kits::{self, KitRecord};
use crate::domain::profiles::{self, OWNER_CHAIN, Profile, refuse_owner};
use crate::domain::tenants::{self, Tenant};
use crate::domain::users::{self, ConsoleUser};
use crate::domain::vault::{SecretInfo, info};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId, UserId};

impl Gateway {
    pub async fn profile(&self, tenant: &TenantId, id: &ProfileId) -> Result<Profile> {
        profiles::one(&self.store, tenant, id).await
    }

    /// [`ensure_not_owner`](crate::domain::profiles::ensure_not_owner) outside a job, on committed rows: for pages that say who may decide.
    pub(crate) async fn ensure_not_owner(
        &self,
        profile: &ProfileId,
        by: &crate::domain::principal::Human,
    ) -> Result<()> {
        let owners: Vec<(Option<String>,)> = self.store.all(OWNER_CHAIN, &[&profile.as_str()]).await?;
        refuse_owner(&owners.into_iter().map(|o| o.0).collect::<Vec<_>>(), by)
    }

    pub async fn user(&self, tenant: &TenantId, id: &UserId) -> Result<ConsoleUser> {
        users::by_id(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "console user" })
    }

    pub async fn tenant(&self, id: &TenantId) -> Result<Tenant> {
        tenants::one(&self.store, id).await
    }

    pub async fn tenants(&self) -> Result<Vec<Tenant>> {
        tenants::all(&self.store).await
    }

    /// The newest version of the kit `name`.
    pub async fn current_kit(&self, tenant: &TenantId, name: &str) -> Result<KitRecord> {
        kits::current(&self.store, tenant, name).await?.ok_or(Error::NotFound { what: "kit" })
    }

    /// One proposal with its decision trail.
    pub async fn proposal(&self, tenant: &TenantId, id: &str) -> Result<Proposal> {
        brain::proposal(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "proposal" })
    }

    /// The profile whose writeback carried `proposal`, on committed rows.
    pub(crate) async fn proposer(&self, proposal: &str) -> Result<Option<ProfileId>> {
        let row: Option<(String,)> = self.store.opt(PROPOSER, &[&proposal]).await?;
        Ok(row.map(|r| ProfileId::from_db(r.0)))
    }

    /// What may be known of the tenant's secret `name`.
    pub async fn secret(&self, tenant: &TenantId, name: &str) -> Result<SecretInfo> {
        info(&self.store, tenant, name).await?.ok_or(Error::NotFound { what: "secret" })
    }

    /// The tenant's connected apps, by toolkit.
    pub async fn connected_apps(&self, tenant: &TenantId) -> Result<Vec<AppRecord>> {
        crate::delivery::connectors::app_config::list(&self.store, tenant).await
    }

    /// The tenant's configured connectors; every target not listed runs on the sandbox.
    pub async fn connectors(&self, tenant: &TenantId) -> Result<Vec<ConnectorRecord>> {
        crate::delivery::connectors::config::list(&self.store, tenant).await
    }
}
