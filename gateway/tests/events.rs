//! The event bus in commit order: concurrent callers commit in group batches and are woken in
//! any order, yet a live subscriber must see every committed entry, in the order the log holds
//! them, with nothing missing and nothing twice. A subscriber that skips what it has already
//! seen (as `/v1/events` does, by sequence number) would otherwise lose an entry published
//! after a later one. Every kind of change is on the bus, not only actions: a kit save, a key
//! issued, a revoke.

mod support;

use std::sync::Arc;

use gateway::audit::activity::LogQuery;
use gateway::audit::bus::BusItem;
use serde_json::json;
use support::world;

const CALLERS: usize = 64;
const CALLS_EACH: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subscriber_sees_every_committed_entry_in_log_order() {
    let w = Arc::new(world().await);
    let agents: Vec<_> = {
        let mut v = Vec::new();
        for i in 0..4 {
            v.push(w.agent(&format!("bot-{i}"), "Default", None).await);
        }
        v
    };
    let mut sub = w.gw.bus().subscribe(w.tenant.clone());
    let after = w.gw.log(&w.tenant, &LogQuery { limit: Some(1), ..Default::default() }).await.unwrap();
    let after = after.first().map_or(0, |e| e.seq);

    let mut tasks = Vec::new();
    for c in 0..CALLERS {
        let (w, a) = (w.clone(), agents[c % agents.len()].clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..CALLS_EACH {
                w.call(&a, "web.read", json!({ "url": format!("https://example.test/{c}/{n}") })).await;
            }
        }));
    }
    // Changes that are not actions, made while the actions run.
    let kit = w.kit(r#"{"name":"Later","primitives":["web"]}"#).await;
    let extra = w.agent("late", &kit, None).await;
    w.gw.revoke_profile(&w.tenant, &extra.profile, "owner", None).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }

    let mut logged: Vec<i64> = Vec::new();
    loop {
        let from = logged.last().copied().unwrap_or(after);
        let q = LogQuery { after: Some(from), ..Default::default() };
        let page = w.gw.log(&w.tenant, &q).await.unwrap();
        if page.is_empty() {
            break;
        }
        logged.extend(page.iter().map(|e| e.seq));
    }
    assert!(
        logged.len() >= CALLERS * CALLS_EACH + 3,
        "the log holds every call and change: {}",
        logged.len()
    );
    let mut seen = Vec::new();
    while seen.len() < logged.len() {
        let item = tokio::time::timeout(std::time::Duration::from_secs(10), sub.next()).await;
        match item {
            // On PostgreSQL the bus publishes from LISTEN, a moment after COMMIT: an entry
            // committed before `after` was read can still arrive after subscribing. A
            // subscriber skips what it has passed, as `/v1/events` does.
            Ok(Some(BusItem::Event(p))) if p.entry.seq <= after => {}
            Ok(Some(BusItem::Event(p))) => seen.push(p.entry.seq),
            other => panic!("after {} of {} entries the bus gave {other:?}", seen.len(), logged.len()),
        }
    }
    let out_of_order = seen.windows(2).filter(|w| w[0] >= w[1]).count();
    assert_eq!(out_of_order, 0, "the bus published {out_of_order} entries after a later one");
    assert_eq!(seen, logged, "the bus carries exactly what the log holds, in its order");
}
