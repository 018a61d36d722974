//! Lost calls to a networked connector, on the engine under test: a call whose carrier stops
//! before it settles is sent again by the recovery sweep with its action id, and its hold
//! settles on the upstream's answer, once. The upstream is a minimal in-process HTTP listener
//! (a unit-test fake; `server/tests/crash.rs` kills the real server with the real upstream).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use gateway::GatewayConfig;
use gateway::audit::activity::Transport;
use gateway::delivery::connectors::{AuthSpec, ConnectorSpec, HttpSpec};
use gateway::domain::vault::MasterKey;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Never answers the first request (holds the connection open); answers each later one with
/// a result and a cost of 3.00. Counts the requests and remembers each body.
async fn forgetful_upstream() -> (String, Arc<AtomicUsize>, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/charge", listener.local_addr().unwrap());
    let (seen, bodies) = (Arc::new(AtomicUsize::new(0)), Arc::new(std::sync::Mutex::new(Vec::new())));
    let (n, b) = (seen.clone(), bodies.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (n, b) = (n.clone(), b.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let read = sock.read(&mut buf).await.unwrap_or(0);
                b.lock().unwrap().push(String::from_utf8_lossy(&buf[..read]).to_string());
                if n.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                let body = r#"{"result":{"charge_id":"ch_1"},"cost":"3.00"}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(format!("{head}{body}").as_bytes()).await;
            });
        }
    });
    (url, seen, bodies)
}

#[tokio::test]
async fn a_lost_call_is_sent_again_and_settles_on_the_upstreams_answer() {
    let config = GatewayConfig {
        master_key: Some(MasterKey::generate()),
        hold_lease_secs: 1,
        // The upstream is this test's own listener on loopback.
        egress_allow: gateway::delivery::egress::Allowance::loopback(),
        ..Default::default()
    };
    let w = support::world_with(config).await;
    w.kit(r#"{"name": "Ops", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "100"}}}"#).await;
    let agent = w.agent("buyer", "Ops", None).await;
    let (url, seen, bodies) = forgetful_upstream().await;
    w.gw.put_secret(&w.tenant, "proc", "sk_test", "admin", Transport::Http).await.unwrap();
    let spec = ConnectorSpec::Http(HttpSpec {
        url,
        timeout_ms: 60_000,
        auth: AuthSpec::Bearer { secret: "proc".into() },
    });
    w.gw.set_connector(&w.tenant, "cards", spec, "admin", Transport::Http).await.unwrap();

    // The call goes out and its carrier is lost before any answer (the task is dropped).
    let call = tokio::spawn({
        let (w_gw, token) = (w.gw.clone(), agent.token.clone());
        async move {
            w_gw.perform(gateway::domain::calls::ActionCall {
                token,
                action: "cards.charge".into(),
                args: json!({"amount": "5.00", "merchant": "acme"}),
                idempotency_key: Some("order-1".into()),
            })
            .await
        }
    });
    while seen.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call.abort();
    assert_eq!(w.count("carries").await, 1, "the call in flight is recorded");
    // The ordinary sweep leaves it alone: it is the recovery's to settle.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(w.gw.sweep().await.unwrap().holds_expired, 0);
    assert_eq!(w.gw.recover_lost_calls().await.unwrap(), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while w.count("carries").await > 0 {
        assert!(std::time::Instant::now() < deadline, "the recovered call never settled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.load(Ordering::SeqCst), 2, "sent once more, no more");
    let bodies = bodies.lock().unwrap().clone();
    let id = |b: &str| b.split("idempotency-key: ").nth(1).map(|s| s.lines().next().unwrap().to_string());
    assert_eq!(id(&bodies[0]), id(&bodies[1]), "the resend carries the same action id");
    assert!(id(&bodies[0]).is_some(), "{}", bodies[0]);

    let (posted,): (i64,) =
        w.gw.store()
            .one("SELECT COALESCE(posted_units, -1) FROM holds WHERE action = 'cards.charge'", &[])
            .await
            .unwrap();
    let price = policy::Catalog::builtin().get("cards.charge").unwrap().price;
    assert_eq!(posted, policy::Money::dollars(3).units() + price.units(), "posted what the upstream charged");
    let (recovered,): (i64,) =
        w.gw.store().one("SELECT COUNT(*) FROM activity WHERE verdict = 'recovered'", &[]).await.unwrap();
    assert_eq!(recovered, 1);
    // The agent's resend with the same key gets the recovered answer, not a second charge.
    let again = w
        .call_idem(&agent, "cards.charge", json!({"amount": "5.00", "merchant": "acme"}), Some("order-1"))
        .await
        .unwrap();
    assert_eq!(again.json()["cost"], "3.00", "{}", again.body);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    w.assert_ledger_ok().await;
}
