//! Traces (issue #36), black box: the real server binary exports its spans over OTLP/HTTP to a
//! receiver in this test (protobuf, decoded with `opentelemetry-proto`). A call sent with a
//! W3C `traceparent` continues that trace; its span carries transport, action, verdict and
//! kit version, with child spans for the commit and the connector call; the connector's
//! upstream receives the trace context; and the span of the human decision on a parked call
//! links to the span of the call it parked.

mod common;

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::HeaderMap;
use common::COMPANY_KEY;
use common::process::{approver_token, call, start_fresh};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

#[derive(Clone, Default)]
struct Seen {
    spans: Arc<Mutex<Vec<Span>>>,
    traceparents: Arc<Mutex<Vec<String>>>,
}

/// The OTLP receiver (`POST /v1/traces`) and the connector's upstream (`POST /charge`).
async fn receiver() -> (String, Seen) {
    let seen = Seen::default();
    let (a, b) = (seen.clone(), seen.clone());
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| async move {
                let req = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                let spans = req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans);
                a.spans.lock().unwrap().extend(spans);
                ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
            }),
        )
        .route(
            "/charge",
            axum::routing::post(move |headers: HeaderMap| async move {
                let tp = headers.get("traceparent").map(|v| v.to_str().unwrap().to_string());
                b.traceparents.lock().unwrap().push(tp.unwrap_or_default());
                axum::Json(json!({ "result": { "charge_id": "ch_traced" }, "cost": "1.00" }))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn attr(s: &Span, key: &str) -> Option<String> {
    let v = s.attributes.iter().find(|a| a.key == key)?.value.as_ref()?.value.as_ref()?;
    Some(match v {
        Any::StringValue(s) => s.clone(),
        Any::IntValue(i) => i.to_string(),
        other => format!("{other:?}"),
    })
}

async fn charge(
    base: &str,
    profile: &str,
    key: &str,
    amount: &str,
    traceparent: &str,
) -> (u16, serde_json::Value) {
    let res = server::http_client()
        .post(format!("{base}/v1/users/{profile}/cards/charge"))
        .bearer_auth(key)
        .header("traceparent", traceparent)
        .json(&json!({ "amount": amount, "merchant": "acme" }))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

/// The spans received once one named `name` has arrived (the exporter sends in batches).
async fn spans_with(seen: &Seen, name: &str) -> Vec<Span> {
    for _ in 0..150 {
        let spans = seen.spans.lock().unwrap().clone();
        if spans.iter().any(|s| s.name == name) {
            return spans;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no `{name}` span arrived");
}

#[tokio::test]
async fn a_parked_then_approved_call_is_traced_end_to_end_and_linked() {
    let (recv, seen) = receiver().await;
    let fresh =
        start_fresh(&[("OTEL_EXPORTER_OTLP_ENDPOINT", recv.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")])
            .await;
    let base = fresh.server.base.clone();
    let kit = json!({"name": "Traced", "primitives": ["cards"], "limits": {"approve": {"above": "100"}}});
    assert_eq!(call(&base, "PUT", "/v1/kits/Traced", COMPANY_KEY, Some(kit), None).await.0, 201);
    let connector = json!({"kind": "http", "url": format!("{recv}/charge")});
    assert_eq!(call(&base, "PUT", "/v1/connectors/cards", COMPANY_KEY, Some(connector), None).await.0, 200);
    let (_, p) = call(
        &base,
        "POST",
        "/v1/agent-profiles",
        COMPANY_KEY,
        Some(json!({"name": "tr", "kit": "Traced"})),
        None,
    )
    .await;
    let profile = p["id"].as_str().unwrap().to_string();
    let (_, k) =
        call(&base, "POST", &format!("/v1/agent-profiles/{profile}/keys"), COMPANY_KEY, None, None).await;
    let key = k["secret"].as_str().unwrap().to_string();

    let (t1, s1) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let (t2, s2) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let (status, body) = charge(&base, &profile, &key, "5.00", &format!("00-{t1}-{s1}-01")).await;
    assert_eq!(status, 200, "{body}");
    let (status, parked) = charge(&base, &profile, &key, "500.00", &format!("00-{t2}-{s2}-01")).await;
    assert_eq!((status, parked["verdict"].as_str()), (202, Some("park")), "{parked}");
    let approval = parked["recovery"][0]["approval_id"].as_str().unwrap().to_string();
    let approver = approver_token(&base).await;
    let (status, body) =
        call(&base, "POST", &format!("/v1/approvals/{approval}/approve"), &approver, Some(json!({})), None)
            .await;
    assert_eq!(status, 200, "{body}");

    let spans = spans_with(&seen, "approval_decision").await;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let calls: Vec<&Span> = spans.iter().filter(|s| s.name == "governed_call").collect();
    let ran = calls.iter().find(|s| hex(&s.trace_id) == t1).expect("the first call continues trace 1");
    let park = calls.iter().find(|s| hex(&s.trace_id) == t2).expect("the parked call continues trace 2");
    for (s, verdict) in [(ran, "executed"), (park, "parked")] {
        assert_eq!(attr(s, "transport").as_deref(), Some("http"));
        assert_eq!(attr(s, "action").as_deref(), Some("cards.charge"));
        assert_eq!(attr(s, "verdict").as_deref(), Some(verdict));
        assert_eq!(attr(s, "kit_version").as_deref(), Some("1"));
    }
    let request =
        spans.iter().find(|s| s.name == "request" && hex(&s.trace_id) == t1).expect("the request span");
    assert_eq!(hex(&request.parent_span_id), s1, "the request is a child of the caller's span");
    let children = |parent: &Span, name: &str| -> Vec<Span> {
        spans.iter().filter(|s| s.name == name && s.parent_span_id == parent.span_id).cloned().collect()
    };
    assert_eq!(children(ran, "commit").len(), 2, "decide and settle");
    let connector = children(ran, "connector");
    assert_eq!(connector.len(), 1);
    assert_eq!(attr(&connector[0], "kind").as_deref(), Some("http"));
    // The upstream got the connector span's context: the call's trace goes on past the gateway.
    let sent = seen.traceparents.lock().unwrap().clone();
    assert_eq!(sent[0], format!("00-{t1}-{}-01", hex(&connector[0].span_id)), "{sent:?}");

    let decision = spans.iter().find(|s| s.name == "approval_decision").unwrap();
    assert_eq!(attr(decision, "decision").as_deref(), Some("approve"));
    let linked: Vec<(String, String)> =
        decision.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect();
    assert_eq!(
        linked,
        vec![(t2.to_string(), hex(&park.span_id))],
        "the decision links to the call it parked"
    );
    assert_eq!(sent.len(), 2, "the approved call reached the upstream too: {sent:?}");
}

/// An agent on the demo's Default kit: (profile, key).
async fn agent(base: &str, name: &str) -> (String, String) {
    let (_, p) = call(
        base,
        "POST",
        "/v1/agent-profiles",
        COMPANY_KEY,
        Some(json!({"name": name, "kit": "Default"})),
        None,
    )
    .await;
    let profile = p["id"].as_str().unwrap().to_string();
    let (_, k) =
        call(base, "POST", &format!("/v1/agent-profiles/{profile}/keys"), COMPANY_KEY, None, None).await;
    (profile, k["secret"].as_str().unwrap().to_string())
}

/// #47 finding 13: a request span's `route` is its route's template, so no attribute carries a
/// tenant's secret, kit or group names, nor a path a caller made up.
#[tokio::test]
async fn request_spans_name_route_templates_never_a_tenants_names() {
    let (recv, seen) = receiver().await;
    let fresh =
        start_fresh(&[("OTEL_EXPORTER_OTLP_ENDPOINT", recv.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")])
            .await;
    let base = fresh.server.base.clone();
    let secret = json!({"value": "s3cr3t-value-0123456789"});
    call(&base, "PUT", "/v1/vault/secrets/acme-payroll-key", COMPANY_KEY, Some(secret), None).await;
    let kit = json!({"name": "PayrollKit", "primitives": ["cards"], "limits": {}});
    call(&base, "PUT", "/v1/kits/PayrollKit", COMPANY_KEY, Some(kit), None).await;
    call(&base, "POST", "/v1/groups", COMPANY_KEY, Some(json!({"name": "treasury"})), None).await;
    call(&base, "DELETE", "/v1/groups/treasury", COMPANY_KEY, None, None).await;
    call(&base, "GET", "/nothing/secret-thing", COMPANY_KEY, None, None).await;
    call(&base, "GET", "/v1/groups", COMPANY_KEY, None, None).await;
    let spans = spans_with(&seen, "request").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let spans = [spans, seen.spans.lock().unwrap().clone()].concat();
    let routes: std::collections::BTreeSet<String> =
        spans.iter().filter(|s| s.name == "request").filter_map(|s| attr(s, "route")).collect();
    for name in ["acme-payroll-key", "PayrollKit", "treasury", "secret-thing"] {
        assert!(!routes.iter().any(|r| r.contains(name)), "{name} in {routes:?}");
        for s in &spans {
            for a in &s.attributes {
                assert!(!format!("{:?}", a.value).contains(name), "{name} in {} {a:?}", s.name);
            }
        }
    }
    assert!(routes.contains("/v1/vault/secrets/{name}") && routes.contains("{unmatched}"), "{routes:?}");
}

/// #47 finding 13: the operator's ratio decides which traces a caller continues are kept: at
/// one in two, calls that arrive marked sampled are not all kept, and calls marked not
/// sampled are not all dropped.
#[tokio::test]
async fn the_operators_sampler_decides_not_the_callers_flag() {
    let (recv, seen) = receiver().await;
    let fresh = start_fresh(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", recv.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
    ])
    .await;
    let base = fresh.server.base.clone();
    let (profile, key) = agent(&base, "sampled").await;
    let mut sent = std::collections::HashMap::new();
    for i in 0..80u32 {
        let trace = format!("{:032x}", 0x5eed_0000_0000u64 + u64::from(i));
        let flag = if i % 2 == 0 { "01" } else { "00" };
        let res = server::http_client()
            .post(format!("{base}/v1/users/{profile}/web/read"))
            .bearer_auth(&key)
            .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-{flag}"))
            .json(&json!({"url": "https://example.com/"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        sent.insert(trace, flag);
    }
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let kept: std::collections::BTreeSet<String> = seen
        .spans
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.name == "governed_call")
        .map(|s| hex(&s.trace_id))
        .collect();
    let count = |flag: &str| kept.iter().filter(|t| sent.get(*t) == Some(&flag)).count();
    let (marked, unmarked) = (count("01"), count("00"));
    assert!(marked > 0 && marked < 40, "{marked} of 40 marked sampled were kept");
    assert!(unmarked > 0 && unmarked < 40, "{unmarked} of 40 marked not sampled were kept");
}

/// #53: a trace the sampler drops is not exported, yet its context still goes on to the
/// upstream, flagged not sampled, so the services beneath the gateway drop it too.
#[tokio::test]
async fn a_dropped_trace_exports_nothing_and_still_tells_the_upstream() {
    let (recv, seen) = receiver().await;
    let fresh = start_fresh(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", recv.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_TRACES_SAMPLER", "always_off"),
    ])
    .await;
    let base = fresh.server.base.clone();
    let connector = json!({"kind": "http", "url": format!("{recv}/charge")});
    assert_eq!(call(&base, "PUT", "/v1/connectors/cards", COMPANY_KEY, Some(connector), None).await.0, 200);
    let (profile, key) = agent(&base, "dropped").await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let (status, body) =
        charge(&base, &profile, &key, "5.00", &format!("00-{trace}-00f067aa0ba902b7-01")).await;
    assert_eq!(status, 200, "{body}");
    let sent = seen.traceparents.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let parts: Vec<&str> = sent[0].split('-').collect();
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", trace, "00"),
        "the caller's trace, not sampled: {sent:?}"
    );
    assert_ne!(parts[2], "00f067aa0ba902b7", "the gateway's own span id, not the caller's");
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(seen.spans.lock().unwrap().is_empty(), "nothing is exported");
}

/// #53: an MCP tool call is a child of the HTTP request that carried it, in both generations
/// (stateless, the SDK serves the call on a task of its own), and the governed call a child
/// of the tool call.
#[tokio::test]
async fn an_mcp_tool_call_is_a_child_of_its_request_in_both_generations() {
    use server::mcp::client::{McpClient, Mode};
    let (recv, seen) = receiver().await;
    let fresh =
        start_fresh(&[("OTEL_EXPORTER_OTLP_ENDPOINT", recv.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")])
            .await;
    let base = fresh.server.base.clone();
    let (_, key) = agent(&base, "mcp-traced").await;
    for mode in [Mode::Session, Mode::Stateless] {
        let mut c = McpClient::new(server::http_client(), format!("{base}/mcp"), Some(key.clone()), mode);
        c.open().await.unwrap();
        c.call_tool("naive_web_read", &json!({"url": "https://example.com/"})).await.unwrap();
        c.close().await;
    }
    let mut spans = Vec::new();
    for _ in 0..150 {
        spans = seen.spans.lock().unwrap().clone();
        if spans.iter().filter(|s| s.name == "governed_call").count() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let tools: Vec<&Span> = spans.iter().filter(|s| s.name == "mcp_tool_call").collect();
    assert_eq!(tools.len(), 2, "one tool call per generation");
    for tool in tools {
        let request =
            spans.iter().find(|s| s.span_id == tool.parent_span_id).expect("the tool call's parent");
        assert_eq!((request.name.as_str(), attr(request, "route").as_deref()), ("request", Some("/mcp")));
        assert_eq!(request.trace_id, tool.trace_id);
        let call = spans.iter().find(|s| s.name == "governed_call" && s.parent_span_id == tool.span_id);
        assert_eq!(call.and_then(|c| attr(c, "transport")).as_deref(), Some("mcp"), "{spans:#?}");
    }
}
