//! Connectors as operations: listing and setting a tenant's connectors (checked), testing one,
//! and building, caching and forgetting the connectors each call is carried out on.

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::connectors::config::{ConnectorRecord, ConnectorSpec, Target, save_in};
use crate::delivery::connectors::http::Probe;
use crate::error::Result;
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's configured connectors, each with why it cannot run now, if it cannot.
    pub async fn connectors_checked(&self, tenant: &TenantId) -> Result<Vec<ConnectorRecord>> {
        let built = self.tenant_connectors(tenant).await?;
        let mut records = self.connectors(tenant).await?;
        for r in &mut records {
            r.problem = built.problems.get(&r.target).cloned();
        }
        Ok(records)
    }

    /// Sets where `target`'s calls run; `sandbox` returns it to the default.
    pub async fn set_connector(
        &self,
        tenant: &TenantId,
        target: &str,
        spec: ConnectorSpec,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        let target = Target::parse(target, &self.catalog)?.as_str().to_string();
        if let ConnectorSpec::Http(h) = &spec {
            self.check_egress(&h.check()?).await?;
        }
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| save_in(c, &t, &target, &spec, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// Sends `target`'s connector a test probe and reports what came back; the sandbox
    /// always answers.
    pub async fn test_connector(&self, tenant: &TenantId, target: &str) -> Result<Probe> {
        let target = Target::parse(target, &self.catalog)?;
        let spec = self.connectors(tenant).await?.into_iter().find(|r| r.target == target.as_str());
        let Some(ConnectorRecord { connector: ConnectorSpec::Http(h), .. }) = spec else {
            return Ok(Probe {
                ok: true,
                status: None,
                latency_ms: 0,
                answer: "sandbox: built in, answers every action in-process; nothing real happens".into(),
            });
        };
        Ok(self.http_connector(tenant, &h).await?.probe().await)
    }

    /// Forgets every tenant's built connectors, after another instance changed something.
    pub(crate) fn all_connectors_changed(&self) {
        self.connector_cache.invalidate();
    }
}

impl Gateway {}
