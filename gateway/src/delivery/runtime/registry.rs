//! Registering a tenant's team runtime: its URL and shared secret. The secret goes into the
//! tenant's vault as [`SECRET_NAME`] (write-only, like every secret: what is shown afterwards
//! is its fingerprint), so the vault refuses to delete it while the runtime is registered.
//!
//! "Which runtime, whether it is claimed, reachable now or when last seen" is one read,
//! [`Gateway::runtime`](crate::Gateway::runtime), which probes the runtime live and records what it found.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::wire;
use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
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

pub(crate) fn check_secret(secret: &str) -> Result<()> {
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
    Ok(store
        .opt(
            "SELECT url, claimed, reachable, last_seen_at, last_error, updated_by, updated_at FROM runtimes WHERE tenant_id = ?",
            &[tenant],
        )
        .await?)
}

/// Removes the tenant's runtime and records it; `not_found` when it has none.
pub(crate) fn delete_in(c: &dyn Tx, t: &TenantId, actor: &str, via: Transport) -> Result<()> {
    if c.exec("DELETE FROM runtimes WHERE tenant_id = ?", &[&t])? == 0 {
        return Err(Error::NotFound { what: "runtime" });
    }
    activity::append(c, NewEntry::new(t, actor, Kind::Connector).via(via).verdict(Verdict::RuntimeRemoved))?;
    Ok(())
}

/// [`Gateway::note_contact`](crate::Gateway::note_contact) inside a job.
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

pub(crate) fn save_in(c: &dyn Tx, tenant: &TenantId, url: &str, actor: &str, via: Transport) -> Result<()> {
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
            .verdict(Verdict::RuntimeRegistered)
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
