//! Limits over time over `/v1` (issue #33), on the real server with a fresh database and a
//! clock the test drives (`NAIVE_TEST_CLOCK_FILE`): a weekly cap in the tenant's zone, the
//! tenant's own rate limit under a concurrent burst, a zone change recorded and taking effect
//! at midnight, and bad settings and kits refused with the path and nothing saved.

mod common;

use common::{TestApp, spawn_with};
use serde_json::{Value, json};

/// The app on a fresh database of the engine under test, reading "now" from a file.
struct Clocked {
    app: TestApp,
    clock: std::path::PathBuf,
    _dir: tempfile::TempDir,
    _cluster: Option<gateway::testing::Cluster>,
}

impl Clocked {
    async fn start(at: &str) -> Clocked {
        let dir = tempfile::tempdir().unwrap();
        let clock = dir.path().join("clock");
        std::fs::write(&clock, at).unwrap();
        let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
        let config = common::clocked(&url, &clock);
        Clocked { app: spawn_with(config).await, clock, _dir: dir, _cluster: cluster }
    }

    fn set(&self, at: &str) {
        std::fs::write(&self.clock, at).unwrap();
    }

    async fn company(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .request(method, format!("{}{path}", self.app.base))
            .bearer_auth(common::COMPANY_KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// A profile on a new kit `kit` (its name is given), and its key.
    async fn agent(&self, name: &str, kit: Value) -> (String, String) {
        let kit_name = kit["name"].as_str().unwrap().to_string();
        if self.company(reqwest::Method::GET, &format!("/v1/kits/{kit_name}"), None).await.0 == 404 {
            let (s, b) = self.company(reqwest::Method::PUT, &format!("/v1/kits/{kit_name}"), Some(kit)).await;
            assert_eq!(s, 201, "{b}");
        }
        let (s, p) = self
            .company(
                reqwest::Method::POST,
                "/v1/agent-profiles",
                Some(json!({"name": name, "kit": kit_name})),
            )
            .await;
        assert_eq!(s, 201, "{p}");
        let id = p["id"].as_str().unwrap().to_string();
        let (s, k) =
            self.company(reqwest::Method::POST, &format!("/v1/agent-profiles/{id}/keys"), None).await;
        assert_eq!(s, 201, "{k}");
        (id, k["secret"].as_str().unwrap().to_string())
    }

    async fn call(&self, profile: &str, key: &str, path: &str, body: Value) -> (u16, Option<u64>, Value) {
        let res = self
            .app
            .client
            .post(format!("{}/v1/users/{profile}/{path}", self.app.base))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let retry = res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
        (status, retry, res.json().await.unwrap_or(Value::Null))
    }

    async fn zone(&self, zone: &str) -> Value {
        let body = json!({"time_zone": zone});
        let (s, b) = self.company(reqwest::Method::PUT, "/v1/tenant/settings", Some(body)).await;
        assert_eq!(s, 200, "{b}");
        b
    }
}

fn charge(amount: &str) -> Value {
    json!({"amount": amount, "merchant": "acme"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weekly_cap_starts_again_on_its_own_weekday_at_midnight_in_the_tenants_zone() {
    // Thursday 2027-03-04, noon UTC. Kolkata is UTC+05:30, without DST.
    let t = Clocked::start("2027-03-04T12:00:00Z").await;
    let s = t.zone("Asia/Kolkata").await;
    assert_eq!(s["time_zone_changes_at"], "2027-03-05T00:00:00Z", "{s}");
    t.set("2027-03-05T00:00:01Z");
    let logs =
        t.app.client.get(format!("{}/v1/logs?limit=500", t.app.base)).bearer_auth(common::OPERATOR_KEY);
    let logs: Value = logs.send().await.unwrap().json().await.unwrap();
    let entry = logs["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "settings")
        .expect("the change is logged");
    assert_eq!(
        (entry["kind"].as_str(), entry["verdict"].as_str()),
        (Some("settings"), Some("changed")),
        "{logs}"
    );
    assert_eq!(entry["detail"]["after"]["next_time_zone"], "Asia/Kolkata", "{entry}");
    let kit = json!({"name": "Weekly", "primitives": ["cards"],
        "limits": {"budget": {"periods": [{"every": "week", "week_starts": "sunday", "hard_cap": "50"}]}}});
    let (p, key) = t.agent("weekly-bot", kit).await;
    // Saturday 6 March, 23:00 in Kolkata.
    t.set("2027-03-06T17:30:00Z");
    assert_eq!(t.call(&p, &key, "cards/charge", charge("40")).await.0, 200);
    let (s, _, env) = t.call(&p, &key, "cards/charge", charge("20")).await;
    assert_eq!(
        (s, env["error"]["details"]["reason"].as_str()),
        (403, Some("period_hard_cap_exceeded")),
        "{env}"
    );
    // Sunday 00:00 in Kolkata is 18:30 on Saturday in UTC.
    assert_eq!(env["error"]["details"]["resets_at"], "2027-03-06T18:30:00Z", "{env}");
    t.set("2027-03-06T18:29:59Z");
    assert_eq!(t.call(&p, &key, "cards/charge", charge("20")).await.0, 403);
    t.set("2027-03-06T18:30:00Z");
    let (s, _, b) = t.call(&p, &key, "cards/charge", charge("20")).await;
    assert_eq!(s, 200, "{b}");
    let (_, budget) = t.company(reqwest::Method::GET, &format!("/v1/users/{p}/budget"), None).await;
    assert_eq!(budget["time_zone"], "Asia/Kolkata");
    let week = &budget["periods"][0];
    assert_eq!(
        (week["current"]["first_day"].as_str(), week["left"].as_str()),
        (Some("2027-03-07"), Some("30.00")),
        "{week}"
    );
    assert_eq!(week["previous"][0]["posted"], "40.00", "{week}");
    // The ledger's CSV says which day each entry counts toward.
    let csv = t.app.client.get(format!("{}/v1/users/{p}/ledger", t.app.base)).header("accept", "text/csv");
    let csv = csv.bearer_auth(common::COMPANY_KEY);
    let csv = csv.send().await.unwrap().text().await.unwrap();
    let days: Vec<&str> = csv.lines().skip(1).filter_map(|l| l.rsplit(',').next()).collect();
    assert_eq!(days, ["2027-03-06", "2027-03-07"], "{csv}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenants_rate_limit_refuses_exactly_the_calls_past_it_in_a_concurrent_burst() {
    let t = Clocked::start("2027-02-01T10:00:30Z").await;
    let body = json!({"time_zone": "UTC", "rate_limit": {"calls": 12, "per": "minute"}});
    let (s, b) = t.company(reqwest::Method::PUT, "/v1/tenant/settings", Some(body)).await;
    assert_eq!((s, &b["rate_limit"]), (200, &json!({"calls": 12, "per": "minute"})), "{b}");
    let kit = json!({"name": "Reader", "primitives": ["web"]});
    let (a, key_a) = t.agent("reader-a", kit.clone()).await;
    let (b_, key_b) = t.agent("reader-b", kit).await;
    let read = json!({"url": "https://example.test/"});
    let calls = (0..30).map(|i| {
        let (p, k) = if i % 2 == 0 { (&a, &key_a) } else { (&b_, &key_b) };
        t.call(p, k, "web/read", read.clone())
    });
    let answers = futures_util::future::join_all(calls).await;
    let ok = answers.iter().filter(|(s, _, _)| *s == 200).count();
    let limited: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert_eq!((ok, limited.len()), (12, 18), "{answers:?}");
    for (_, retry, env) in limited {
        assert_eq!(*retry, Some(30), "{env}");
        assert_eq!((env["reason"].as_str(), env["retryable"].as_bool()), (Some("rate_limited"), Some(true)));
        assert_eq!(env["error"]["details"]["reason"], "tenant_rate_limit");
    }
    // A refused call took no money: twelve reads' worth was charged.
    let (_, ba) = t.company(reqwest::Method::GET, &format!("/v1/users/{a}/budget"), None).await;
    let (_, bb) = t.company(reqwest::Method::GET, &format!("/v1/users/{b_}/budget"), None).await;
    let posted = |b: &Value| policy::Money::parse(b["totals"]["posted"].as_str().unwrap()).unwrap().units();
    assert_eq!(posted(&ba) + posted(&bb), 12 * 25, "{ba} {bb}");
    t.set("2027-02-01T10:01:00Z");
    assert_eq!(t.call(&a, &key_a, "web/read", read).await.0, 200, "the next minute is a new window");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_and_limits_are_refused_with_their_path_and_nothing_is_saved() {
    let t = Clocked::start("2027-02-01T10:00:00Z").await;
    let put = |body: Value| t.company(reqwest::Method::PUT, "/v1/tenant/settings", Some(body));
    let (s, b) = put(json!({"time_zone": "Mars/Olympus_Mons"})).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_time_zone")), "{b}");
    assert!(b["message"].as_str().unwrap().contains("Europe/Berlin"), "{b}");
    let (s, b) = put(json!({"time_zone": "UTC", "rate_limit": {"calls": 0, "per": "minute"}})).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_rate_limit")), "{b}");
    let (s, b) = put(json!({"time_zone": "UTC", "rate_limit": {"calls": 5, "per": "fortnight"}})).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_settings")), "{b}");
    assert!(b["message"].as_str().unwrap().starts_with("rate_limit.per"), "{b}");
    let (_, now) = t.company(reqwest::Method::GET, "/v1/tenant/settings", None).await;
    assert_eq!(now, json!({"time_zone": "UTC", "rate_limit": null}), "nothing was saved");
    let kit = json!({"name": "Bad", "primitives": ["cards"], "limits": {
        "budget": {"periods": [{"every": "month", "hard_cap": "10", "soft_cap": "20"}, {"every": "day", "week_starts": "monday", "hard_cap": "1"}]},
        "rate": [{"calls": 0, "per": "second"}]}});
    let (s, b) = t.company(reqwest::Method::PUT, "/v1/kits/Bad", Some(kit)).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_kit")), "{b}");
    let message = b["message"].as_str().unwrap();
    for path in
        ["limits.budget.periods[0].soft_cap", "limits.budget.periods[1].week_starts", "limits.rate[0].calls"]
    {
        assert!(message.contains(path), "{path} in {message}");
    }
    let (s, _) = t.company(reqwest::Method::GET, "/v1/kits/Bad", None).await;
    assert_eq!(s, 404, "nothing was saved");
}
