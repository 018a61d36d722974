//! Registering a tenant's team runtime: its URL and shared secret. The secret goes into the
//! tenant's vault as [`SECRET_NAME`] (write-only, like every secret: what is shown afterwards
//! is its fingerprint), so the vault refuses to delete it while the runtime is registered.
//!
//! "Which runtime, whether it is claimed, reachable now or when last seen" is one read,
//! [`Gateway::runtime`], which probes the runtime live and records what it found.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::client::{RuntimeClient, WireError};
use super::wire;
use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Transport};
use crate::domain::vault::SecretInfo;
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;

/// The vault secret a registered runtime's shared secret is kept under.
pub const SECRET_NAME: &str = "team-runtime";
/// The longest runtime URL.
pub const MAX_URL_LEN: usize = 2_048;
/// The shortest shared secret accepted.
pub const MIN_SECRET_LEN: usize = 16;

/// What a tenant has registered, and what is known of it.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuntimeInfo {
    pub url: String,
    /// The shared secret, as the vault shows it: a name and a fingerprint, never the value.
    pub secret: SecretInfo,
    /// Whether the runtime has been claimed for this tenant.
    pub claimed: bool,
    /// Whether the last contact got an answer (`null` before the first).
    pub reachable: Option<bool>,
    pub last_seen_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    /// What the runtime said just now, when it answered.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub live: Option<wire::Status>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

/// A runtime's URL: http(s), with a host, without credentials. Stored with a trailing slash,
/// so the wire's paths join onto it.
pub fn check_url(url: &str) -> Result<url::Url> {
    let bad = |why: &str| Error::invalid("invalid_runtime_url", format!("the runtime URL {why}"));
    if url.len() > MAX_URL_LEN {
        return Err(bad(&format!("is longer than {MAX_URL_LEN} characters")));
    }
    let mut u = url::Url::parse(url).map_err(|e| bad(&format!("does not parse: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return Err(bad("must be http:// or https:// with a host, such as https://runtime.example.com/"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad("must not carry credentials; the shared secret signs every request"));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(bad("must not have a query or a fragment"));
    }
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    Ok(u)
}

fn check_secret(secret: &str) -> Result<()> {
    if secret.chars().count() < MIN_SECRET_LEN {
        return Err(Error::invalid(
            "weak_runtime_secret",
            format!("the runtime's shared secret is at least {MIN_SECRET_LEN} characters"),
        ));
    }
    Ok(())
}

/// url, claimed, reachable, last seen, last error, updated by, updated at.
pub(crate) type RuntimeRow =
    (String, i64, Option<i64>, Option<DateTime<Utc>>, Option<String>, String, DateTime<Utc>);

/// The tenant's registration as stored, if any.
pub(crate) async fn runtime_row(
    store: &crate::store::Store,
    tenant: &TenantId,
) -> Result<Option<RuntimeRow>> {
    store
        .opt(
            "SELECT url, claimed, reachable, last_seen_at, last_error, updated_by, updated_at FROM runtimes WHERE tenant_id = ?",
            &[tenant],
        )
        .await
}

impl Gateway {
    /// Registers (or re-points) the tenant's runtime. `secret` may be left out when only the
    /// URL changes. The runtime is claimed for the tenant at once if it answers.
    pub async fn register_runtime(
        &self,
        tenant: &TenantId,
        url: &str,
        secret: Option<&str>,
        actor: &str,
        via: Transport,
    ) -> Result<RuntimeInfo> {
        let url = check_url(url)?;
        self.check_egress(&url).await?;
        match secret {
            Some(s) => {
                check_secret(s)?;
                self.put_secret(tenant, SECRET_NAME, s, actor, via).await?;
            }
            None if self.runtime_row(tenant).await?.is_none() => {
                return Err(Error::invalid(
                    "secret_required",
                    "registering a runtime needs its shared secret (at least 16 characters)",
                ));
            }
            None => {}
        }
        let (t, u, a) = (tenant.clone(), url.to_string(), actor.to_string());
        self.write(move |c| save_in(c, &t, &u, &a, via)).await?;
        self.connectors_changed(tenant);
        if let Some(client) = self.runtime_client(tenant).await? {
            let claimed = client.claim(tenant.as_str()).await;
            self.note_contact(tenant, claimed.as_ref().map(|_| ()).map_err(WireError::code), claimed.is_ok())
                .await?;
        }
        self.runtime(tenant).await?.ok_or(Error::NotFound { what: "runtime" })
    }

    /// Removes the tenant's runtime; its secret stays in the vault until deleted there.
    pub async fn delete_runtime(&self, tenant: &TenantId, actor: &str, via: Transport) -> Result<()> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| {
            if c.exec("DELETE FROM runtimes WHERE tenant_id = ?", &[&t])? == 0 {
                return Err(Error::NotFound { what: "runtime" });
            }
            activity::append(c, NewEntry::new(&t, &a, Kind::Connector).via(via).verdict("runtime_removed"))?;
            Ok(())
        })
        .await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// The tenant's runtime, probed now: `None` when none is registered.
    pub async fn runtime(&self, tenant: &TenantId) -> Result<Option<RuntimeInfo>> {
        let Some(client) = self.runtime_client(tenant).await? else { return Ok(None) };
        let live = client.status().await;
        let claimed = live.as_ref().ok().map(|s| s.claimed_by.as_deref() == Some(tenant.as_str()));
        self.note_contact(
            tenant,
            live.as_ref().map(|_| ()).map_err(WireError::code),
            claimed.unwrap_or(false),
        )
        .await?;
        let Some(row) = self.runtime_row(tenant).await? else { return Ok(None) };
        let (url, claimed, reachable, last_seen_at, last_error, updated_by, updated_at) = row;
        Ok(Some(RuntimeInfo {
            url,
            secret: self.secret(tenant, SECRET_NAME).await?,
            claimed: claimed != 0,
            reachable: reachable.map(|r| r != 0),
            last_seen_at,
            last_error,
            live: live.ok(),
            updated_by,
            updated_at,
        }))
    }

    async fn runtime_row(&self, tenant: &TenantId) -> Result<Option<RuntimeRow>> {
        runtime_row(&self.store, tenant).await
    }

    /// A client for the tenant's runtime, its secret opened; `None` when none is registered.
    pub(crate) async fn runtime_client(&self, tenant: &TenantId) -> Result<Option<RuntimeClient>> {
        let Some((url, ..)) = self.runtime_row(tenant).await? else { return Ok(None) };
        let url = check_url(&url)?;
        let secret = self.open_secret(tenant, SECRET_NAME).await?;
        Ok(Some(RuntimeClient::new(url, secret, self.egress.clone())))
    }

    /// Records the outcome of a contact with the tenant's runtime. A claim seen (or made)
    /// sticks; an error is kept until the next answer.
    pub(crate) async fn note_contact(
        &self,
        tenant: &TenantId,
        outcome: std::result::Result<(), String>,
        claimed: bool,
    ) -> Result<()> {
        let t = tenant.clone();
        self.write(move |c| note_contact_in(c, &t, &outcome, claimed)).await
    }
}

/// [`Gateway::note_contact`] inside a job.
pub(crate) fn note_contact_in(
    c: &dyn Tx,
    tenant: &TenantId,
    outcome: &std::result::Result<(), String>,
    claimed: bool,
) -> Result<()> {
    let now = Utc::now();
    match outcome {
        Ok(()) => c.exec(
            "UPDATE runtimes SET reachable = 1, last_seen_at = ?, last_error = NULL, claimed = CASE WHEN ? = 1 THEN 1 ELSE claimed END WHERE tenant_id = ?",
            &[&now, &i64::from(claimed), tenant],
        )?,
        Err(code) => c.exec(
            "UPDATE runtimes SET reachable = 0, last_error = ? WHERE tenant_id = ?",
            &[code, tenant],
        )?,
    };
    Ok(())
}

fn save_in(c: &dyn Tx, tenant: &TenantId, url: &str, actor: &str, via: Transport) -> Result<()> {
    let now = Utc::now();
    let changed = c.exec(
        "UPDATE runtimes SET url = ?, secret_name = ?, updated_by = ?, updated_at = ?, claimed = CASE WHEN url = ? THEN claimed ELSE 0 END WHERE tenant_id = ?",
        &[&url, &SECRET_NAME, &actor, &now, &url, tenant],
    )?;
    if changed == 0 {
        c.exec(
            "INSERT INTO runtimes (tenant_id, url, secret_name, claimed, updated_by, updated_at) VALUES (?, ?, ?, 0, ?, ?)",
            &[tenant, &url, &SECRET_NAME, &actor, &now],
        )?;
    }
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict("runtime_registered")
            .detail(json!({ "url": url, "secret": SECRET_NAME })),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_urls_are_http_with_a_host_and_end_in_a_slash() {
        assert_eq!(check_url("http://127.0.0.1:9000").unwrap().as_str(), "http://127.0.0.1:9000/");
        assert_eq!(
            check_url("https://rt.example.com/team").unwrap().as_str(),
            "https://rt.example.com/team/"
        );
        for bad in ["ftp://x", "file:///etc/passwd", "http://u:p@x/", "not a url", "http://x/?a=1"] {
            let err = check_url(bad).unwrap_err();
            assert_eq!(err.code(), "invalid_runtime_url", "{bad}");
        }
    }
}
