//! The clock operations decide by (`now`, the test clock's when built with it) and each
//! tenant's calendar and rate limit, cached until a settings change forgets it.

use std::sync::Arc;

use chrono::Utc;

use crate::Gateway;
use crate::domain::periods::TenantClock;
use crate::domain::tenants;
use crate::error::Result;
use crate::ids::TenantId;

impl Gateway {
    /// The moment budget periods and rate windows are decided at ([`crate::GatewayConfig::clock`]).
    pub fn now(&self) -> chrono::DateTime<Utc> {
        self.config.clock.now()
    }

    /// The tenant's calendar and rate limit, from the cache when possible.
    pub(crate) async fn tenant_clock(&self, tenant: &TenantId) -> Result<Arc<TenantClock>> {
        if let Some(c) = self.clock_cache.get(tenant) {
            return Ok(c);
        }
        let generation = self.clock_cache.generation();
        let clock = Arc::new(tenants::clock(&self.store, tenant).await?);
        self.clock_cache.insert(generation, tenant.clone(), clock.clone());
        Ok(clock)
    }

    /// Forgets the cached calendar of `tenant` (a job found it changed).
    pub(crate) fn forget_tenant_clock(&self, tenant: &TenantId) {
        self.clock_cache.remove(tenant);
    }
}
