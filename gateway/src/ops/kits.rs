//! Kits as operations: a tenant's kits and their versions, saving a new version (with the
//! diff the log records), and the cached current kit the pipeline decides on.

use chrono::Utc;
use policy::{Kit, KitDiff, KitVersion};

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::kits::{self, KitRecord, insert_version};
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// Every version of the kit `name`, newest first.
    pub async fn kit_versions(&self, tenant: &TenantId, name: &str) -> Result<Vec<KitRecord>> {
        kits::versions(&self.store, tenant, name).await
    }

    /// The newest version of every kit of the tenant, by name.
    pub async fn kits(&self, tenant: &TenantId) -> Result<Vec<KitRecord>> {
        kits::newest(&self.store, tenant).await
    }

    /// Saves `kit` as the version after `expected`. `expected = None` creates a new kit.
    /// Refuses with `kit_version_conflict` when someone saved in between.
    pub async fn save_kit(
        &self,
        tenant: &TenantId,
        kit: Kit,
        expected: Option<KitVersion>,
        author: &str,
    ) -> Result<KitRecord> {
        kit.validate().map_err(|e| Error::invalid("invalid_kit", e.to_string()))?;
        let (t, by) = (tenant.clone(), author.to_string());
        let record = self.write(move |c| save_in(c, &t, kit.clone(), expected, &by)).await?;
        self.kit_saved(tenant);
        Ok(record)
    }

    /// Every cached kit, shadow and ancestry may hold the old version.
    pub(crate) fn kit_saved(&self, tenant: &TenantId) {
        self.kit_cache.invalidate();
        self.shadow_cache.invalidate();
        self.agents_changed(Some(tenant));
        self.invalidate_links();
    }
}

/// Saves `kit` as the version after `expected`, read in this job: the version check, the
/// diff against the version saved now, the approval rules' groups, the row and its entry.
pub(crate) fn save_in(
    c: &dyn crate::sql::Tx,
    tenant: &TenantId,
    mut kit: Kit,
    expected: Option<KitVersion>,
    author: &str,
) -> Result<KitRecord> {
    let previous = match kits::current_kit_in(c, tenant, &kit.name) {
        Ok(k) => Some(k),
        Err(Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    let current = previous.as_ref().map(|k| k.version);
    if current != expected {
        return Err(Error::Conflict {
            code: "kit_version_conflict",
            message: match current {
                Some(v) => {
                    format!("kit \"{}\" is now at {v}; reload it, reapply your edit and save again", kit.name)
                }
                None => format!("kit \"{}\" does not exist yet; save it as a new kit", kit.name),
            },
        });
    }
    kit.version = expected.map_or(KitVersion::FIRST, KitVersion::next);
    let diff = previous.as_ref().map(|p| KitDiff::between(p, &kit)).unwrap_or_default();
    let r = KitRecord { kit, author: author.to_string(), diff, created_at: Utc::now() };
    crate::domain::groups::check_rules(c, tenant, &r.kit)?;
    insert_version(c, tenant, &r).map_err(|e| {
        if e.is_unique_violation() {
            // Two saves raced for the same version: the loser conflicts.
            Error::Conflict {
                code: "kit_version_conflict",
                message: "someone saved this kit at the same moment; reload and save again".into(),
            }
        } else {
            e
        }
    })?;
    activity::append(
        c,
        NewEntry::new(tenant, &r.author, Kind::KitEdit)
            .via_actor()
            .action(format!("kit:{}", r.kit.name))
            .verdict(Verdict::Saved)
            .kit_version(r.kit.version.0)
            .detail(serde_json::json!({ "kit": r.kit.name, "diff": r.diff.changes })),
    )?;
    Ok(r)
}

impl Gateway {}
