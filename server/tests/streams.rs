//! Log streams (issue #54), black box: the real server binary streams a tenant's activity log
//! to the reference receivers (`server webhook-receiver`, `hec-receiver` and `otlp-receiver`,
//! each its own process) as signed newline-delimited JSON, Splunk HEC events carrying the
//! collector's token, or OTLP/HTTP logs, in order, on the engine under test; a receiver that is down holds
//! the stream's cursor (its lag shows) and the stream catches up once it is back; retention
//! deletes nothing a stream has not sent.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::process::{
    Fresh, Receiver, call, charge, default_agent, metric, start_fresh, start_on, start_receiver,
    start_receiver_on, start_reference, wait_until_listening,
};
use common::{COMPANY_KEY, OPERATOR_KEY};
use serde_json::{Value, json};

/// A server with the test's clock file and archive directory (archived every second).
struct Setup {
    envs: Vec<(String, String)>,
    fresh: Fresh,
    base: String,
    clock: PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, "").unwrap();
    let archive = dir.path().join("archive").to_string_lossy().to_string();
    let c = clock.to_string_lossy().to_string();
    let envs = [
        ("NAIVE_TEST_CLOCK_FILE", c.as_str()),
        ("NAIVE_OPERATOR_KEY", OPERATOR_KEY),
        ("NAIVE_ARCHIVE_URL", archive.as_str()),
        ("NAIVE_ARCHIVE_EVERY_SECS", "1"),
    ];
    let fresh = start_fresh(&envs).await;
    let base = fresh.server.base.clone();
    let envs = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Setup { envs, fresh, base, clock, _dir: dir }
}

/// Adds a stream to `receiver` (which learns its secret); its id and secret.
async fn add_stream(base: &str, receiver: &Receiver, more: Value) -> (String, String) {
    let mut body = json!({"url": format!("{}/naive", receiver.base)});
    body.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    let (status, created) = call(base, "POST", "/v1/streams", COMPANY_KEY, Some(body), None).await;
    assert_eq!(status, 201, "{created}");
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{created}");
    receiver.set_secret(secret).await;
    (created["stream"]["id"].as_str().unwrap().to_string(), secret.to_string())
}

async fn stream(base: &str, id: &str) -> Value {
    let (status, s) = call(base, "GET", &format!("/v1/streams/{id}"), COMPANY_KEY, None, None).await;
    assert_eq!(status, 200, "{s}");
    s
}

/// Polls the stream until `done` holds of it; the stream.
async fn stream_until(base: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        last = stream(base, id).await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the stream never got there: {last}");
}

/// The tenant's whole log (operator key), oldest first.
async fn log_of(base: &str, tenant: &str) -> Vec<Value> {
    let path = format!("/v1/logs?tenant={tenant}&limit=500");
    let (status, page) = call(base, "GET", &path, OPERATOR_KEY, None, None).await;
    assert_eq!(status, 200, "{page}");
    let mut items = page["items"].as_array().unwrap().clone();
    items.sort_by_key(|e| e["seq"].as_i64());
    items
}

/// Every entry the receivers acknowledged, in the order they arrived, each batch's signature
/// verified and each batch at most `max` entries.
async fn streamed(receivers: &[&Receiver], max: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for r in receivers {
        for req in r.received().await.iter().filter(|q| q["answered"] == 200) {
            assert_eq!(req["verified"], true, "a batch's signature did not verify: {req}");
            let body = req["body"].as_str().unwrap();
            assert!(body.ends_with('\n'), "each line ends in a newline: {body:?}");
            let batch: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert!(!batch.is_empty() && batch.len() <= max, "a batch of {}", batch.len());
            let (first, last) = (&batch[0]["seq"], &batch[batch.len() - 1]["seq"]);
            assert!(req["webhook_id"].as_str().unwrap().ends_with(&format!(".{first}-{last}")), "{req}");
            out.extend(batch);
        }
    }
    out
}

/// What arrived is the tenant's log in order, each entry once, each linking to the one
/// before: a receiver can verify the chain. A batch sent again after a lost acknowledgment
/// (the batch in flight when a server is killed) repeats whole, with the same entries; it is
/// dropped here as a receiver drops it, by its seq at or below the highest already seen.
fn assert_is_the_log(got: &[Value], log: &[Value]) {
    let mut kept: Vec<&Value> = Vec::new();
    for e in got {
        let seq = e["seq"].as_i64().unwrap();
        match kept.last() {
            Some(last) if seq <= last["seq"].as_i64().unwrap() => {
                let first = kept.iter().find(|k| k["seq"] == e["seq"]);
                assert_eq!(first.map(|k| &k["hash"]), Some(&e["hash"]), "a repeat differs: {e}");
            }
            _ => kept.push(e),
        }
    }
    let seqs: Vec<i64> = kept.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    let want: Vec<i64> = log.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, want, "the stream is not the log");
    for (e, w) in kept.iter().zip(kept.iter().skip(1)) {
        assert_eq!(w["prev_hash"], e["hash"], "the chain breaks between {} and {}", e["seq"], w["seq"]);
    }
    for (e, l) in kept.iter().zip(log) {
        assert_eq!(e["hash"], l["hash"]);
    }
}

#[tokio::test]
async fn a_stream_sends_the_log_in_order_signed_and_catches_up_after_its_receiver_was_down() {
    let Setup { fresh: _fresh, base, clock, _dir, .. } = setup().await;
    let receiver = start_receiver(&[]);
    let url = format!("{}/naive", receiver.base);
    let bad = [
        (json!({"url": "ftp://collector.example/x"}), "invalid_stream_url"),
        (json!({"url": url, "max_entries": 0}), "invalid_batch"),
        (json!({"url": url, "max_entries": 5001}), "invalid_batch"),
    ];
    for (body, code) in bad {
        let (status, b) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(body), None).await;
        assert_eq!((status, b["code"].as_str()), (400, Some(code)), "{b}");
    }
    let (status, b) =
        call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(json!({"url": url, "kind": "syslog"})), None)
            .await;
    assert_eq!(status, 400, "an unknown kind: {b}");

    // From the beginning, four entries a batch: the whole log so far arrives, then each
    // charge's entries as they are appended.
    let (id, secret) = add_stream(&base, &receiver, json!({"start": "beginning", "max_entries": 4})).await;
    let buyer = default_agent(&base, "streamed").await;
    for i in 0..3 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    let s = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let got = streamed(&[&receiver], 4).await;
    let tenant = got[0]["tenant_id"].as_str().unwrap().to_string();
    let log = log_of(&base, &tenant).await;
    assert_is_the_log(&got, &log);
    assert_eq!(s["health"]["acked_seq"], log.last().unwrap()["seq"], "{s}");
    assert!(got.iter().any(|e| e["verdict"] == "stream_added"), "the stream's own entry is in it");
    assert!(
        !serde_json::to_string(&stream(&base, &id).await).unwrap().contains("whsec_"),
        "the secret shows once"
    );

    // The receiver is down for two hours: nothing is lost, the lag shows, and the stream
    // waits; back on the same address, it gets the rest in order.
    let listen = receiver.base.trim_start_matches("http://").to_string();
    drop(receiver);
    for i in 3..6 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339()).unwrap();
    let down = stream_until(&base, &id, |s| {
        s["health"]["state"] == "failing" && s["health"]["lag_entries"].as_i64() >= Some(3)
    })
    .await;
    let h = &down["health"];
    assert!(h["lag_seconds"].as_i64() >= Some(7_000), "{down}");
    assert_eq!(h["last_error"], "stream_unreachable", "{down}");
    assert_eq!(h["acked_seq"], s["health"]["acked_seq"], "the cursor stays: {down}");
    assert!(metric(&base, "naive_stream_lag_seconds").await >= 7_000.0, "the lag is on /metrics");
    assert!(metric(&base, "naive_stream_lag_entries").await >= 3.0);
    assert_eq!(metric(&base, "naive_streams_failing").await, 1.0);
    assert!(metric(&base, "naive_stream_batches_total{kind=\"failed\"}").await >= 1.0);

    let back = start_receiver_on(&listen, &[]);
    back.set_secret(&secret).await;
    let s = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    assert_eq!(
        (s["health"]["lag_entries"].as_i64(), s["health"]["attempts"].as_i64()),
        (Some(0), Some(0)),
        "{s}"
    );
    let log = log_of(&base, &tenant).await;
    let mut all = got.clone();
    all.extend(streamed(&[&back], 4).await);
    assert_is_the_log(&all, &log);
    assert!(metric(&base, "naive_stream_entries_sent_total").await >= log.len() as f64);
    assert_eq!(metric(&base, "naive_streams_failing").await, 0.0, "it recovered");

    // Removed, it is gone with its secret, and that is logged.
    let (status, _) = call(&base, "DELETE", &format!("/v1/streams/{id}"), COMPANY_KEY, None, None).await;
    assert_eq!(status, 204);
    let (status, b) = call(&base, "GET", &format!("/v1/streams/{id}"), COMPANY_KEY, None, None).await;
    assert_eq!((status, b["code"].as_str()), (404, Some("not_found")), "{b}");
    let (_, secrets) = call(&base, "GET", "/v1/vault/secrets", COMPANY_KEY, None, None).await;
    assert!(!secrets.to_string().contains(&format!("stream-{id}")), "{secrets}");
    let log = log_of(&base, &tenant).await;
    let removed = log.iter().find(|e| e["verdict"] == "stream_removed").expect("the removal is logged");
    assert_eq!(removed["detail"]["stream_id"], id.as_str(), "{removed}");
}

/// Retention deletes archived entries only as far as every stream has sent them: with the
/// receiver down, the archive runs ahead and deletion stops at the stream's cursor; once the
/// stream has caught up, deletion goes on.
#[tokio::test]
async fn retention_deletes_nothing_a_stream_has_not_sent() {
    let Setup { fresh: _fresh, base, clock, _dir, .. } = setup().await;
    let receiver = start_receiver(&[]);
    let (id, secret) = add_stream(&base, &receiver, json!({"start": "beginning"})).await;
    let buyer = default_agent(&base, "retained").await;
    for i in 0..3 {
        assert_eq!(charge(&base, &buyer, &format!("sent {i}")).await.0, 200);
    }
    let sent = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let cursor = sent["health"]["acked_seq"].as_i64().unwrap();
    let listen = receiver.base.trim_start_matches("http://").to_string();
    drop(receiver);
    for i in 0..3 {
        assert_eq!(charge(&base, &buyer, &format!("unsent {i}")).await.0, 200);
    }
    let (status, b) =
        call(&base, "PUT", "/v1/tenant/retention", COMPANY_KEY, Some(json!({"log_days": 1})), None).await;
    assert_eq!(status, 200, "{b}");

    // Three days on, the day is archived, and deleted only up to the stream's cursor.
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339()).unwrap();
    let held = archive_until(&base, |a| a["deleted_through"].as_i64() >= Some(cursor)).await;
    assert_eq!(held["streamed_through"].as_i64(), Some(cursor), "{held}");
    assert!(held["archived_to"].as_i64() > Some(cursor), "the archive ran ahead: {held}");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (_, still) = call(&base, "GET", "/v1/tenant/archive", COMPANY_KEY, None, None).await;
    assert_eq!(
        still["deleted_through"].as_i64(),
        Some(cursor),
        "deleted what the stream has not sent: {still}"
    );

    // Back, the stream sends the rest, and deletion follows it.
    let back = start_receiver_on(&listen, &[]);
    back.set_secret(&secret).await;
    let s = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let unsent = streamed(&[&back], 500).await;
    let charges = unsent.iter().filter(|e| e["kind"] == "action").count();
    assert!(charges >= 3, "the three charges made while it was down: {unsent:?}");
    assert!(unsent.iter().all(|e| e["seq"].as_i64() > Some(cursor)), "only what it had not sent");
    let through = s["health"]["acked_seq"].as_i64();
    let freed = archive_until(&base, |a| a["deleted_through"].as_i64() > Some(cursor)).await;
    assert!(freed["deleted_through"].as_i64() <= through, "{freed}");
}

/// Polls `GET /v1/tenant/archive` until `done` holds of it; the status.
async fn archive_until(base: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        let (status, a) = call(base, "GET", "/v1/tenant/archive", COMPANY_KEY, None, None).await;
        assert_eq!(status, 200, "{a}");
        if done(&a) {
            return a;
        }
        last = a;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the archive never got there: {last}");
}

/// A receiver that refuses large bodies (413) gets smaller batches, and still every entry in
/// order; the stream remembers the smaller size.
#[tokio::test]
async fn a_receiver_answering_413_gets_smaller_batches() {
    let Setup { fresh: _fresh, base, _dir, .. } = setup().await;
    let receiver = start_receiver(&["--max-body", "8000"]);
    let buyer = default_agent(&base, "sized").await;
    for i in 0..12 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    let (id, _) = add_stream(&base, &receiver, json!({"start": "beginning", "max_entries": 64})).await;
    let s = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let requests = receiver.received().await;
    assert!(requests.iter().any(|r| r["answered"] == 413), "no batch was too large: {requests:?}");
    assert!(s["health"]["batch_entries"].as_i64() < Some(64), "{s}");
    let got = streamed(&[&receiver], 64).await;
    let tenant = got[0]["tenant_id"].as_str().unwrap().to_string();
    assert_is_the_log(&got, &log_of(&base, &tenant).await);
}

/// A server killed (SIGKILL) while its stream sends a backlog: the next process resumes from
/// the cursor, so every entry arrives, in order, and only the batch in flight at the kill may
/// arrive twice.
#[tokio::test]
async fn a_stream_resumes_from_its_cursor_after_the_server_is_killed() {
    let Setup { envs, fresh, base, _dir, .. } = setup().await;
    let receiver = start_receiver(&["--latency-ms", "150"]);
    let buyer = default_agent(&base, "crashed").await;
    for i in 0..30 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    let (id, _) = add_stream(&base, &receiver, json!({"start": "beginning", "max_entries": 5})).await;
    for _ in 0..300 {
        if receiver.received().await.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Fresh { server, db, _dir: _db_dir, _cluster } = fresh;
    server.kill();
    let sent_before = receiver.received().await.len();
    assert!(sent_before >= 3, "the stream had started");

    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let again = start_on(&db, &envs);
    wait_until_listening(&again.base).await;
    let s = stream_until(&again.base, &id, |s| s["health"]["state"] == "caught_up").await;
    let got = streamed(&[&receiver], 5).await;
    let tenant = got[0]["tenant_id"].as_str().unwrap().to_string();
    let log = log_of(&again.base, &tenant).await;
    assert_is_the_log(&got, &log);
    assert!(
        got.len() - log.len() <= 5,
        "more than the batch in flight was sent again: {} for {}",
        got.len(),
        log.len()
    );
    assert_eq!(s["health"]["acked_seq"], log.last().unwrap()["seq"], "{s}");
}

/// A Splunk HEC stream: the collector's token is required, kept in the vault and never shown;
/// the reference HEC (its own process, checking `Authorization: Splunk <token>` as HEC does)
/// gets one HEC event per entry, in order, each the entry's OCSF event with the entry itself
/// in `unmapped`. A stream with a token the collector refuses fails with HEC's 403 and keeps
/// its place.
#[tokio::test]
async fn a_splunk_hec_stream_sends_ocsf_events_with_the_collectors_token() {
    let Setup { fresh: _fresh, base, _dir, .. } = setup().await;
    let hec = start_reference("hec-receiver", "127.0.0.1:0", &["--token", "hec-token-0123"]);
    let url = format!("{}/services/collector/event", hec.base);
    for (body, code) in [
        (json!({"url": url, "kind": "splunk_hec"}), "missing_token"),
        (json!({"url": url, "kind": "splunk_hec", "token": ""}), "invalid_token"),
        (json!({"url": url, "kind": "otlp", "token": "has space"}), "invalid_token"),
    ] {
        let (status, b) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(body), None).await;
        assert_eq!((status, b["code"].as_str()), (400, Some(code)), "{b}");
    }
    let spec = json!({"url": url, "kind": "splunk_hec", "format": "ocsf", "token": "hec-token-0123",
        "start": "beginning", "max_entries": 3});
    let (status, created) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(spec), None).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        (&created["secret"], &created["stream"]["auth"]),
        (&Value::Null, &json!("token")),
        "{created}"
    );
    let id = created["stream"]["id"].as_str().unwrap().to_string();
    let buyer = default_agent(&base, "hec").await;
    for i in 0..2 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let got = hec.get("/received").await;
    assert_eq!(got["refused"], 0, "{got}");
    let events = got["events"].as_array().unwrap();
    let tenant = events[0]["event"]["metadata"]["tenant_uid"].as_str().unwrap().to_string();
    let log = log_of(&base, &tenant).await;
    let entries: Vec<Value> = events.iter().map(|e| e["event"]["unmapped"].clone()).collect();
    assert_is_the_log(&entries, &log);
    for (e, entry) in events.iter().zip(&log) {
        assert_eq!(
            (e["sourcetype"].as_str(), e["source"].as_str()),
            (Some("naive:ocsf"), Some("naive-gateway"))
        );
        let at = chrono::DateTime::parse_from_rfc3339(entry["at"].as_str().unwrap()).unwrap();
        assert!((e["time"].as_f64().unwrap() - at.timestamp_millis() as f64 / 1000.0).abs() < 0.002, "{e}");
        assert_eq!(e["event"]["metadata"]["sequence"], entry["seq"]);
    }
    let charged = events
        .iter()
        .find(|e| {
            e["event"]["api"]["operation"] == "cards.charge"
                && e["event"]["unmapped"]["actor"] == buyer.0.as_str()
        })
        .expect("the buyer's charge");
    let ev = &charged["event"];
    assert_eq!(
        (ev["class_uid"].as_u64(), ev["activity_id"].as_u64(), ev["type_uid"].as_u64()),
        (Some(6003), Some(1), Some(600301))
    );
    assert_eq!(
        (ev["disposition"].as_str(), ev["status"].as_str()),
        (Some("Allowed"), Some("Success")),
        "{ev}"
    );
    assert_eq!(ev["actor"]["user"]["uid"], buyer.0.as_str(), "{ev}");
    let (_, s) = call(&base, "GET", &format!("/v1/streams/{id}"), COMPANY_KEY, None, None).await;
    assert!(!s.to_string().contains("hec-token-0123"), "the token never shows: {s}");

    // A token the collector does not know: 403, the stream fails and keeps its place.
    let spec = json!({"url": url, "kind": "splunk_hec", "token": "not-the-token"});
    let (status, wrong) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(spec), None).await;
    assert_eq!(status, 201, "{wrong}");
    let wrong_id = wrong["stream"]["id"].as_str().unwrap();
    let failing = stream_until(&base, wrong_id, |s| s["health"]["state"] == "failing").await;
    assert_eq!(failing["health"]["last_error"], "stream_http_403", "{failing}");
    assert_eq!(failing["health"]["acked_seq"], wrong["stream"]["health"]["acked_seq"], "{failing}");
    assert!(hec.get("/received").await["refused"].as_u64() >= Some(1));
}

/// An OTLP/HTTP logs stream: the reference collector decodes each export with the official
/// OpenTelemetry protocol types and gets one log record per entry, in order, timestamped as
/// the entry, its body the entry as `/v1/logs` shows it and its attributes the entry's seq,
/// kind, verdict and hashes.
#[tokio::test]
async fn an_otlp_stream_sends_one_log_record_per_entry() {
    let Setup { fresh: _fresh, base, _dir, .. } = setup().await;
    let otlp = start_reference("otlp-receiver", "127.0.0.1:0", &[]);
    let spec = json!({"url": format!("{}/v1/logs", otlp.base), "kind": "otlp", "start": "beginning"});
    let (status, created) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(spec), None).await;
    assert_eq!(status, 201, "{created}");
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"), "no token: signed, {created}");
    let id = created["stream"]["id"].as_str().unwrap().to_string();
    let buyer = default_agent(&base, "otlp").await;
    assert_eq!(charge(&base, &buyer, "an order").await.0, 200);
    stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let records = otlp.get("/logs").await.as_array().unwrap().clone();
    let bodies: Vec<Value> =
        records.iter().map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap()).collect();
    let tenant = bodies[0]["tenant_id"].as_str().unwrap().to_string();
    let log = log_of(&base, &tenant).await;
    assert_is_the_log(&bodies, &log);
    for (r, entry) in records.iter().zip(&log) {
        assert_eq!(r["resource"]["service.name"], "naive-gateway", "{r}");
        assert_eq!(r["resource"]["naive.tenant_id"], tenant.as_str(), "{r}");
        assert_eq!(r["attributes"]["naive.seq"], entry["seq"], "{r}");
        assert_eq!(r["attributes"]["naive.hash"], entry["hash"], "{r}");
        assert_eq!(r["attributes"]["naive.kind"], entry["kind"], "{r}");
        let at = chrono::DateTime::parse_from_rfc3339(entry["at"].as_str().unwrap()).unwrap();
        assert_eq!(r["time_unix_nano"].as_u64(), Some(at.timestamp_nanos_opt().unwrap() as u64), "{r}");
    }
    let charged =
        records.iter().find(|r| r["attributes"]["naive.action"] == "cards.charge").expect("a charge");
    assert_eq!(
        (charged["attributes"]["naive.verdict"].as_str(), charged["severity_text"].as_str()),
        (Some("allow"), Some("INFO"))
    );
}

/// An OTLP collector that takes an export but rejects some of its records (`partial_success`
/// in a 200): the stream moves on, since OTLP says such records must not be sent again, and
/// its health names what the collector rejected, so the admin knows the SIEM misses them.
#[tokio::test]
async fn an_otlp_collectors_partial_rejection_moves_on_and_shows_in_the_streams_health() {
    let Setup { fresh: _fresh, base, _dir, .. } = setup().await;
    let otlp = start_reference("otlp-receiver", "127.0.0.1:0", &["--max-record-bytes", "1500"]);
    // The stream's own entry names its URL: a long one (a long path prefix, as behind a
    // proxy) makes that record too long for this collector.
    let url = format!("{}/pad-{}/v1/logs", otlp.base, "x".repeat(1_900));
    let spec = json!({"url": url, "kind": "otlp", "start": "beginning"});
    let (status, created) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(spec), None).await;
    assert_eq!(status, 201, "{created}");
    let id = created["stream"]["id"].as_str().unwrap().to_string();
    let buyer = default_agent(&base, "partial").await;
    assert_eq!(charge(&base, &buyer, "an order").await.0, 200);
    let s = stream_until(&base, &id, |s| s["health"]["state"] == "caught_up").await;
    let kept = otlp.get("/logs").await.as_array().unwrap().clone();
    let error = s["health"]["last_error"].as_str().unwrap_or_default();
    assert!(error.starts_with("otlp_partial_success") && error.contains("rejected 1 log records"), "{s}");
    let bodies: Vec<Value> =
        kept.iter().map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap()).collect();
    let tenant = bodies[0]["tenant_id"].as_str().unwrap().to_string();
    let log = log_of(&base, &tenant).await;
    let taken: Vec<Value> = log.iter().filter(|e| !e.to_string().contains("pad-")).cloned().collect();
    assert_eq!(
        (bodies.len(), taken.len()),
        (log.len() - 1, log.len() - 1),
        "all but the rejected one arrived"
    );
    for (b, e) in bodies.iter().zip(&taken) {
        assert_eq!(b["hash"], e["hash"], "in order");
    }
    assert!(metric(&base, "naive_stream_batches_total{kind=\"partly_rejected\"}").await >= 1.0);
}

/// A single entry the receiver refuses as too large (413 on a batch of one) is kept as the
/// stream's dead letter, recorded in the log, and the stream goes on past it; an admin's
/// retry sends it alone once the receiver takes it, and it is no longer a dead letter.
#[tokio::test]
async fn an_entry_refused_for_good_is_a_dead_letter_the_admin_can_retry() {
    let Setup { fresh: _fresh, base, _dir, .. } = setup().await;
    let receiver = start_receiver(&["--max-body", "2000"]);
    // The stream's own entry names its URL: a long one makes that entry too large alone.
    let long = format!("/{}", "x".repeat(1_900));
    let body = json!({"url": format!("{}{long}", receiver.base), "start": "beginning", "max_entries": 8});
    let (status, created) = call(&base, "POST", "/v1/streams", COMPANY_KEY, Some(body), None).await;
    assert_eq!(status, 201, "{created}");
    let (id, secret) = (created["stream"]["id"].as_str().unwrap(), created["secret"].as_str().unwrap());
    receiver.set_secret(secret).await;
    let buyer = default_agent(&base, "dead").await;
    assert_eq!(charge(&base, &buyer, "after the big one").await.0, 200);
    let s =
        stream_until(&base, id, |s| s["health"]["state"] == "caught_up" && s["health"]["dead_letters"] == 1)
            .await;
    assert_eq!(s["health"]["attempts"], 0, "{s}");
    let (status, dead) =
        call(&base, "GET", &format!("/v1/streams/{id}/dead-letters"), COMPANY_KEY, None, None).await;
    assert_eq!(status, 200, "{dead}");
    let items = dead["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{dead}");
    assert_eq!(items[0]["code"], "stream_entry_too_large");
    let seq = items[0]["seq"].as_i64().unwrap();
    let got = streamed(&[&receiver], 8).await;
    let tenant = got[0]["tenant_id"].as_str().unwrap().to_string();
    let log = log_of(&base, &tenant).await;
    let big = log.iter().find(|e| e["seq"] == seq).unwrap();
    assert_eq!(big["verdict"], "stream_added", "the one entry too large: {big}");
    let noted = log.iter().find(|e| e["verdict"] == "dead_letter").expect("the skip is logged");
    assert_eq!(
        (noted["detail"]["stream_id"].as_str(), noted["detail"]["seq"].as_i64()),
        (Some(id), Some(seq))
    );
    let rest: Vec<Value> = log.iter().filter(|e| e["seq"] != seq).cloned().collect();
    let seqs = |v: &[Value]| v.iter().map(|e| e["seq"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(&got), seqs(&rest), "everything else arrived, in order");
    assert_eq!(metric(&base, "naive_stream_dead_letters").await, 1.0);

    // Retried while the receiver still refuses it: it stays. Once it takes it: it is gone.
    let retry = format!("/v1/streams/{id}/dead-letters/{seq}/retry");
    let (status, b) = call(&base, "POST", &retry, COMPANY_KEY, None, None).await;
    assert_eq!((status, b["code"].as_str()), (409, Some("dead_letter_refused")), "{b}");
    let listen = receiver.base.trim_start_matches("http://").to_string();
    drop(receiver);
    let back = start_receiver_on(&listen, &[]);
    back.set_secret(secret).await;
    let (status, b) = call(&base, "POST", &retry, COMPANY_KEY, None, None).await;
    assert_eq!(status, 204, "{b}");
    let arrived = streamed(&[&back], 1).await;
    assert!(arrived.iter().any(|e| e["seq"] == seq && e["hash"] == big["hash"]), "{arrived:?}");
    assert_eq!(stream(&base, id).await["health"]["dead_letters"], 0);
    let (status, b) = call(&base, "POST", &retry, COMPANY_KEY, None, None).await;
    assert_eq!((status, b["code"].as_str()), (404, Some("not_found")), "{b}");
}
