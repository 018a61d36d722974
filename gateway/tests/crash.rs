//! Kill the process mid-load with SIGKILL, restart on the same file, and check that the
//! invariants hold: the sweeper expires holds whose actions never ran, entries still sum to
//! the totals, and the audit chain verifies.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use gateway::Gateway;

#[tokio::test]
async fn invariants_hold_after_a_kill_mid_load() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/soak.db", dir.path().display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway-load"))
        .args(["soak", "--db", &url])
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The soak prints every 100 ms, so this loop always gets a line to check the deadline on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the load died before it got going");
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the soak did not reach 300 actions in 120 s; last report: {line}");
        }
        if let Some(n) = line.trim().strip_prefix("done ").and_then(|n| n.parse::<u64>().ok())
            && n >= 300
        {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL: no chance to finish anything in flight
    child.wait().unwrap();

    let gw = Gateway::open(&url).await.unwrap();
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let (pending_before,): (i64,) =
        gw.store().one("SELECT COUNT(*) FROM holds WHERE status = 'pending'", &[]).await.unwrap();
    // The soak leased its holds in flight for a second: once that lapses, a sweep (as any
    // instance runs every second) ends every hold whose action never ran.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let orphans = loop {
        gw.sweep().await.unwrap();
        let (orphans,): (i64,) = gw
            .store()
            .one(
                "SELECT COUNT(*) FROM holds h WHERE status = 'pending' AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.hold_id = h.id AND a.status = 'pending')",
                &[],
            )
            .await
            .unwrap();
        if orphans == 0 || std::time::Instant::now() > deadline {
            break orphans;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(orphans, 0, "every hold whose action never ran was expired ({pending_before} pending before)");
    let report = gw.check_ledger(&tenant).await.unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    let chain = gw.verify_log(&tenant).await.unwrap();
    assert!(chain.ok && chain.entries > 0, "{chain:?}");
}
