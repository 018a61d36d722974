//! Versioned AccountKits (docs/architecture.md#accountkits).
//!
//! Guarantees: every save makes a new version with its author and the `KitDiff` from the
//! previous one; a save that names a stale version is refused with a conflict, never merged;
//! a kit is validated by `policy` before anything is written.

use chrono::{DateTime, Utc};
use policy::{Kit, KitDiff};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// One stored version of a kit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KitRecord {
    pub kit: Kit,
    pub author: String,
    pub diff: KitDiff,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "body, author, diff, created_at";

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
            &stored::ts(r.created_at),
        ],
    )?;
    Ok(())
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

/// A row of [`COLUMNS`]; `corrupt_kit` when its body or diff does not read back.
impl crate::sql::FromRow for KitRecord {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<KitRecord> {
        let corrupt = |e: String| {
            ::store::Error::internal("corrupt_kit", format!("a stored kit could not be read: {e}"))
        };
        let (body, diff): (String, String) = (r.get(0)?, r.get(2)?);
        Ok(KitRecord {
            kit: Kit::from_json(&body).map_err(|e| corrupt(e.to_string()))?,
            author: r.get(1)?,
            diff: serde_json::from_str(&diff).map_err(|e| corrupt(e.to_string()))?,
            created_at: r.get(3)?,
        })
    }
}

/// The newest version of the kit `name`.
pub(crate) async fn current(store: &Store, tenant: &TenantId, name: &str) -> Result<Option<KitRecord>> {
    let sql =
        format!("SELECT {COLUMNS} FROM kits WHERE tenant_id = ? AND name = ? ORDER BY version DESC LIMIT 1");
    Ok(store.opt(&sql, &[tenant, &name]).await?)
}

/// Every version of the kit `name`, newest first.
pub(crate) async fn versions(store: &Store, tenant: &TenantId, name: &str) -> Result<Vec<KitRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM kits WHERE tenant_id = ? AND name = ? ORDER BY version DESC");
    Ok(store.all(&sql, &[tenant, &name]).await?)
}

/// The newest version of every kit of the tenant, by name.
pub(crate) async fn newest(store: &Store, tenant: &TenantId) -> Result<Vec<KitRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM kits k WHERE tenant_id = ?1 \
         AND version = (SELECT MAX(version) FROM kits WHERE tenant_id = ?1 AND name = k.name) ORDER BY name"
    );
    Ok(store.all(&sql, &[tenant]).await?)
}
