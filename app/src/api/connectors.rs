//! Server functions behind the Connectors page (admins): where each primitive's calls run,
//! the test probe, the connected apps (upstream MCP servers) and the vault's secrets.
//!
//! Guarantees: admins only; every change goes through the same gateway function as `/v1`
//! and is recorded as a console action by the admin who made it; a secret's value is
//! accepted once and never sent back to any page.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::{require_roles, require_view},
    to_fn_error,
};

/// One target's connector as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectorRow {
    /// A primitive (`cards`) or an action (`cards.charge`).
    pub target: String,
    /// `sandbox` or `http`.
    pub kind: String,
    pub url: Option<String>,
    pub timeout_ms: Option<u64>,
    /// `none`, `bearer`, `basic`, `header` or `hmac`.
    pub auth: String,
    pub secret: Option<String>,
    pub header: Option<String>,
    pub updated: Option<(String, String)>,
    /// Why it cannot be used now (its calls are `unavailable` until it is fixed), if so.
    pub problem: Option<String>,
}

/// A vault secret as the page shows it: never its value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecretRow {
    pub name: String,
    pub fingerprint: String,
    pub created_by: String,
    pub updated_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectorsData {
    /// Every primitive (configured or on the sandbox), then each configured action.
    pub rows: Vec<ConnectorRow>,
    pub secrets: Vec<SecretRow>,
    /// Every target a connector may be set for, for the form.
    pub targets: Vec<String>,
    /// The connected apps (upstream MCP servers), one row per toolkit: `target` is the
    /// toolkit and `kind` is `mcp`.
    pub apps: Vec<ConnectorRow>,
}

#[cfg(feature = "ssr")]
fn row(
    target: String,
    spec: &gateway::delivery::connectors::ConnectorSpec,
    updated: Option<(String, String)>,
) -> ConnectorRow {
    use gateway::delivery::connectors::{AuthSpec, ConnectorSpec};
    let ConnectorSpec::Http(h) = spec else {
        return ConnectorRow {
            target,
            kind: "sandbox".into(),
            url: None,
            timeout_ms: None,
            auth: "none".into(),
            secret: None,
            header: None,
            updated,
            problem: None,
        };
    };
    let (auth, header) = match &h.auth {
        AuthSpec::None => ("none", None),
        AuthSpec::Bearer { .. } => ("bearer", None),
        AuthSpec::Basic { .. } => ("basic", None),
        AuthSpec::Header { header, .. } => ("header", Some(header.clone())),
        AuthSpec::Hmac { .. } => ("hmac", None),
    };
    ConnectorRow {
        target,
        kind: "http".into(),
        url: Some(h.url.clone()),
        timeout_ms: Some(h.timeout_ms),
        auth: auth.into(),
        secret: h.auth.secret().map(str::to_string),
        header,
        updated,
        problem: None,
    }
}

#[server]
pub async fn connectors_page() -> Result<ConnectorsData, ServerFnError> {
    use gateway::delivery::connectors::ConnectorSpec;
    let (gw, tenant, _) = require_view("connectors").await?;
    let stored = gw.connectors_checked(&tenant.id).await.map_err(to_fn_error)?;
    let updated = |r: &gateway::delivery::connectors::ConnectorRecord| {
        Some((r.updated_by.clone(), r.updated_at.to_rfc3339()))
    };
    let mut rows: Vec<ConnectorRow> = policy::Primitive::ALL
        .iter()
        .map(|p| match stored.iter().find(|r| r.target == p.as_str()) {
            Some(r) => {
                ConnectorRow { problem: r.problem.clone(), ..row(r.target.clone(), &r.connector, updated(r)) }
            }
            None => row(p.as_str().to_string(), &ConnectorSpec::Sandbox {}, None),
        })
        .collect();
    rows.extend(stored.iter().filter(|r| r.target.contains('.')).map(|r| ConnectorRow {
        problem: r.problem.clone(),
        ..row(r.target.clone(), &r.connector, updated(r))
    }));
    let secrets = gw
        .secrets(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|s| SecretRow {
            name: s.name,
            fingerprint: s.fingerprint,
            created_by: s.created_by,
            updated_at: s.updated_at.to_rfc3339(),
            last_used_at: s.last_used_at.map(|t| t.to_rfc3339()),
        })
        .collect();
    let mut targets: Vec<String> = policy::Primitive::ALL.iter().map(|p| p.as_str().to_string()).collect();
    targets.extend(gw.catalog().iter().map(|t| t.name.clone()));
    let apps = gw
        .connected_apps_checked(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|a| {
            let spec = ConnectorSpec::Http(a.app.clone());
            ConnectorRow {
                kind: "mcp".into(),
                problem: a.problem.clone(),
                ..row(a.toolkit, &spec, Some((a.updated_by, a.updated_at.to_rfc3339())))
            }
        })
        .collect();
    Ok(ConnectorsData { rows, secrets, targets, apps })
}

/// The connector a form describes; an empty field is one not given.
#[cfg(feature = "ssr")]
fn spec_from_form(
    kind: &str,
    url: String,
    timeout_ms: String,
    auth: &str,
    secret: String,
    header: String,
) -> Result<gateway::delivery::connectors::ConnectorSpec, ServerFnError> {
    use gateway::delivery::connectors::{AuthSpec, ConnectorSpec, HttpSpec};
    let bad = |m: &str| ServerFnError::new(format!("invalid_connector: {m}"));
    if kind == "sandbox" {
        return Ok(ConnectorSpec::Sandbox {});
    }
    if kind != "http" {
        return Err(bad("choose the sandbox or an HTTP upstream"));
    }
    let timeout_ms = match timeout_ms.trim() {
        "" => 10_000,
        t => t.parse().map_err(|_| bad("the timeout is a whole number of milliseconds"))?,
    };
    let secret = secret.trim().to_string();
    let auth = match auth {
        "none" => AuthSpec::None,
        "bearer" => AuthSpec::Bearer { secret },
        "basic" => AuthSpec::Basic { secret },
        "header" => AuthSpec::Header { header: header.trim().to_string(), secret },
        "hmac" => AuthSpec::Hmac { secret },
        _ => return Err(bad("choose how the credential travels")),
    };
    Ok(ConnectorSpec::Http(HttpSpec { url: url.trim().to_string(), timeout_ms, auth }))
}

/// Sets where a target's calls run. A plain form post.
#[server(prefix = "/api", endpoint = "save_connector")]
pub async fn save_connector(
    target: String,
    kind: String,
    url: String,
    timeout_ms: String,
    auth: String,
    secret: String,
    header: String,
) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "setting connectors").await?;
        let spec = spec_from_form(&kind, url, timeout_ms, &auth, secret, header)?;
        let said = match &spec {
            gateway::delivery::connectors::ConnectorSpec::Http(h) => {
                format!("{target} now runs on {}.", h.url)
            }
            _ => format!("{target} now runs on the sandbox."),
        };
        gw.set_connector(
            &tenant.id,
            &target,
            spec,
            &by.username,
            gateway::audit::activity::Transport::Console,
        )
        .await
        .map_err(to_fn_error)?;
        back_with_notice(&said).await;
        Ok(())
    })
    .await
}

/// Sends a target's connector a test probe and shows what came back. A plain form post.
#[server(prefix = "/api", endpoint = "test_connector")]
pub async fn test_connector(target: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "testing connectors").await?;
        let p = gw.test_connector(&tenant.id, &target).await.map_err(to_fn_error)?;
        let status = p.status.map_or("no answer".to_string(), |s| format!("HTTP {s}"));
        let said =
            format!("Test of {target}: {status} in {} ms. The upstream answered: {}", p.latency_ms, p.answer);
        if p.ok {
            back_with_notice(&said).await;
            Ok(())
        } else {
            Err(ServerFnError::new(format!("connector_test_failed: {said}")))
        }
    })
    .await
}

/// Stores a secret in the vault; its value is never shown again. A plain form post.
#[server(prefix = "/api", endpoint = "store_secret")]
pub async fn store_secret(name: String, value: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing the vault").await?;
        let (info, created) = gw
            .put_secret(
                &tenant.id,
                name.trim(),
                &value,
                &by.username,
                gateway::audit::activity::Transport::Console,
            )
            .await
            .map_err(to_fn_error)?;
        let verb = if created { "Stored" } else { "Replaced" };
        back_with_notice(&format!(
            "{verb} secret {} ({}); its value is not shown again, anywhere.",
            info.name, info.fingerprint
        ))
        .await;
        Ok(())
    })
    .await
}

/// Deletes a secret no connector uses. A plain form post.
#[server(prefix = "/api", endpoint = "delete_secret")]
pub async fn delete_secret(name: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing the vault").await?;
        gw.delete_secret(&tenant.id, &name, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice(&format!("Deleted secret {name}.")).await;
        Ok(())
    })
    .await
}

/// Registers (or changes) a connected app. A plain form post.
#[server(prefix = "/api", endpoint = "save_connected_app")]
pub async fn save_connected_app(
    toolkit: String,
    url: String,
    timeout_ms: String,
    auth: String,
    secret: String,
    header: String,
) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing connected apps").await?;
        let gateway::delivery::connectors::ConnectorSpec::Http(spec) =
            spec_from_form("http", url, timeout_ms, &auth, secret, header)?
        else {
            unreachable!("an http form is an http spec")
        };
        let toolkit = toolkit.trim().to_string();
        let said = format!(
            "Connected app {toolkit} now reaches {}; its tools are connections tools from the next call.",
            spec.url
        );
        gw.set_connected_app(
            &tenant.id,
            &toolkit,
            spec,
            &by.username,
            gateway::audit::activity::Transport::Console,
        )
        .await
        .map_err(to_fn_error)?;
        back_with_notice(&said).await;
        Ok(())
    })
    .await
}

/// Lists a connected app's tools now and shows them with their effects. A plain form post.
#[server(prefix = "/api", endpoint = "test_connected_app")]
pub async fn test_connected_app(toolkit: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "testing connected apps").await?;
        let p = gw.test_connected_app(&tenant.id, &toolkit).await.map_err(to_fn_error)?;
        if !p.ok {
            let why = p.error.unwrap_or_default();
            return Err(ServerFnError::new(format!(
                "connected_app_test_failed: {toolkit} did not list its tools ({why})"
            )));
        }
        let tools: Vec<String> =
            p.tools.iter().map(|t| format!("{} ({})", t.name, t.effect.as_str())).collect();
        back_with_notice(&format!("Test of {toolkit}: {} tools: {}.", tools.len(), tools.join(", "))).await;
        Ok(())
    })
    .await
}

/// Removes a connected app. A plain form post.
#[server(prefix = "/api", endpoint = "delete_connected_app")]
pub async fn delete_connected_app(toolkit: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing connected apps").await?;
        gw.delete_connected_app(
            &tenant.id,
            &toolkit,
            &by.username,
            gateway::audit::activity::Transport::Console,
        )
        .await
        .map_err(to_fn_error)?;
        back_with_notice(&format!("Removed connected app {toolkit}.")).await;
        Ok(())
    })
    .await
}
