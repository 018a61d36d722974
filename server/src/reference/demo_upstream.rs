//! The demo's upstream: with `--demo-upstream` (`make run` turns it on) the server starts the
//! reference upstream (`server upstream`) as a child process and points the demo tenant's
//! `cards` and `email` at it, and connects its MCP tracker as the `tracker` toolkit. It also
//! starts the reference team runtime (`server team-runtime`) and registers it as the demo
//! tenant's runtime, and the reference webhook receiver (`server webhook-receiver`), which
//! every demo notification reaches, and the reference Slack (`server slack`), set as the demo
//! tenant's Slack app so its page (printed on start) shows each parked call with working
//! Approve and Deny buttons. The credential is made for this run and kept in the tenant's
//! vault, so the demo's charges and mail cross real HTTP, the upstream checks the credential,
//! and the agents' keys never reach it. The child stops with the server.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use gateway::Gateway;
use gateway::audit::activity::Transport;
use gateway::delivery::connectors::{AuthSpec, ConnectorSpec, HttpSpec};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::error::StartError;

/// The vault secret the demo's connectors use.
pub const SECRET_NAME: &str = "demo-upstream";
/// The toolkit the upstream's MCP tracker is connected as.
pub const TRACKER_TOOLKIT: &str = "tracker";
/// The demo kit the tracker is opened to.
const RESEARCH_KIT: &str = "Research";
/// Who the log names for the wiring.
const ACTOR: &str = "demo";
/// Like a real provider, the demo upstream takes a moment to answer.
const LATENCY_MS: u64 = 25;

/// The running child; killed when dropped, and gone by itself when this process dies.
pub struct DemoUpstream {
    _child: tokio::process::Child,
    _runtime: tokio::process::Child,
    _receiver: tokio::process::Child,
    _slack: Option<DemoSlack>,
    pub base: String,
}

/// The demo's reference Slack, started before the gateway (it is the gateway's Slack Web API).
pub struct DemoSlack {
    _child: tokio::process::Child,
    pub base: String,
}

/// Starts the reference Slack when the demo's upstream is on and no real Slack is named.
pub async fn start_slack(config: &crate::config::Config) -> Result<Option<DemoSlack>, StartError> {
    if !config.demo_upstream || config.slack_api_url != gateway::delivery::slack::DEFAULT_API_URL {
        return Ok(None);
    }
    let (child, base) = spawn("slack", &[], ("NAIVE_DEMO", "1")).await?;
    Ok(Some(DemoSlack { _child: child, base }))
}

/// Sets the reference Slack as the tenant's Slack app, and tells it the app's Request URL.
async fn wire_slack(
    gateway: &Gateway,
    tenant: &gateway::TenantId,
    slack: &DemoSlack,
) -> Result<(), StartError> {
    let settings = gateway::delivery::slack::SlackSettings {
        bot_token: Some("xoxb-demo-reference-workspace".into()),
        signing_secret: Some(super::slack::SIGNING_SECRET.into()),
        channels: vec!["C0DEMOAPPROVALS".into()],
    };
    let app = gateway.put_slack_app(tenant, settings, ACTOR, Transport::Console).await?;
    let res = crate::http_client()
        .post(format!("{}/request-url", slack.base))
        .json(&serde_json::json!({ "url": app.interactions_url }))
        .send()
        .await;
    match res {
        Ok(r) if r.status().is_success() => Ok(()),
        other => Err(StartError::Config(format!("the demo Slack: the Request URL was not taken: {other:?}"))),
    }
}

/// Where the upstream records what it did: beside a SQLite database, else in the temp dir.
pub fn records_path(database_url: &str) -> PathBuf {
    let file = "demo-upstream.db";
    match database_url.strip_prefix("sqlite://").map(|p| p.split('?').next().unwrap_or(p)) {
        Some(path) if !path.is_empty() => {
            PathBuf::from(path).parent().map_or_else(|| PathBuf::from(file), |d| d.join(file))
        }
        _ => std::env::temp_dir().join(file),
    }
}

/// Starts the upstream and the team runtime and wires the demo tenant to them; `None` when
/// there is no demo tenant.
pub async fn start(
    gateway: &Gateway,
    records: PathBuf,
    slack: Option<DemoSlack>,
) -> Result<Option<DemoUpstream>, StartError> {
    let tenants = gateway.tenants().await?;
    let Some(tenant) = tenants.into_iter().find(|t| t.name == gateway::ops::demo::DEMO_TENANT) else {
        tracing::warn!(
            "--demo-upstream: there is no demo tenant in this database, so nothing is wired to it"
        );
        return Ok(None);
    };
    let secret = gateway::secrets::random_password();
    let latency = LATENCY_MS.to_string();
    let (child, base) = spawn(
        "upstream",
        &["--latency-ms", &latency, "--records", &records.to_string_lossy()],
        ("NAIVE_UPSTREAM_SECRET", &secret),
    )
    .await?;
    wire(gateway, &tenant.id, &base, &secret).await?;
    let board = records.with_file_name(RUNTIME_BOARD);
    let (runtime, runtime_base) =
        spawn("team-runtime", &["--board", &board.to_string_lossy()], ("NAIVE_RUNTIME_SECRET", &secret))
            .await?;
    gateway.register_runtime(&tenant.id, &runtime_base, Some(&secret), ACTOR, Transport::Console).await?;
    let (receiver, receiver_base) = spawn("webhook-receiver", &[], ("NAIVE_DEMO", "1")).await?;
    subscribe(gateway, &tenant.id, &receiver_base).await?;
    tracing::info!(%base, %runtime_base, %receiver_base, "the demo tenant's cards, email and tracker app run on the reference upstream, its tasks on the reference team runtime, and its notifications go to the reference webhook receiver");
    if let Some(s) = &slack {
        wire_slack(gateway, &tenant.id, s).await?;
        tracing::info!(slack = %s.base, "the demo tenant's approvals are posted to the reference Slack: open it to approve or deny there");
    }
    Ok(Some(DemoUpstream { _child: child, _runtime: runtime, _receiver: receiver, _slack: slack, base }))
}

/// Registers the receiver for every event (replacing an earlier run's endpoint, whose
/// receiver is gone) and tells it the signing secret.
async fn subscribe(gateway: &Gateway, tenant: &gateway::TenantId, base: &str) -> Result<(), StartError> {
    let fail = |e: &dyn std::fmt::Display| StartError::Config(format!("the demo webhook receiver: {e}"));
    let earlier = gateway.webhooks(tenant).await?.into_iter().filter(|w| w.created_by == ACTOR);
    for old in earlier {
        gateway.delete_webhook(tenant, &old.id, ACTOR, Transport::Console).await?;
    }
    let spec = gateway::delivery::webhooks::EndpointSpec {
        url: format!("{base}/hook"),
        events: gateway::delivery::webhooks::EVENTS.iter().map(|e| e.to_string()).collect(),
        format: gateway::delivery::webhooks::Format::Standard,
    };
    let created = gateway.create_webhook(tenant, spec, ACTOR, Transport::Console).await?;
    let res = crate::http_client()
        .post(format!("{base}/secret"))
        .json(&serde_json::json!({ "secret": created.secret }))
        .send()
        .await
        .map_err(|e| fail(&e))?;
    if !res.status().is_success() {
        return Err(fail(&res.status()));
    }
    Ok(())
}

/// The demo runtime's board file, beside the upstream's records.
const RUNTIME_BOARD: &str = "demo-team-runtime.db";

/// Starts `server <command> --listen 127.0.0.1:0 --exit-with-stdin <args>` with its secret
/// in the environment; the child and the address it printed.
async fn spawn(
    command: &str,
    args: &[&str],
    (secret_var, secret): (&str, &str),
) -> Result<(tokio::process::Child, String), StartError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        StartError::Config(format!("the demo {command}: {what}: {e}"))
    };
    let exe = std::env::current_exe().map_err(|e| fail("cannot find this binary", &e))?;
    let mut child = tokio::process::Command::new(exe)
        .args([command, "--listen", "127.0.0.1:0", "--exit-with-stdin"])
        .args(args)
        .env(secret_var, secret)
        // Held open by this process alone: when it ends, however, the child sees EOF and exits.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail("cannot start", &e))?;
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .map_err(|e| fail("did not start listening", &e))?
        .map_err(|e| fail("cannot read its output", &e))?
        .unwrap_or_default();
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .ok_or_else(|| fail("printed no address", &first))?
        .to_string();
    // Whatever else it prints goes nowhere, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, base))
}

/// Stores this run's credential, points `cards` (bearer) and `email` (signed) at `base`, and
/// connects its `/mcp` as the `tracker` app.
async fn wire(
    gateway: &Gateway,
    tenant: &gateway::TenantId,
    base: &str,
    secret: &str,
) -> gateway::Result<()> {
    gateway.put_secret(tenant, SECRET_NAME, secret, ACTOR, Transport::Console).await?;
    for (target, path, auth) in [
        ("cards", "/cards/charge", AuthSpec::Bearer { secret: SECRET_NAME.into() }),
        ("email", "/mail/send", AuthSpec::Hmac { secret: SECRET_NAME.into() }),
    ] {
        let spec = ConnectorSpec::Http(HttpSpec { url: format!("{base}{path}"), timeout_ms: 10_000, auth });
        gateway.set_connector(tenant, target, spec, ACTOR, Transport::Console).await?;
    }
    let tracker = HttpSpec {
        url: format!("{base}/mcp"),
        timeout_ms: 10_000,
        auth: AuthSpec::Bearer { secret: SECRET_NAME.into() },
    };
    gateway.set_connected_app(tenant, TRACKER_TOOLKIT, tracker, ACTOR, Transport::Console).await?;
    open_tracker(gateway, tenant).await
}

/// A new connected app is closed to agents until a kit names it: the demo's admin opens the
/// tracker to the research kit, with `issues.create` pinned as the write it is (it declares
/// no effect, so it would otherwise park as destructive).
async fn open_tracker(gateway: &Gateway, tenant: &gateway::TenantId) -> gateway::Result<()> {
    let Ok(current) = gateway.current_kit(tenant, RESEARCH_KIT).await else { return Ok(()) };
    if current.kit.toolkits.filters.contains_key(TRACKER_TOOLKIT) {
        return Ok(());
    }
    let mut kit = current.kit.clone();
    let mut filter = policy::kit::ToolFilter::default();
    filter.effects.insert("issues.create".into(), policy::Effect::Write);
    kit.toolkits.filters.insert(TRACKER_TOOLKIT.into(), filter);
    gateway.save_kit(tenant, kit, Some(current.kit.version), ACTOR).await.map(drop)
}
