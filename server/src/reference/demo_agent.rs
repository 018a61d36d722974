//! The demo agent: the demo tenant's agents at work, with their own scoped keys, exactly as
//! real agents would call: about half of the calls over `/v1`, the rest as MCP tool calls over
//! `/mcp`, so a newcomer's console shows both transports. It keeps a newcomer's console alive: actions that run,
//! charges that park for approval, calls refused by the kit or the cap, and writebacks that
//! become proposals, at a gentle rate.
//!
//! It runs two ways with one driver ([`drive`]): inside `server` when started with
//! `--demo-agent` (what `make run` does), minting keys through the gateway it shares; or as
//! `server demo-agent --base-url … --company-key …` beside any server, minting keys over
//! `/v1` with the company key. Either way it revokes the keys it minted when it stops.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::mcp::client::{McpClient, Mode};

/// A demo agent's name and scoped key.
#[derive(Clone, Debug)]
pub struct Agent {
    pub name: String,
    pub profile: String,
    pub token: String,
}

/// The demo's profiles the driver uses.
pub const NAMES: [&str; 4] = ["procurement-bot", "receipts-clerk", "support-mailer", "research-crawler"];

/// One step of the script: who, and what request.
struct Step {
    agent: &'static str,
    path: &'static str,
    body: Value,
}

/// A small xorshift, so the script varies without a dependency; the race test replays its
/// runs with it too. Seed it with anything but 0.
pub struct Dice(pub u64);

impl Dice {
    /// The next number below `n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The step for tick `i`: mostly reads and mail that run; now and then a small charge that
/// runs, a charge above the approval threshold that parks, a charge at a merchant the kit
/// does not list, a brain query the Default kit refuses, and a writeback with proposals.
fn step(i: u64, dice: &mut Dice) -> Step {
    let n = dice.next(1000);
    let cents = |lo: u64, hi: u64, d: &mut Dice| format!("{}.{:02}", lo + d.next(hi - lo), d.next(100));
    match dice.next(20) {
        0..=5 => Step {
            agent: "research-crawler",
            path: "web/read",
            body: json!({"url": format!("https://docs.example.test/guide/{n}")}),
        },
        6..=8 => Step {
            agent: "support-mailer",
            path: "email/send",
            body: json!({"to": format!("customer{n}@example.test"), "subject": format!("Re: ticket #{n}")}),
        },
        9 => Step { agent: "support-mailer", path: "brain/query", body: json!({"q": "refund policy"}) },
        10..=11 => Step {
            agent: "procurement-bot",
            path: "cards/charge",
            body: json!({"amount": cents(1, 4, dice), "merchant": "acme-supplies", "memo": format!("order {n}")}),
        },
        12 => Step {
            agent: "procurement-bot",
            path: "cards/charge",
            body: json!({"amount": cents(26, 34, dice), "merchant": "globex-parts", "memo": format!("bulk order {n}")}),
        },
        13 => Step {
            agent: "receipts-clerk",
            path: "cards/charge",
            body: json!({"amount": cents(1, 3, dice), "merchant": "unknown-shop", "memo": "receipt scan"}),
        },
        14..=16 => Step {
            agent: "research-crawler",
            path: "search/query",
            body: json!({"q": format!("supplier lead times {n}")}),
        },
        _ => Step {
            agent: "research-crawler",
            path: "brain/writebacks",
            body: json!({
                "run_id": format!("demo-run-{}", i / 10),
                "source": "research-crawler",
                "claims": [
                    {"object_type": "fact", "content": {"claim": format!("Supplier {n} ships in {} days", 2 + n % 9)}},
                    {"object_type": "preference", "content": {"claim": "Prefer acme-supplies for cable"}}
                ]
            }),
        },
    }
}

/// The MCP tool of a step's `/v1` path: `web/read` is `naive_web_read`.
fn tool_of(path: &str) -> String {
    match path {
        "brain/writebacks" => "naive_brain_submit_writeback".into(),
        p => format!("naive_{}", p.replace('/', "_")),
    }
}

/// Sends step `s` as `agent` over `/v1`, or as an MCP tool call when `over_mcp`; what came
/// back, for the log.
async fn send(
    client: &reqwest::Client,
    base: &str,
    agent: &Agent,
    s: &Step,
    over_mcp: bool,
) -> Result<String, String> {
    if over_mcp {
        // Stateless (spec 2026-07-28): nothing to reopen when the server restarts.
        let mut mcp =
            McpClient::new(client.clone(), format!("{base}/mcp"), Some(agent.token.clone()), Mode::Stateless);
        let r = mcp.call_tool(&tool_of(s.path), &s.body).await?;
        return Ok(format!("mcp isError={}", r["isError"]));
    }
    let url = if s.path.starts_with("brain/writebacks") {
        format!("{base}/v1/{}", s.path)
    } else {
        format!("{base}/v1/users/{}/{}", agent.profile, s.path)
    };
    let res =
        client.post(&url).bearer_auth(&agent.token).json(&s.body).send().await.map_err(|e| e.to_string())?;
    Ok(format!("http {}", res.status().as_u16()))
}

/// Drives `agents` against the server at `base` at `per_minute` steps until `stop` turns
/// true. Failures are logged and the script goes on: the server may be restarting.
pub async fn drive(base: &str, agents: &[Agent], per_minute: u32, mut stop: watch::Receiver<bool>) {
    let client = crate::http_client_builder().timeout(Duration::from_secs(10)).build().expect("a client");
    let period = Duration::from_secs_f64(60.0 / f64::from(per_minute.max(1)));
    let mut tick = tokio::time::interval(period);
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut dice = Dice(seed | 1);
    tracing::info!(agents = agents.len(), per_minute, "demo agent started");
    for i in 0u64.. {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let s = step(i, &mut dice);
        let Some(agent) = agents.iter().find(|a| a.name == s.agent) else { continue };
        match send(&client, base, agent, &s, dice.next(2) == 0).await {
            Ok(answer) => tracing::debug!(agent = s.agent, path = s.path, answer, "demo step"),
            Err(e) => tracing::warn!(agent = s.agent, error = %e, "demo step failed; going on"),
        }
    }
    tracing::info!("demo agent stopped");
}

/// Mints keys for the demo profiles through the gateway (the in-process way).
pub async fn keys_in_process(
    gw: &gateway::Gateway,
) -> gateway::Result<Option<(gateway::TenantId, Vec<Agent>)>> {
    let Some(tenant) = gw.tenants().await?.into_iter().find(|t| t.name == gateway::ops::demo::DEMO_TENANT)
    else {
        return Ok(None);
    };
    let mut agents = Vec::new();
    for p in gw.profiles(&tenant.id).await? {
        if NAMES.contains(&p.name.as_str()) && p.status == policy::SubjectStatus::Active {
            let (_, issued) = gw.issue_key(&tenant.id, &p.id, ACTOR).await?;
            agents.push(Agent { name: p.name, profile: p.id.to_string(), token: issued.token });
        }
    }
    Ok(Some((tenant.id, agents)))
}

/// Revokes the keys [`keys_in_process`] minted.
pub async fn revoke_in_process(gw: &gateway::Gateway, tenant: &gateway::TenantId, agents: &[Agent]) {
    for a in agents {
        if let Ok(Some(subject)) = gw.authenticate(&a.token).await {
            let _ = gw.revoke_key(tenant, &subject.profile, &subject.key, ACTOR).await;
        }
    }
}

/// Who the activity log names for the keys the demo agent mints and revokes.
pub const ACTOR: &str = gateway::audit::activity::DEMO_AGENT_ACTOR;

/// An error of the standalone demo agent, said so that the operator knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error("cannot reach {0}: {1} (is the server running? pass --base-url)")]
    Unreachable(String, reqwest::Error),
    #[error(
        "the server refused the company key ({0}); pass the demo tenant's key with --company-key or NAIVE_COMPANY_KEY"
    )]
    Refused(u16),
    #[error("the server answered {0} to {1}")]
    Unexpected(u16, String),
    #[error("none of the demo profiles ({}) exist in this tenant", NAMES.join(", "))]
    NoDemoProfiles,
}

/// Mints keys for the demo profiles over `/v1` with the company key (the standalone way).
pub async fn keys_over_http(base: &str, company_key: &str) -> Result<Vec<(Agent, String)>, StandaloneError> {
    let client = crate::http_client();
    let get = |path: String| client.get(format!("{base}{path}")).bearer_auth(company_key).send();
    let res =
        get("/v1/agent-profiles".into()).await.map_err(|e| StandaloneError::Unreachable(base.into(), e))?;
    if matches!(res.status().as_u16(), 401 | 403) {
        return Err(StandaloneError::Refused(res.status().as_u16()));
    }
    let tree: Value = res.json().await.map_err(|e| StandaloneError::Unreachable(base.into(), e))?;
    let mut out = Vec::new();
    for item in tree["items"].as_array().into_iter().flatten() {
        let p = &item["profile"];
        let (Some(name), Some(id)) = (p["name"].as_str(), p["id"].as_str()) else { continue };
        if !NAMES.contains(&name) || p["status"] != "active" {
            continue;
        }
        let path = format!("/v1/agent-profiles/{id}/keys");
        let res = client
            .post(format!("{base}{path}"))
            .bearer_auth(company_key)
            .send()
            .await
            .map_err(|e| StandaloneError::Unreachable(base.into(), e))?;
        if res.status().as_u16() != 201 {
            return Err(StandaloneError::Unexpected(res.status().as_u16(), path));
        }
        let body: Value = res.json().await.map_err(|e| StandaloneError::Unreachable(base.into(), e))?;
        let token = body["secret"].as_str().unwrap_or_default().to_string();
        let key_id = body["key"]["id"].as_str().unwrap_or_default().to_string();
        out.push((Agent { name: name.into(), profile: id.into(), token }, key_id));
    }
    if out.is_empty() {
        return Err(StandaloneError::NoDemoProfiles);
    }
    Ok(out)
}

/// Revokes the keys [`keys_over_http`] minted.
pub async fn revoke_over_http(base: &str, company_key: &str, minted: &[(Agent, String)]) {
    let client = crate::http_client();
    for (agent, key_id) in minted {
        let url = format!("{base}/v1/agent-profiles/{}/keys/{key_id}", agent.profile);
        let _ = client.delete(url).bearer_auth(company_key).send().await;
    }
}
