//! The demo agent inside the server: the demo tenant's agents call `/v1` with their own keys,
//! and the console gets every kind of traffic; stopping the server revokes those keys.

mod common;

use std::collections::BTreeSet;

use common::{config, spawn_with};
use gateway::audit::activity::{Actor, Kind, Transport, Verdict};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_agent_makes_every_kind_of_traffic_and_revokes_its_keys_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/naive.db", dir.path().display());
    let mut cfg = config(&url);
    cfg.demo_agent = true;
    cfg.demo_agent_per_minute = 1200;
    let app = spawn_with(cfg).await;
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let wanted = ["action/allow", "park/park", "refusal/deny", "writeback/allow"];
    let mut seen = BTreeSet::new();
    let mut transports = BTreeSet::new();
    // Generous: the agent makes about twenty calls a second, and each kind comes up within a
    // few dozen calls; this only waits, it does not time anything.
    for _ in 0..600 {
        let log = app
            .gateway
            .log(&tenant, &gateway::audit::activity::LogQuery { limit: Some(500), ..Default::default() })
            .await
            .unwrap();
        seen = log
            .iter()
            .filter(|e| !matches!(e.actor.as_str(), "demo-agent" | "admin" | "system"))
            .map(|e| format!("{}/{}", e.kind, e.verdict.map_or("", Verdict::as_str)))
            .collect();
        // About half of its calls go over MCP.
        transports = log.iter().filter(|e| e.kind == Kind::Action).filter_map(|e| e.transport).collect();
        if wanted.iter().all(|w| seen.contains(*w)) && transports.len() == 2 && log.len() > 40 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for w in wanted {
        assert!(seen.contains(w), "no {w} from the demo agent; saw {seen:?}");
    }
    assert_eq!(transports, BTreeSet::from([Transport::Http, Transport::Mcp]));
    let proposals = app.gateway.proposals(&tenant, &Default::default()).await.unwrap();
    assert!(!proposals.is_empty(), "writebacks became proposals");
    app.stop().await;

    // After the stop, every key the demo agent minted is revoked.
    let gw = gateway::Gateway::open(&url).await.unwrap();
    let mut minted = 0;
    for p in gw.profiles(&tenant).await.unwrap() {
        for k in gw.keys(&tenant, &p.id).await.unwrap() {
            let by_agent = gw
                .log(
                    &tenant,
                    &gateway::audit::activity::LogQuery {
                        profile: Some(p.id.clone()),
                        limit: Some(500),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .iter()
                .any(|e| {
                    e.actor == Actor::DemoAgent
                        && e.verdict == Some(Verdict::Issued)
                        && e.detail["key_id"] == k.id.as_str()
                });
            if by_agent {
                minted += 1;
                assert!(k.revoked_at.is_some(), "key {} minted by the demo agent is still live", k.id);
            }
        }
    }
    assert_eq!(minted, 4, "one key for each demo agent");
}
