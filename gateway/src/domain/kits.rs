//! Versioned AccountKits (docs/architecture.md#accountkits).
//!
//! Guarantees: every save makes a new version with its author and the `KitDiff` from the
//! previous one; a save that names a stale version is refused with a conflict, never merged;
//! a kit is validated by `policy` before anything is written.

use chrono::{DateTime, Utc};
use policy::{Kit, KitDiff, KitVersion};
use serde::{Deserialize, Serialize};

use crate::Gateway;

use crate::audit::activity::{self, Kind, NewEntry};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;

/// One stored version of a kit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KitRecord {
    pub kit: Kit,
    pub author: String,
    pub diff: KitDiff,
    pub created_at: DateTime<Utc>,
}

type KitRow = (String, String, String, DateTime<Utc>);

/// Stores one version of a kit: the one place a row is added to `kits`. A version that
/// exists already is a unique violation the caller maps.
pub(crate) fn insert_version(c: &dyn Tx, tenant: &TenantId, r: &KitRecord) -> Result<()> {
    c.exec(
        "INSERT INTO kits (tenant_id, name, version, body, author, diff, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[
            &tenant.as_str(),
            &r.kit.name,
            &i64::from(r.kit.version.0),
            &r.kit.to_json(),
            &r.author,
            &serde_json::to_string(&r.diff).expect("diff serializes"),
            &db::ts(r.created_at),
        ],
    )?;
    Ok(())
}

impl Gateway {
    /// The newest version of the kit `name`.
    pub async fn current_kit(&self, tenant: &TenantId, name: &str) -> Result<KitRecord> {
        let row: Option<KitRow> = self
            .store
            .opt(
                "SELECT body, author, diff, created_at FROM kits WHERE tenant_id = ? AND name = ? ORDER BY version DESC LIMIT 1",
                &[tenant, &name],
            )
            .await?;
        row.map(kit_from_row).transpose()?.ok_or(Error::NotFound { what: "kit" })
    }

    /// Every version of the kit `name`, newest first.
    pub async fn kit_versions(&self, tenant: &TenantId, name: &str) -> Result<Vec<KitRecord>> {
        let rows: Vec<KitRow> = self
            .store
            .all(
                "SELECT body, author, diff, created_at FROM kits WHERE tenant_id = ? AND name = ? ORDER BY version DESC",
                &[tenant, &name],
            )
            .await?;
        rows.into_iter().map(kit_from_row).collect()
    }

    /// The newest version of every kit of the tenant, by name.
    pub async fn kits(&self, tenant: &TenantId) -> Result<Vec<KitRecord>> {
        let rows: Vec<KitRow> = self
            .store
            .all(
                "SELECT body, author, diff, created_at FROM kits k WHERE tenant_id = ?1 \
                 AND version = (SELECT MAX(version) FROM kits WHERE tenant_id = ?1 AND name = k.name) ORDER BY name",
                &[tenant],
            )
            .await?;
        rows.into_iter().map(kit_from_row).collect()
    }

    /// Saves `kit` as the version after `expected`. `expected = None` creates a new kit.
    /// Refuses with `kit_version_conflict` when someone saved in between.
    pub async fn save_kit(
        &self,
        tenant: &TenantId,
        mut kit: Kit,
        expected: Option<KitVersion>,
        author: &str,
    ) -> Result<KitRecord> {
        kit.validate().map_err(|e| Error::invalid("invalid_kit", e.to_string()))?;
        let previous = match self.current_kit(tenant, &kit.name).await {
            Ok(r) => Some(r.kit),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let current = previous.as_ref().map(|k| k.version);
        if current != expected {
            return Err(Error::Conflict {
                code: "kit_version_conflict",
                message: match current {
                    Some(v) => format!(
                        "kit \"{}\" is now at {v}; reload it, reapply your edit and save again",
                        kit.name
                    ),
                    None => format!("kit \"{}\" does not exist yet; save it as a new kit", kit.name),
                },
            });
        }
        kit.version = expected.map_or(KitVersion::FIRST, KitVersion::next);
        let diff = previous.as_ref().map(|p| KitDiff::between(p, &kit)).unwrap_or_default();
        let record = KitRecord { kit, author: author.to_string(), diff, created_at: Utc::now() };
        let (t, r) = (tenant.clone(), record.clone());
        self.write(move |c| {
            insert_version(c, &t, &r).map_err(|e| {
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
                NewEntry::new(&t, &r.author, Kind::KitEdit)
                    .via_actor()
                    .action(format!("kit:{}", r.kit.name))
                    .verdict("saved")
                    .kit_version(r.kit.version.0)
                    .detail(serde_json::json!({ "kit": r.kit.name, "diff": r.diff.changes })),
            )
        })
        .await?;
        // Every cached kit and ancestry may hold the old version.
        self.kit_cache.invalidate();
        self.agents_changed(Some(tenant));
        self.invalidate_links();
        Ok(record)
    }
}

impl Gateway {
    /// The current version of a kit, from the cache when this process has seen it.
    pub(crate) async fn cached_kit(&self, tenant: &TenantId, name: &str) -> Result<Kit> {
        let key = (tenant.clone(), name.to_string());
        if let Some(k) = self.kit_cache.get(&key) {
            return Ok(k);
        }
        let generation = self.kit_cache.generation();
        let kit = self.current_kit(tenant, name).await?.kit;
        self.kit_cache.insert(generation, key, kit.clone());
        Ok(kit)
    }
}

/// The newest version of the kit `name`, read on the writer's connection.
pub(crate) fn current_kit_in(c: &dyn Tx, tenant: &TenantId, name: &str) -> Result<Kit> {
    let body: String = c
        .row(
            "SELECT body FROM kits WHERE tenant_id = ? AND name = ? ORDER BY version DESC LIMIT 1",
            &[&tenant.as_str(), &name],
        )?
        .ok_or(Error::NotFound { what: "kit" })?
        .get(0)?;
    Kit::from_json(&body)
        .map_err(|e| Error::internal("corrupt_kit", format!("a stored kit could not be read: {e}")))
}

fn kit_from_row((body, author, diff, created_at): KitRow) -> Result<KitRecord> {
    let corrupt = |e: String| Error::internal("corrupt_kit", format!("a stored kit could not be read: {e}"));
    Ok(KitRecord {
        kit: Kit::from_json(&body).map_err(|e| corrupt(e.to_string()))?,
        author,
        diff: serde_json::from_str(&diff).map_err(|e| corrupt(e.to_string()))?,
        created_at,
    })
}
