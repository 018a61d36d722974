//! Each tenant's connector settings: where the calls of a primitive (or of one action) are
//! carried out. An admin writes them over `/v1` or in the console; they are checked before
//! anything is stored (a target the catalog knows, an http(s) URL without credentials in it,
//! a timeout in bounds, a credential the vault holds), and every change is in the activity log.
//!
//! The sandbox is the default and is never stored: setting a target to `sandbox` removes its
//! row. A stored HTTP connector names its credential; the vault refuses to delete a secret a
//! connector names, so a configured connector never points at nothing.

use chrono::{DateTime, Utc};
use policy::{Catalog, Primitive};
use reqwest::header::HeaderName;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;

/// The shortest and longest timeout an HTTP connector may have.
pub const MIN_TIMEOUT_MS: u64 = 100;
pub const MAX_TIMEOUT_MS: u64 = 300_000;
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The longest upstream URL.
pub const MAX_URL_LEN: usize = 2_048;
/// Headers the protocol sets itself, which a credential may not replace.
const RESERVED_HEADERS: [&str; 8] = [
    "content-type",
    "content-length",
    "host",
    "idempotency-key",
    "naive-action",
    "naive-signature",
    "transfer-encoding",
    "connection",
];

/// Where calls run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConnectorSpec {
    /// The built-in sandbox: deterministic answers, nothing real happens.
    Sandbox {},
    /// An HTTP upstream (see the connector protocol).
    Http(HttpSpec),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// The upstream's URL, `http://` or `https://`, with no credentials in it.
    pub url: String,
    /// How long a call may take before it is `unavailable` (100 to 300,000 ms).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub auth: AuthSpec,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// How the upstream's credential travels; `secret` names a secret in the tenant's vault.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthSpec {
    #[default]
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer { secret: String },
    /// `Authorization: Basic <base64(secret)>`; the secret is `user:password`.
    Basic { secret: String },
    /// `<header>: <secret>`, such as `X-Api-Key`.
    Header { header: String, secret: String },
    /// The body signed: `Naive-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
    Hmac { secret: String },
}

impl AuthSpec {
    /// The vault secret this credential names, if any.
    pub fn secret(&self) -> Option<&str> {
        match self {
            AuthSpec::None => None,
            AuthSpec::Bearer { secret }
            | AuthSpec::Basic { secret }
            | AuthSpec::Header { secret, .. }
            | AuthSpec::Hmac { secret } => Some(secret),
        }
    }
}

/// What a connector is set for: a primitive, or one of its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Primitive(Primitive),
    Action { name: String, primitive: Primitive },
}

impl Target {
    /// `cards` or `cards.charge`, checked against the catalog.
    pub fn parse(s: &str, catalog: &Catalog) -> Result<Target> {
        if let Some(p) = Primitive::parse(s) {
            return Ok(Target::Primitive(p));
        }
        match catalog.get(s) {
            Some(tool) => Ok(Target::Action { name: tool.name.clone(), primitive: tool.primitive }),
            None => Err(Error::invalid(
                "invalid_connector_target",
                format!(
                    "`{s}` is neither a primitive (such as `cards`) nor a catalog action (such as `cards.charge`)"
                ),
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Target::Primitive(p) => p.as_str(),
            Target::Action { name, .. } => name,
        }
    }
}

/// A tenant's stored connector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorRecord {
    /// A primitive (`cards`) or an action (`cards.charge`); the action's wins.
    pub target: String,
    pub connector: ConnectorSpec,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
    /// Why it cannot run now (`invalid_secret_value`, `vault_locked`), if it cannot: its
    /// calls are `unavailable` until an admin fixes it. Other connectors are unaffected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl HttpSpec {
    /// Checks everything but the secret's existence (the saving job checks that).
    pub(crate) fn check(&self) -> Result<reqwest::Url> {
        let bad_url = |why: &str| Error::invalid("invalid_connector_url", format!("the upstream URL {why}"));
        if self.url.len() > MAX_URL_LEN {
            return Err(bad_url(&format!("is longer than {MAX_URL_LEN} characters")));
        }
        let url = reqwest::Url::parse(&self.url).map_err(|e| bad_url(&format!("does not parse: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(bad_url(
                "must be http:// or https:// with a host, such as https://processor.example.com/charge",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad_url(
                "must not carry credentials; store them in the vault and name them in `auth`",
            ));
        }
        if !(MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&self.timeout_ms) {
            return Err(Error::invalid(
                "invalid_timeout",
                format!("timeout_ms is {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS} milliseconds"),
            ));
        }
        if let AuthSpec::Header { header, .. } = &self.auth {
            check_header(header)?;
        }
        if let Some(s) = self.auth.secret() {
            crate::domain::vault::check_name(s)?;
        }
        Ok(url)
    }
}

pub(crate) fn check_header(name: &str) -> Result<HeaderName> {
    let parsed =
        HeaderName::from_bytes(name.as_bytes()).ok().filter(|h| !RESERVED_HEADERS.contains(&h.as_str()));
    parsed.ok_or_else(|| {
        Error::invalid(
            "invalid_header_name",
            format!("`{name}` cannot carry a credential: name a header such as X-Api-Key, not one the protocol sets"),
        )
    })
}

type ConnectorRow = (String, String, String, DateTime<Utc>);

/// The tenant's configured connectors, by target.
pub(crate) async fn list(store: &crate::store::Store, tenant: &TenantId) -> Result<Vec<ConnectorRecord>> {
    let sql =
        "SELECT target, spec, updated_by, updated_at FROM connectors WHERE tenant_id = ? ORDER BY target";
    let rows: Vec<ConnectorRow> = store.all(sql, &[tenant]).await?;
    rows.into_iter().map(record).collect()
}

pub(crate) fn record((target, spec, updated_by, updated_at): ConnectorRow) -> Result<ConnectorRecord> {
    let connector = serde_json::from_str(&spec).map_err(|e| {
        Error::internal("storage_decode", format!("a stored connector does not read back: {e}"))
    })?;
    Ok(ConnectorRecord { target, connector, updated_by, updated_at, problem: None })
}

/// Refuses a credential naming a secret the tenant's vault does not hold.
pub(crate) fn require_secret(c: &dyn Tx, tenant: &TenantId, secret: Option<&str>) -> Result<()> {
    if let Some(name) = secret
        && c.row("SELECT 1 FROM vault_secrets WHERE tenant_id = ? AND name = ?", &[tenant, &name])?.is_none()
    {
        return Err(Error::invalid(
            "unknown_secret",
            format!("there is no secret named `{name}` in this tenant's vault; store it first"),
        ));
    }
    Ok(())
}

/// Stores (or, for the sandbox, removes) the connector for `target`, refusing an unknown
/// secret; records the change.
pub(crate) fn save_in(
    c: &dyn Tx,
    tenant: &TenantId,
    target: &str,
    spec: &ConnectorSpec,
    actor: &str,
    via: Transport,
) -> Result<()> {
    let secret = match spec {
        ConnectorSpec::Http(h) => h.auth.secret(),
        ConnectorSpec::Sandbox {} => None,
    };
    require_secret(c, tenant, secret)?;
    match spec {
        ConnectorSpec::Sandbox {} => {
            c.exec("DELETE FROM connectors WHERE tenant_id = ? AND target = ?", &[tenant, &target])?;
        }
        ConnectorSpec::Http(_) => {
            let body = serde_json::to_string(spec).expect("specs serialize");
            c.exec(
                "INSERT INTO connectors (tenant_id, target, spec, secret_name, updated_by, updated_at) VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (tenant_id, target) DO UPDATE SET spec = excluded.spec, secret_name = excluded.secret_name, \
                 updated_by = excluded.updated_by, updated_at = excluded.updated_at",
                &[tenant, &target, &body, &secret, &actor, &Utc::now()],
            )?;
        }
    }
    let (kind, url) = match spec {
        ConnectorSpec::Sandbox {} => (Verdict::Sandbox, None),
        ConnectorSpec::Http(h) => (Verdict::Http, Some(h.url.as_str())),
    };
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict(kind)
            .detail(json!({ "target": target, "connector": kind, "url": url, "secret": secret })),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(v: serde_json::Value) -> std::result::Result<ConnectorSpec, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn specs_read_from_json_strictly() {
        let s = http(json!({"kind": "http", "url": "https://p.example/charge", "auth": {"kind": "bearer", "secret": "proc"}}))
            .unwrap();
        let ConnectorSpec::Http(h) = &s else { panic!("{s:?}") };
        assert_eq!(h.timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(h.auth.secret(), Some("proc"));
        assert_eq!(http(json!({"kind": "sandbox"})).unwrap(), ConnectorSpec::Sandbox {});
        assert!(http(json!({"kind": "http", "url": "https://p", "bcc": 1})).is_err(), "unknown field");
        assert!(http(json!({"kind": "sandbox", "url": "https://p"})).is_err(), "unknown field");
        assert!(http(json!({"kind": "http", "url": "https://p", "auth": {"kind": "bearer"}})).is_err());
        assert!(http(json!({"kind": "ftp"})).is_err());
        let round = serde_json::to_value(&s).unwrap();
        assert_eq!(http(round).unwrap(), s);
    }

    #[test]
    fn urls_timeouts_and_headers_are_checked() {
        let spec =
            |url: &str, timeout_ms: u64, auth: AuthSpec| HttpSpec { url: url.into(), timeout_ms, auth };
        assert!(spec("http://127.0.0.1:9/x", 500, AuthSpec::None).check().is_ok());
        for (s, code) in [
            (spec("ftp://x/y", 500, AuthSpec::None), "invalid_connector_url"),
            (spec("not a url", 500, AuthSpec::None), "invalid_connector_url"),
            (spec("https://user:pw@p.example/", 500, AuthSpec::None), "invalid_connector_url"),
            (spec("https://p.example/", 50, AuthSpec::None), "invalid_timeout"),
            (spec("https://p.example/", 300_001, AuthSpec::None), "invalid_timeout"),
            (
                spec(
                    "https://p.example/",
                    500,
                    AuthSpec::Header { header: "Idempotency-Key".into(), secret: "s".into() },
                ),
                "invalid_header_name",
            ),
            (
                spec(
                    "https://p.example/",
                    500,
                    AuthSpec::Header { header: "bad header".into(), secret: "s".into() },
                ),
                "invalid_header_name",
            ),
            (
                spec("https://p.example/", 500, AuthSpec::Bearer { secret: "Bad Name".into() }),
                "invalid_secret_name",
            ),
        ] {
            assert_eq!(s.check().unwrap_err().code(), code, "{s:?}");
        }
    }

    #[test]
    fn targets_are_primitives_or_catalog_actions() {
        let catalog = Catalog::builtin();
        assert_eq!(Target::parse("cards", &catalog).unwrap(), Target::Primitive(Primitive::Cards));
        assert_eq!(
            Target::parse("cards.charge", &catalog).unwrap(),
            Target::Action { name: "cards.charge".into(), primitive: Primitive::Cards }
        );
        for bad in ["", "card", "cards.steal", "CARDS"] {
            assert_eq!(Target::parse(bad, &catalog).unwrap_err().code(), "invalid_connector_target");
        }
    }
}
