//! The change signals: a tenant's connectors changed, someone's credentials changed, the
//! outbox has work. Each drops what a cache holds or wakes a worker; none writes.

use crate::Gateway;
use crate::ids::TenantId;

impl Gateway {
    /// Forgets the tenant's built connectors, after one of its connectors, apps, secrets or
    /// its runtime changed here; other tenants' stay.
    pub(crate) fn connectors_changed(&self, tenant: &TenantId) {
        self.connector_cache.invalidate_key(tenant);
    }

    /// Tells every stream holding a credential to check it again.
    pub(crate) fn credentials_changed(&self) {
        self.credential_epoch.send_modify(|n| *n += 1);
    }

    /// Wakes this instance's delivery worker: something was queued.
    pub fn wake_delivery(&self) {
        self.outbox_wake.notify_one();
    }
}
