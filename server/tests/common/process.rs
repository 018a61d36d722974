//! The real server binary as its own process: started on port 0 on a given database,
//! killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{ADMIN_PASSWORD, COMPANY_KEY};

/// A running server process on `db`, and its base URL.
pub struct Server {
    pub child: Child,
    pub base: String,
}

/// How long the processes' holds in flight stay leased without a renewal: after a kill, the
/// next process ends them this long after the last renewal.
pub const LEASE_SECS: u64 = 2;

pub fn start(db: &str, sandbox_latency_ms: u64) -> Server {
    let mut c = command(db, sandbox_latency_ms);
    c.env("NAIVE_MASTER_KEY", super::MASTER_KEY);
    spawn(c)
}

/// The server on `db` with its master key in the key file beside the database (created on
/// the first start), or `NAIVE_MASTER_KEY` = `master_key` when given.
pub fn start_keyed(db: &str, master_key: Option<&str>) -> Server {
    let mut c = command(db, 0);
    if let Some(k) = master_key {
        c.env("NAIVE_MASTER_KEY", k);
    }
    spawn(c)
}

/// The server command with the tests' settings, without a master key.
pub fn command(db: &str, sandbox_latency_ms: u64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_server"));
    c.args(["--database-url", db, "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .env("NAIVE_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("NAIVE_COMPANY_KEY", COMPANY_KEY)
        .env("NAIVE_SANDBOX_LATENCY_MS", sandbox_latency_ms.to_string())
        .env("NAIVE_HOLD_LEASE_SECS", LEASE_SECS.to_string())
        .env("NAIVE_OUTBOX_BACKOFF_BASE_MS", "100")
        .env("NAIVE_OUTBOX_BACKOFF_MAX_MS", "1000")
        .env("NAIVE_EGRESS_ALLOW", super::TEST_EGRESS_ALLOW)
        .env("NAIVE_ARCHIVE_URL", "off")
        .env_remove("NAIVE_MASTER_KEY")
        .env_remove("NAIVE_MASTER_KEY_FILE")
        .env_remove("NAIVE_DEMO_AGENT");
    c
}

pub fn spawn(mut c: Command) -> Server {
    let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
    let base = first_url(&mut child, "the server");
    Server { child, base }
}

impl Server {
    /// SIGKILL: nothing in flight gets to finish.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// A test that fails part-way leaves no server running behind it.
impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until the server at `base` answers its health check.
pub async fn wait_until_listening(base: &str) {
    for _ in 0..200 {
        if server::http_client()
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{base} never answered");
}

/// The reference upstream (`server upstream`) as its own process on a free port, recording in
/// a file of its own.
pub struct Upstream {
    pub child: Child,
    pub base: String,
    _dir: tempfile::TempDir,
}

/// The credential tests give the reference upstream (and store in the vault).
pub const UPSTREAM_SECRET: &str = "sk_test_upstream_credential_0123456789";

pub fn start_upstream() -> Upstream {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("upstream.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["upstream", "--listen", "127.0.0.1:0", "--records", records.to_str().unwrap()])
        .env("NAIVE_UPSTREAM_SECRET", UPSTREAM_SECRET)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let base = first_url(&mut child, "the upstream");
    Upstream { child, base, _dir: dir }
}

/// The `http://…` address a child prints when it listens.
pub(crate) fn first_url(child: &mut Child, what: &str) -> String {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "{what} exited before listening");
        if let Some(at) = line.find("http://") {
            return line[at..].split_whitespace().next().unwrap().to_string();
        }
    }
}

impl Upstream {
    /// What the upstream says it did, oldest first.
    pub async fn records(&self) -> Vec<serde_json::Value> {
        let res = server::http_client()
            .get(format!("{}/records", self.base))
            .bearer_auth(UPSTREAM_SECRET)
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = res.json().await.unwrap();
        body["items"].as_array().unwrap().clone()
    }

    /// SIGKILL: the upstream becomes unreachable.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The reference team runtime (`server team-runtime`) as its own process, on a board file of
/// its own; it can be stopped and started again on the same address and board.
pub struct TeamRuntime {
    pub child: Option<Child>,
    pub base: String,
    board: std::path::PathBuf,
    latency_ms: u64,
    _dir: tempfile::TempDir,
}

/// The shared secret tests register the reference runtime with.
pub const RUNTIME_SECRET: &str = "rt_test_shared_secret_0123456789";

pub fn start_runtime(seed_tasks: usize, latency_ms: u64) -> TeamRuntime {
    let dir = tempfile::tempdir().unwrap();
    let board = dir.path().join("board.db");
    let mut rt = TeamRuntime { child: None, base: String::new(), board, latency_ms, _dir: dir };
    rt.launch("127.0.0.1:0", seed_tasks);
    rt
}

impl TeamRuntime {
    fn launch(&mut self, listen: &str, seed_tasks: usize) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
            .args(["team-runtime", "--listen", listen, "--seed-tasks", &seed_tasks.to_string()])
            .args(["--latency-ms", &self.latency_ms.to_string()])
            .arg("--board")
            .arg(&self.board)
            .env("NAIVE_RUNTIME_SECRET", RUNTIME_SECRET)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        self.base = first_url(&mut child, "the team runtime");
        self.child = Some(child);
    }

    /// SIGKILL: the runtime becomes unreachable.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same address and board.
    pub fn restart(&mut self) {
        self.stop();
        let listen = self.base.trim_start_matches("http://").to_string();
        self.launch(&listen, 0);
    }

    /// A signed GET of the control wire, as the gateway sends it.
    pub async fn get(&self, path: &str) -> (u16, serde_json::Value) {
        use gateway::delivery::runtime::wire;
        let t = chrono::Utc::now().timestamp();
        let res = server::http_client()
            .get(format!("{}{path}", self.base))
            .header(wire::TIMESTAMP_HEADER, t.to_string())
            .header(wire::SIGNATURE_HEADER, wire::sign(RUNTIME_SECRET, "GET", path, t, b""))
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// The bodies of a task's comments, in the order the runtime applied them.
    pub async fn comments(&self, task: &str) -> Vec<String> {
        let (s, b) = self.get(&format!("/control/tasks/{task}")).await;
        assert_eq!(s, 200, "{b}");
        b["comments"].as_array().unwrap().iter().map(|c| c["body"].as_str().unwrap().to_string()).collect()
    }
}

impl Drop for TeamRuntime {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A console session cookie of the demo's `user`, signed in through the form.
pub async fn session_cookie(base: &str, user: &str) -> String {
    let raw = server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = raw
        .post(format!("{base}/login"))
        .form(&[("username", user), ("password", ADMIN_PASSWORD), ("next", "/")])
        .send()
        .await
        .unwrap();
    res.headers().get("set-cookie").unwrap().to_str().unwrap().split(';').next().unwrap().to_string()
}

/// A $60 charge by `profile` with its `key` and `why` as its justification (percent-encoded
/// where it is not ASCII): the status and body.
pub async fn charge(base: &str, (profile, key): &(String, String), why: &str) -> (u16, serde_json::Value) {
    let res = server::http_client()
        .post(format!("{base}/v1/users/{profile}/cards/charge"))
        .bearer_auth(key)
        .header("naive-justification", why)
        .json(&serde_json::json!({"amount": "60.00", "merchant": "acme"}))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

/// Parks a $60 charge with `why` as its justification; the approval's id.
pub async fn park(base: &str, agent: &(String, String), why: &str) -> String {
    let (status, b) = charge(base, agent, why).await;
    assert_eq!(status, 202, "{b}");
    b["recovery"][0]["approval_id"].as_str().unwrap().to_string()
}

/// An approver's personal token, made on the account page as the approver would.
pub async fn approver_token(base: &str) -> String {
    let raw = server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let cookie = session_cookie(base, "approver").await;
    let res = raw
        .post(format!("{base}/api/create_token"))
        .header("cookie", &cookie)
        .header("accept", "text/html")
        .header("referer", format!("{base}/account"))
        .form(&[("label", "crash test"), ("approver", "on")])
        .send()
        .await
        .unwrap();
    let to = res.headers().get("location").unwrap().to_str().unwrap().to_string();
    let page =
        raw.get(format!("{base}{to}")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    super::shown_secret(&page).expect("the token is shown once")
}

/// The reference webhook receiver (`server webhook-receiver`) as its own process.
pub struct Receiver {
    pub child: Child,
    pub base: String,
}

pub fn start_receiver(args: &[&str]) -> Receiver {
    start_receiver_on("127.0.0.1:0", args)
}

/// [`start_receiver`] on `listen` (the address of one that was stopped, to restart it).
pub fn start_receiver_on(listen: &str, args: &[&str]) -> Receiver {
    start_reference("webhook-receiver", listen, args)
}

/// The reference program `command` (`webhook-receiver`, `hec-receiver`, `otlp-receiver`) as
/// its own process on `listen`, with `args`.
pub fn start_reference(command: &str, listen: &str, args: &[&str]) -> Receiver {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args([command, "--listen", listen])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let base = first_url(&mut child, command);
    Receiver { child, base }
}

impl Receiver {
    /// Every request it got, oldest first.
    pub async fn received(&self) -> Vec<serde_json::Value> {
        let b: serde_json::Value = server::http_client()
            .get(format!("{}/received", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        b["items"].as_array().unwrap().clone()
    }

    /// What it answers `GET <path>`, as JSON.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        let res = server::http_client().get(format!("{}{path}", self.base)).send().await.unwrap();
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }

    /// Tells it the endpoint's signing secret, so it verifies what arrives.
    pub async fn set_secret(&self, secret: &str) {
        let res = server::http_client()
            .post(format!("{}/secret", self.base))
            .json(&serde_json::json!({ "secret": secret }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 204);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the `/metrics` series `series` (its whole name with labels).
pub async fn metric(base: &str, series: &str) -> f64 {
    let res = server::http_client()
        .get(format!("{base}/metrics"))
        .bearer_auth(super::OPERATOR_KEY)
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{series} ")))
        .unwrap_or_else(|| panic!("{series}: {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// An agent named `name` on the demo's Default kit: (profile, key).
pub async fn default_agent(base: &str, name: &str) -> (String, String) {
    let body = serde_json::json!({"name": name, "kit": "Default"});
    let (_, p) = call(base, "POST", "/v1/agent-profiles", super::COMPANY_KEY, Some(body), None).await;
    let profile = p["id"].as_str().unwrap().to_string();
    let path = format!("/v1/agent-profiles/{profile}/keys");
    let (_, k) = call(base, "POST", &path, super::COMPANY_KEY, None, None).await;
    (profile, k["secret"].as_str().unwrap().to_string())
}

/// The reference Slack Web API (`server slack`) as its own process.
pub struct Slack {
    pub child: Child,
    pub base: String,
}

pub fn start_slack(args: &[&str]) -> Slack {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["slack", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let base = first_url(&mut child, "the reference Slack");
    Slack { child, base }
}

impl Slack {
    /// Where the gateway calls it (`--slack-api-url`).
    pub fn api_url(&self) -> String {
        format!("{}/api", self.base)
    }

    async fn items(&self, what: &str) -> Vec<serde_json::Value> {
        let b: serde_json::Value = server::http_client()
            .get(format!("{}/{what}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        b["items"].as_array().unwrap().clone()
    }

    /// Every Web API call it got, oldest first.
    pub async fn calls(&self) -> Vec<serde_json::Value> {
        self.items("calls").await
    }

    /// Every message posted, as it stands now, oldest first.
    pub async fn messages(&self) -> Vec<serde_json::Value> {
        self.items("messages").await
    }

    /// Every reply to a click's `response_url` (`{n, body}`), oldest first.
    pub async fn responses(&self) -> Vec<serde_json::Value> {
        self.items("responses").await
    }

    /// Every form `views.open` opened (`{trigger_id, view}`), oldest first.
    pub async fn views(&self) -> Vec<serde_json::Value> {
        self.items("views").await
    }
}

impl Drop for Slack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server process on a fresh database of the engine under test (a SQLite file, or a new
/// PostgreSQL database with `NAIVE_TEST_ENGINE=postgres`), with the tests' master key.
pub struct Fresh {
    pub server: Server,
    pub db: String,
    pub _dir: tempfile::TempDir,
    pub _cluster: Option<gateway::testing::Cluster>,
}

/// [`Fresh`], with `envs` added to the server's environment, once it answers.
pub async fn start_fresh(envs: &[(&str, &str)]) -> Fresh {
    let dir = tempfile::tempdir().unwrap();
    let (db, cluster) = gateway::testing::fresh_url(dir.path()).await;
    let server = start_on(&db, envs);
    wait_until_listening(&server.base).await;
    Fresh { server, db, _dir: dir, _cluster: cluster }
}

/// The server on `db` with the tests' master key and `envs` added.
pub fn start_on(db: &str, envs: &[(&str, &str)]) -> Server {
    let mut c = command(db, 0);
    c.env("NAIVE_MASTER_KEY", super::MASTER_KEY);
    for (k, v) in envs {
        c.env(k, v);
    }
    spawn(c)
}

/// `method path` with a bearer key, a JSON body and an Idempotency-Key when given: the status
/// and the JSON body (status 0 when the server died under the request).
pub async fn call(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<serde_json::Value>,
    idem: Option<&str>,
) -> (u16, serde_json::Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = server::http_client().request(m, format!("{base}{path}")).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    if let Some(k) = idem {
        req = req.header("Idempotency-Key", k);
    }
    match req.timeout(Duration::from_secs(30)).send().await {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(serde_json::Value::Null)),
        Err(_) => (0, serde_json::Value::Null),
    }
}

/// The OpenID provider for single sign-on tests: `oidc-provider` from npm as its own process
/// (scripts/oidc-provider.mjs), its client redirecting to `redirect`, the `groups` claim in
/// the ID token or only from userinfo (`groups_in`).
pub struct Idp {
    pub child: Child,
    pub issuer: String,
}

pub fn start_idp(redirect: &str, groups_in: &str) -> Idp {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/oidc-provider.mjs");
    let mut child = Command::new("node")
        .args([script, "--redirect", redirect, "--groups-in", groups_in])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs the OpenID provider (make test installs it)");
    let issuer = first_url(&mut child, "the OpenID provider");
    Idp { child, issuer }
}

impl Idp {
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.kill();
    }
}
