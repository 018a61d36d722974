//! The vault on the engine under test: secrets sealed per tenant under a master key the
//! database never holds, usable by connectors after the master key is rotated, refused to a
//! gateway started with any other key. The credential a connector presents is caught by a
//! minimal in-process HTTP listener (a unit-test fake; the server's tests use the real
//! reference upstream).

use gateway::audit::activity::Transport;
use gateway::delivery::connectors::{AuthSpec, ConnectorSpec, HttpSpec};
use gateway::domain::vault::MasterKey;
use gateway::{Gateway, GatewayConfig, TenantId};
use policy::Money;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers every request 200 `{}` and sends each request's `Authorization` header on.
async fn catcher() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/charge", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16 * 1024];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let auth = head
                .lines()
                .find_map(|l| l.strip_prefix("authorization: ").or_else(|| l.strip_prefix("Authorization: ")))
                .unwrap_or("")
                .to_string();
            let _ = tx.send(auth);
            let _ =
                sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}").await;
        }
    });
    (url, rx)
}

async fn open(url: &str, key: Option<&MasterKey>) -> gateway::Result<Gateway> {
    // The upstreams these tests stand up listen on loopback.
    let egress_allow = gateway::delivery::egress::Allowance::loopback();
    Gateway::open_with(url, GatewayConfig { master_key: key.cloned(), egress_allow, ..Default::default() })
        .await
}

async fn probe_credential(
    gw: &Gateway,
    t: &TenantId,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
) -> String {
    let p = gw.test_connector(t, "cards").await.unwrap();
    assert!(p.ok, "{p:?}");
    rx.recv().await.unwrap()
}

#[tokio::test]
async fn secrets_are_sealed_per_tenant_and_open_after_a_master_rotation_only_with_the_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let (k1, k2) = (MasterKey::generate(), MasterKey::generate());
    let gw = open(&url, Some(&k1)).await.unwrap();
    let (a, _) = gw.create_tenant("A", Money::dollars(10), None).await.unwrap();
    let (b, _) = gw.create_tenant("B", Money::dollars(10), None).await.unwrap();
    let (info_a, created) =
        gw.put_secret(&a.id, "proc", "value-of-a", "admin", Transport::Http).await.unwrap();
    assert!(created);
    let (info_b, _) = gw.put_secret(&b.id, "proc", "value-of-a", "admin", Transport::Http).await.unwrap();
    assert_ne!(info_a.fingerprint, info_b.fingerprint, "fingerprints are keyed per tenant");
    assert_eq!(gw.secrets(&a.id).await.unwrap().len(), 1);
    let sealed: Vec<(Vec<u8>,)> = gw.store().all("SELECT sealed FROM vault_secrets", &[]).await.unwrap();
    assert!(sealed.iter().all(|(s,)| !s.windows(10).any(|w| w == b"value-of-a")), "sealed, not in clear");

    let (url_up, mut caught) = catcher().await;
    let spec = ConnectorSpec::Http(HttpSpec {
        url: url_up,
        timeout_ms: 2_000,
        auth: AuthSpec::Bearer { secret: "proc".into() },
    });
    gw.set_connector(&a.id, "cards", spec, "admin", Transport::Http).await.unwrap();
    assert_eq!(probe_credential(&gw, &a.id, &mut caught).await, "Bearer value-of-a");

    assert_eq!(gw.rotate_master_key(k2.clone()).await.unwrap(), 2, "both tenants' data keys re-wrapped");
    gw.store().close().await;
    drop(gw);
    let refused = open(&url, Some(&k1)).await.unwrap_err();
    assert_eq!(refused.code(), "master_key_mismatch");
    assert!(refused.to_string().contains(&k2.fingerprint()), "{refused}");
    let gw = open(&url, Some(&k2)).await.unwrap();
    assert_eq!(
        probe_credential(&gw, &a.id, &mut caught).await,
        "Bearer value-of-a",
        "still works after rotation"
    );
    gw.store().close().await;
    drop(gw);

    // Without the master key the vault is locked; nothing opens and nothing is written.
    let locked = open(&url, None).await.unwrap();
    assert_eq!(locked.test_connector(&a.id, "cards").await.unwrap_err().code(), "vault_locked");
    let e = locked.put_secret(&a.id, "other", "v", "admin", Transport::Http).await.unwrap_err();
    assert_eq!(e.code(), "vault_locked");
    assert_eq!(locked.secrets(&a.id).await.unwrap().len(), 1, "names stay readable");
}

#[tokio::test]
async fn one_tenants_secret_is_never_another_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let gw = open(&url, Some(&MasterKey::generate())).await.unwrap();
    let (a, _) = gw.create_tenant("A", Money::dollars(10), None).await.unwrap();
    let (b, _) = gw.create_tenant("B", Money::dollars(10), None).await.unwrap();
    gw.put_secret(&a.id, "proc", "a-secret", "admin", Transport::Http).await.unwrap();
    assert!(gw.secrets(&b.id).await.unwrap().is_empty());
    assert_eq!(gw.secret(&b.id, "proc").await.unwrap_err().code(), "not_found");
    // B cannot point a connector at A's secret by name.
    let spec = ConnectorSpec::Http(HttpSpec {
        url: "http://127.0.0.1:9/x".into(),
        timeout_ms: 1_000,
        auth: AuthSpec::Bearer { secret: "proc".into() },
    });
    let e = gw.set_connector(&b.id, "cards", spec, "admin", Transport::Http).await.unwrap_err();
    assert_eq!(e.code(), "unknown_secret");
    assert_eq!(
        gw.delete_secret(&b.id, "proc", "admin", Transport::Http).await.unwrap_err().code(),
        "not_found"
    );
    assert_eq!(gw.secrets(&a.id).await.unwrap().len(), 1);
}
