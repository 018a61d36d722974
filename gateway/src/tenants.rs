//! Tenants and company keys.
//!
//! Guarantees: a tenant is created together with its permissive "Default" kit and one company
//! key, in one transaction, so a tenant never exists half set up. The company key's token is
//! returned once and only its hash is kept.

use chrono::{DateTime, Utc};
use policy::{Kit, KitDiff, Money};
use serde::{Deserialize, Serialize};

use crate::Gateway;
use rusqlite::params;

use crate::db;
use crate::error::{Error, Result};
use crate::ids::{KeyId, TenantId};
use crate::secrets::{self, MintedKey};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    /// Platform credits left.
    pub credit: Money,
    pub created_at: DateTime<Utc>,
}

/// A key token shown once at creation.
#[derive(Clone, Debug)]
pub struct IssuedKey {
    pub id: KeyId,
    pub token: String,
}

/// The longest tenant name we accept.
const MAX_NAME_LEN: usize = 120;

impl Gateway {
    /// Creates a tenant with the Default kit and a company key. `company_key` lets an operator
    /// choose the token (it must have the `nv_<prefix>_<secret>` form); otherwise one is minted.
    pub async fn create_tenant(
        &self,
        name: &str,
        credit: Money,
        company_key: Option<&str>,
    ) -> Result<(Tenant, IssuedKey)> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_LEN {
            return Err(Error::invalid(
                "invalid_tenant_name",
                format!("a tenant name is 1 to {MAX_NAME_LEN} characters"),
            ));
        }
        let key: MintedKey = match company_key {
            Some(t) => secrets::key_from_token(t).ok_or_else(|| {
                Error::invalid(
                    "invalid_key_format",
                    "a company key must look like nv_<8 lowercase letters or digits>_<16+ letters or digits>",
                )
            })?,
            None => secrets::mint_key(),
        };
        let tenant =
            Tenant { id: TenantId::generate(), name: name.to_string(), credit, created_at: Utc::now() };
        let key_id = KeyId::generate();
        let kit = Kit::default_kit();
        let (t, k, kid) = (tenant.clone(), key.clone(), key_id.clone());
        self.writer
            .run(move |c| {
                let at = db::ts(t.created_at);
                c.prepare_cached("INSERT INTO tenants (id, name, credit_units, created_at) VALUES (?, ?, ?, ?)")?
                    .execute(params![t.id.as_str(), t.name, credit.units(), at])?;
                c.prepare_cached(
                    "INSERT INTO kits (tenant_id, name, version, body, author, diff, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                )?
                .execute(params![
                    t.id.as_str(),
                    kit.name,
                    i64::from(kit.version.0),
                    kit.to_json(),
                    "system",
                    serde_json::to_string(&KitDiff::default()).expect("diff serializes"),
                    at
                ])?;
                c.prepare_cached(
                    "INSERT INTO company_keys (id, tenant_id, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                )?
                .execute(params![kid.as_str(), t.id.as_str(), k.prefix, k.hash, at])
                .map_err(|e| {
                    if crate::error::is_unique_violation(&e) {
                        Error::Conflict {
                            code: "key_prefix_taken",
                            message: "that company key's prefix is already in use; choose another".into(),
                        }
                    } else {
                        Error::Sql(e)
                    }
                })?;
                Ok(())
            })
            .await?;
        tracing::info!(tenant = %tenant.id, name = %tenant.name, "tenant created");
        Ok((tenant, IssuedKey { id: key_id, token: key.token }))
    }

    pub async fn tenant(&self, id: &TenantId) -> Result<Tenant> {
        sqlx::query_as::<_, (String, String, i64, DateTime<Utc>)>(
            "SELECT id, name, credit_units, created_at FROM tenants WHERE id = ?",
        )
        .bind(id.as_str())
        .fetch_optional(self.store.pool())
        .await?
        .map(tenant_from_row)
        .ok_or(Error::NotFound { what: "tenant" })
    }

    pub async fn tenants(&self) -> Result<Vec<Tenant>> {
        let rows = sqlx::query_as::<_, (String, String, i64, DateTime<Utc>)>(
            "SELECT id, name, credit_units, created_at FROM tenants ORDER BY created_at, id",
        )
        .fetch_all(self.store.pool())
        .await?;
        Ok(rows.into_iter().map(tenant_from_row).collect())
    }

    /// The tenant whose company key this is, if the key is valid and not revoked.
    pub async fn authenticate_company_key(&self, token: &str) -> Result<Option<TenantId>> {
        let Some(prefix) = secrets::split_token(token) else { return Ok(None) };
        let row = sqlx::query_as::<_, (String, String, String)>(
            "SELECT id, tenant_id, secret_hash FROM company_keys WHERE prefix = ? AND revoked_at IS NULL",
        )
        .bind(prefix)
        .fetch_optional(self.store.pool())
        .await?;
        let Some((id, tenant, hash)) = row else { return Ok(None) };
        if !secrets::digest_eq(&secrets::hash_token(token), &hash) {
            return Ok(None);
        }
        let now = Utc::now();
        self.writer
            .run(move |c| {
                c.prepare_cached("UPDATE company_keys SET last_used_at = ? WHERE id = ?")?
                    .execute(params![db::ts(now), id])?;
                Ok(())
            })
            .await?;
        Ok(Some(TenantId::from_db(tenant)))
    }
}

fn tenant_from_row((id, name, credit, created_at): (String, String, i64, DateTime<Utc>)) -> Tenant {
    Tenant {
        id: TenantId::from_db(id),
        name,
        credit: Money::from_units(credit).unwrap_or(Money::ZERO),
        created_at,
    }
}
