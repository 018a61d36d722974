//! Data upgrades: changes to stored documents that a schema migration cannot make in SQL on
//! both engines, carried out once in Rust when a gateway opens the database.
//!
//! A migration names each upgrade in `pending_upgrades`; [`run`] carries out every one it
//! knows in one transaction with deleting its name, so an upgrade happens exactly once
//! whichever instance starts first, and a crash in between leaves it pending.
//!
//! - `kits_name_their_toolkits`: connected apps became closed to agents until a kit names
//!   their toolkit. Every kit whose current version permitted every toolkit (`allow_all`, the
//!   old default) gets a new version, by `system`, that names each toolkit its tenant has an
//!   app under now, with the same filters, and no longer permits apps registered later. What
//!   worked before still works; nothing new opens by itself.

use chrono::Utc;
use policy::kit::ToolFilter;
use policy::{Kit, KitDiff};

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::{FromRow, Tx};

/// Who the log names for an upgrade.
pub const ACTOR: &str = "system";
const KITS_NAME_THEIR_TOOLKITS: &str = "kits_name_their_toolkits";

/// Carries out every pending upgrade; how many it carried out.
pub(crate) fn run(c: &dyn Tx) -> Result<usize> {
    let pending: Vec<(String,)> = c
        .rows("SELECT name FROM pending_upgrades", &[])?
        .iter()
        .map(FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    let mut done = 0;
    for (name,) in pending {
        if name != KITS_NAME_THEIR_TOOLKITS {
            tracing::warn!(upgrade = %name, "an upgrade this version does not know is left pending");
            continue;
        }
        // Taken first: of two instances starting at once, the second finds it gone.
        if c.exec("DELETE FROM pending_upgrades WHERE name = ?", &[&name])? == 0 {
            continue;
        }
        kits_name_their_toolkits(c)?;
        done += 1;
    }
    Ok(done)
}

fn kits_name_their_toolkits(c: &dyn Tx) -> Result<()> {
    type Current = (String, String, i64, String);
    let kits: Vec<Current> = c
        .rows(
            "SELECT tenant_id, name, version, body FROM kits k \
             WHERE version = (SELECT MAX(version) FROM kits WHERE tenant_id = k.tenant_id AND name = k.name)",
            &[],
        )?
        .iter()
        .map(FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    for (tenant, name, version, body) in kits {
        let old = Kit::from_json(&body).map_err(|e| {
            Error::internal("corrupt_kit", format!("kit {name} of {tenant} does not read: {e}"))
        })?;
        if !old.toolkits.allow_all {
            continue;
        }
        let apps: Vec<(String,)> = c
            .rows("SELECT toolkit FROM connected_apps WHERE tenant_id = ? ORDER BY toolkit", &[&tenant])?
            .iter()
            .map(FromRow::from_row)
            .collect::<::store::Result<_>>()?;
        let mut new = old.clone();
        new.toolkits.allow_all = false;
        for (toolkit,) in apps {
            new.toolkits.filters.entry(toolkit).or_insert_with(ToolFilter::default);
        }
        new.version = policy::KitVersion(version as u32).next();
        save(c, &TenantId::from_db(tenant), &old, &new)?;
    }
    Ok(())
}

fn save(c: &dyn Tx, tenant: &TenantId, old: &Kit, new: &Kit) -> Result<()> {
    let diff = KitDiff::between(old, new);
    let record = crate::domain::kits::KitRecord {
        kit: new.clone(),
        author: ACTOR.into(),
        diff,
        created_at: Utc::now(),
    };
    crate::domain::kits::insert_version(c, tenant, &record)?;
    activity::append(
        c,
        NewEntry::new(tenant, ACTOR, Kind::KitEdit)
            .action(format!("kit:{}", new.name))
            .verdict(Verdict::Saved)
            .kit_version(new.version.0)
            .detail(serde_json::json!({ "kit": new.name, "diff": record.diff.changes, "upgrade": KITS_NAME_THEIR_TOOLKITS })),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestDb;

    /// A kit that permitted every toolkit keeps the apps its tenant has and closes to new
    /// ones; a kit that named its toolkits is untouched; the upgrade runs once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_kits_name_the_apps_they_had_once_on_both_engines() {
        for db in TestDb::both().await {
            let name = db.name();
            db.run(|c| {
                let now = Utc::now();
                c.exec("INSERT INTO tenants (id, name, credit_units, created_at) VALUES ('ten_up', 'Up', 0, ?)", &[&now])?;
                let open = r#"{"name":"Open","version":3,"primitives":["connections"],"toolkits":{"allow_all":true,"filters":{"tracker":{"disable":["issues.delete"]}}}}"#;
                let named = r#"{"name":"Named","primitives":["connections"],"toolkits":{"allow_all":false,"filters":{"crm":{}}}}"#;
                for (kit, v, body) in [("Open", 3, open), ("Named", 1, named)] {
                    c.exec(
                        "INSERT INTO kits (tenant_id, name, version, body, author, diff, created_at) VALUES ('ten_up', ?, ?, ?, 'a', '{\"changes\":[]}', ?)",
                        &[&kit, &(v as i64), &body, &now],
                    )?;
                }
                for app in ["tracker", "github"] {
                    c.exec(
                        "INSERT INTO connected_apps (tenant_id, toolkit, spec, secret_name, updated_by, updated_at) VALUES ('ten_up', ?, '{}', NULL, 'a', ?)",
                        &[&app, &now],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
            assert_eq!(db.run(run).await.unwrap(), 1, "{name}");
            assert_eq!(db.run(run).await.unwrap(), 0, "{name}: once");
            let kits: Vec<(String, i64, String)> = db
                .run(|c| {
                    Ok(c.rows("SELECT name, version, body FROM kits ORDER BY name, version", &[])?
                        .iter()
                        .map(FromRow::from_row)
                        .collect::<::store::Result<_>>()?)
                })
                .await
                .unwrap();
            let versions: Vec<(&str, i64)> = kits.iter().map(|(n, v, _)| (n.as_str(), *v)).collect();
            assert_eq!(versions, vec![("Named", 1), ("Open", 3), ("Open", 4)], "{name}");
            let upgraded = Kit::from_json(&kits[2].2).unwrap();
            assert!(!upgraded.toolkits.allow_all, "{name}");
            assert!(
                upgraded.toolkits.permits("tracker", "issues.list")
                    && upgraded.toolkits.permits("github", "x")
            );
            assert!(!upgraded.toolkits.permits("tracker", "issues.delete"), "{name}: its filter is kept");
            assert!(!upgraded.toolkits.permits("newapp", "x"), "{name}: an app registered later is closed");
        }
    }
}
