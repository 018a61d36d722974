//! The team runtime end to end: the real server binary and the reference runtime
//! (`server team-runtime`) as separate processes, on the engine under test. Agents read the
//! board and queue comments and unblocks through `/v1`; the outbox delivers them over the
//! signed control wire, in order per task and exactly once in effect, through a stopped
//! runtime and a killed gateway.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::COMPANY_KEY;
use common::process::{
    Fresh, RUNTIME_SECRET, TeamRuntime, call as send, start_fresh, start_on, start_runtime,
    wait_until_listening,
};
use serde_json::{Value, json};

async fn register(base: &str, runtime: &TeamRuntime) -> Value {
    let body = json!({"url": runtime.base, "secret": RUNTIME_SECRET});
    let (s, b) = send(base, "PUT", "/v1/runtime", COMPANY_KEY, Some(body), None).await;
    assert_eq!(s, 200, "{b}");
    b
}

/// An agent on a kit of `primitives`: (profile id, key).
async fn agent(base: &str, kit: &str, primitives: &[&str]) -> (String, String) {
    let spec = json!({"name": kit, "primitives": primitives});
    let (s, b) = send(base, "PUT", &format!("/v1/kits/{kit}"), COMPANY_KEY, Some(spec), None).await;
    assert!(s == 200 || s == 201, "{b}");
    let body = json!({"name": format!("{kit}-agent-{}", rand_suffix()), "kit": kit});
    let (s, p) = send(base, "POST", "/v1/agent-profiles", COMPANY_KEY, Some(body), None).await;
    assert_eq!(s, 201, "{p}");
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), COMPANY_KEY, None, None).await;
    (id, k["secret"].as_str().unwrap().to_string())
}

fn rand_suffix() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// An agent's call of `teams.<verb>` (or another action by its path).
async fn act(
    base: &str,
    agent: &(String, String),
    path: &str,
    args: Value,
    idem: Option<&str>,
) -> (u16, Value) {
    let (profile, key) = agent;
    send(base, "POST", &format!("/v1/users/{profile}/{path}"), key, Some(args), idem).await
}

/// Waits until every command in `ids` is no longer queued; their final states.
async fn settled(base: &str, ids: &[String]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for _ in 0..1200 {
        let open: Vec<&String> = ids.iter().filter(|id| !out.contains_key(*id)).collect();
        for id in open {
            let (s, b) =
                send(base, "GET", &format!("/v1/runtime/commands/{id}"), COMPANY_KEY, None, None).await;
            if s == 200 && b["status"] != "queued" {
                out.insert(id.clone(), b);
            }
        }
        if out.len() == ids.len() {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} of {} commands were still queued after two minutes", ids.len() - out.len(), ids.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_read_the_board_and_their_commands_reach_the_runtime_once() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    let runtime = start_runtime(6, 0);
    let info = register(base, &runtime).await;
    assert_eq!((info["claimed"].clone(), info["reachable"].clone()), (json!(true), json!(true)), "{info}");
    assert!(!info.to_string().contains(RUNTIME_SECRET), "the secret is never shown again: {info}");
    assert_eq!(info["secret"]["name"], "team-runtime");
    let a = agent(base, "Teams", &["tasks"]).await;

    let (st, status) = act(base, &a, "teams/status", json!({}), None).await;
    assert_eq!(st, 200, "{status}");
    assert_eq!(status["result"]["reachable"], true);
    assert_eq!(status["result"]["claimed"], true);
    assert_eq!(status["connector"], "runtime");
    let (st, board) = act(base, &a, "teams/board", json!({"status": "blocked"}), None).await;
    assert_eq!(st, 200, "{board}");
    let blocked: Vec<&str> =
        board["result"]["tasks"].as_array().unwrap().iter().map(|t| t["task_id"].as_str().unwrap()).collect();
    assert_eq!(blocked, ["T-3", "T-6"]);
    let (st, run) = act(base, &a, "teams/run", json!({"run_id": "run-2"}), None).await;
    assert_eq!((st, run["result"]["task_id"].clone()), (200, json!("T-2")), "{run}");
    assert!(run["result"]["transcript"].as_str().unwrap().contains("run-2"));
    let (st, none) = act(base, &a, "teams/run", json!({"run_id": "run-99"}), None).await;
    assert_eq!((st, none["result"]["found"].clone()), (200, json!(false)), "{none}");

    // A comment queues and is delivered once; its resend with the same key is the same command.
    let (st, c1) =
        act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": "first"}), Some("k-1")).await;
    assert_eq!(st, 200, "{c1}");
    assert_eq!(c1["result"]["status"], "queued");
    assert!(c1["result"].get("recovery").is_none(), "a reachable runtime needs no wait step: {c1}");
    let (st, again) =
        act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": "first"}), Some("k-1")).await;
    assert_eq!(st, 200);
    assert_eq!(again["result"]["command_id"], c1["result"]["command_id"]);
    // Unblocking needs a reason; with one it clears the task's blocked state.
    let (st, refused) = act(base, &a, "teams/unblock", json!({"task_id": "T-3"}), None).await;
    assert_eq!((st, refused["code"].clone()), (400, json!("missing_argument")), "{refused}");
    let (st, u) =
        act(base, &a, "teams/unblock", json!({"task_id": "T-3", "because": "the vendor answered"}), None)
            .await;
    assert_eq!(st, 200, "{u}");
    // An oversize comment is refused before anything is queued.
    let long = "x".repeat(10_001);
    let (st, refused) = act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": long}), None).await;
    assert_eq!((st, refused["code"].clone()), (400, json!("invalid_argument")), "{refused}");
    // A comment on a task the runtime does not have is rejected there, and holds up nothing.
    let (_, bad) = act(base, &a, "teams/comment", json!({"task_id": "T-404", "body": "lost"}), None).await;
    let (_, c2) = act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": "second"}), None).await;
    let ids: Vec<String> = [&c1, &u, &bad, &c2]
        .iter()
        .map(|b| b["result"]["command_id"].as_str().unwrap().to_string())
        .collect();
    let states = settled(base, &ids).await;
    assert_eq!(states[&ids[0]]["status"], "delivered");
    assert_eq!(states[&ids[1]]["status"], "delivered");
    assert_eq!(
        (states[&ids[2]]["status"].clone(), states[&ids[2]]["last_error"].clone()),
        (json!("rejected"), json!("unknown_task"))
    );
    assert_eq!(states[&ids[3]]["status"], "delivered");
    assert_eq!(runtime.comments("T-1").await, ["first", "second"], "nothing else reached T-1");
    let (_, t3) = runtime.get("/control/tasks/T-3").await;
    assert_eq!(t3["task"]["status"], "open");

    // The agent reads its command's state through the pipeline too.
    let (st, state) = act(base, &a, "teams/command", json!({"command_id": ids[0]}), None).await;
    assert_eq!((st, state["result"]["status"].clone()), (200, json!("delivered")), "{state}");
    let (st, _) = act(base, &a, "teams/command", json!({"command_id": "cmd_unknown"}), None).await;
    assert_eq!(st, 404);
    // Every call is in the activity log.
    let (_, logs) =
        send(base, "GET", &format!("/v1/users/{}/logs?limit=100", a.0), COMPANY_KEY, None, None).await;
    let actions: Vec<&str> =
        logs["items"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in
        ["teams.status", "teams.board", "teams.run", "teams.comment", "teams.unblock", "teams.command"]
    {
        assert!(actions.contains(&action), "{action} is not in the log: {actions:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kit_without_tasks_refuses_every_runtime_tool_and_status_degrades_when_down() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    let mut runtime = start_runtime(3, 0);
    register(base, &runtime).await;
    let web = agent(base, "WebOnly", &["web"]).await;
    for (verb, args) in [
        ("status", json!({})),
        ("board", json!({})),
        ("run", json!({"run_id": "run-1"})),
        ("comment", json!({"task_id": "T-1", "body": "x"})),
        ("unblock", json!({"task_id": "T-3", "because": "y"})),
        ("command", json!({"command_id": "cmd_x"})),
    ] {
        let (st, env) = act(base, &web, &format!("teams/{verb}"), args, None).await;
        assert_eq!((st, env["verdict"].clone()), (403, json!("deny")), "teams.{verb}: {env}");
    }
    let a = agent(base, "Teams", &["tasks"]).await;
    runtime.stop();
    let (st, status) = act(base, &a, "teams/status", json!({}), None).await;
    assert_eq!(st, 200, "unreachable is an answer, not an error: {status}");
    assert_eq!(status["result"]["reachable"], false);
    assert_eq!(status["result"]["registered"], true);
    let (st, board) = act(base, &a, "teams/board", json!({}), None).await;
    assert_eq!(st, 503, "a read that needs the runtime is unavailable: {board}");
}

/// Unsigned, wrongly signed and stale requests are refused by the reference runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_refuses_unsigned_and_stale_requests() {
    use gateway::delivery::runtime::wire;
    let runtime = start_runtime(1, 0);
    let c = server::http_client();
    let url = format!("{}/control/status", runtime.base);
    let res = c.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let stale = chrono::Utc::now().timestamp() - 3_600;
    let res = c
        .get(&url)
        .header(wire::TIMESTAMP_HEADER, stale.to_string())
        .header(wire::SIGNATURE_HEADER, wire::sign(RUNTIME_SECRET, "GET", "/control/status", stale, b""))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "signature_stale");
    let now = chrono::Utc::now().timestamp();
    let res = c
        .get(&url)
        .header(wire::TIMESTAMP_HEADER, now.to_string())
        .header(
            wire::SIGNATURE_HEADER,
            wire::sign("another secret entirely", "GET", "/control/status", now, b""),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "signature_wrong");
    assert_eq!(runtime.get("/control/status").await.0, 200);
}

/// Sends `per_task` comments to each of `tasks` tasks, the tasks concurrently and each task's
/// in order; every answer's body.
async fn comment_load(base: &str, a: &(String, String), tasks: usize, per_task: usize) -> Vec<Value> {
    let mut jobs = Vec::new();
    for t in 1..=tasks {
        let (base, a) = (base.to_string(), a.clone());
        jobs.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for i in 0..per_task {
                let args = json!({"task_id": format!("T-{t}"), "body": format!("T-{t} #{i}")});
                let (st, b) = act(&base, &a, "teams/comment", args, Some(&format!("T-{t}-{i}"))).await;
                if st != 200 {
                    break;
                }
                answers.push(b);
            }
            answers
        }));
    }
    let mut all = Vec::new();
    for j in jobs {
        all.extend(j.await.unwrap());
    }
    all
}

async fn assert_each_task_has_its_comments_once_in_order(
    runtime: &TeamRuntime,
    tasks: usize,
    per_task: usize,
) {
    for t in 1..=tasks {
        let want: Vec<String> = (0..per_task).map(|i| format!("T-{t} #{i}")).collect();
        assert_eq!(runtime.comments(&format!("T-{t}")).await, want, "task T-{t}");
    }
}

/// #15: the runtime stopped while 200 comments on 10 tasks are queued, then started: every
/// comment arrives exactly once and in order per task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_queued_while_the_runtime_is_down_arrive_once_in_order() {
    let s = start_fresh(&[("NAIVE_OUTBOX_MAX_ATTEMPTS", "1000")]).await;
    let base = &s.server.base;
    let mut runtime = start_runtime(10, 0);
    register(base, &runtime).await;
    let a = agent(base, "Teams", &["tasks"]).await;
    runtime.stop();
    // The gateway learns the runtime is down (this read probes it), so every answer says so.
    let (_, info) = send(base, "GET", "/v1/runtime", COMPANY_KEY, None, None).await;
    assert_eq!(info["reachable"], false, "{info}");
    let answers = comment_load(base, &a, 10, 20).await;
    assert_eq!(answers.len(), 200, "every comment was accepted while the runtime was down");
    for b in &answers {
        assert_eq!(b["result"]["status"], "queued");
        let step = &b["result"]["recovery"][0];
        assert_eq!(step["kind"], "wait_for_delivery", "{b}");
        assert_eq!(step["command_id"], b["result"]["command_id"]);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    runtime.restart();
    let ids: Vec<String> =
        answers.iter().map(|b| b["result"]["command_id"].as_str().unwrap().to_string()).collect();
    let states = settled(base, &ids).await;
    assert!(states.values().all(|s| s["status"] == "delivered"), "{states:?}");
    assert_each_task_has_its_comments_once_in_order(&runtime, 10, 20).await;
    // Resending a delivered comment with its key is the same command: no second comment.
    let (st, again) =
        act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": "T-1 #0"}), Some("T-1-0")).await;
    assert_eq!(st, 200);
    assert_eq!(
        again["result"]["command_id"],
        answers.iter().find(|b| b["result"]["task_id"] == "T-1").unwrap()["result"]["command_id"]
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runtime.comments("T-1").await.len(), 20);
}

/// #15: the gateway SIGKILLed while batches are at the runtime (which applies them, then
/// answers two seconds later) and started again: nothing is lost and nothing doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_during_delivery_loses_and_doubles_nothing() {
    let Fresh { server, db, _dir, _cluster } = start_fresh(&[]).await;
    let runtime = start_runtime(10, 2_000);
    register(&server.base, &runtime).await;
    let a = agent(&server.base, "Teams", &["tasks"]).await;
    let answers = comment_load(&server.base, &a, 10, 20).await;
    assert_eq!(answers.len(), 200);
    // Once the runtime has applied all 200, the last batch's answer is still on its way.
    for _ in 0..600 {
        let (_, b) = runtime.get("/control/board").await;
        let applied: u64 =
            b["tasks"].as_array().unwrap().iter().map(|t| t["comments"].as_u64().unwrap()).sum();
        if applied == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill();
    let server = start_on(&db, &[]);
    wait_until_listening(&server.base).await;
    let ids: Vec<String> =
        answers.iter().map(|b| b["result"]["command_id"].as_str().unwrap().to_string()).collect();
    let states = settled(&server.base, &ids).await;
    assert!(states.values().all(|s| s["status"] == "delivered"), "{states:?}");
    assert_each_task_has_its_comments_once_in_order(&runtime, 10, 20).await;
    let (_, status) = runtime.get("/control/status").await;
    assert!(status["duplicates"].as_u64().unwrap() > 0, "the kill caught a batch unanswered: {status}");
}

/// After the attempt limit a command is a dead letter, listed as one; an admin's retry queues
/// it again and it is delivered once the runtime answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_stays_visible_and_can_be_retried() {
    let s = start_fresh(&[("NAIVE_OUTBOX_MAX_ATTEMPTS", "2")]).await;
    let base = &s.server.base;
    let mut runtime = start_runtime(2, 0);
    register(base, &runtime).await;
    let a = agent(base, "Teams", &["tasks"]).await;
    runtime.stop();
    let (_, c) = act(base, &a, "teams/comment", json!({"task_id": "T-2", "body": "hello"}), None).await;
    let id = c["result"]["command_id"].as_str().unwrap().to_string();
    let state = &settled(base, std::slice::from_ref(&id)).await[&id];
    assert_eq!((state["status"].clone(), state["attempts"].clone()), (json!("dead"), json!(2)), "{state}");
    let (_, dead) = send(base, "GET", "/v1/runtime/commands?status=dead", COMPANY_KEY, None, None).await;
    assert_eq!(dead["items"][0]["command_id"], id.as_str());
    let (st, again) =
        send(base, "POST", &format!("/v1/runtime/commands/{id}/retry"), COMPANY_KEY, None, None).await;
    assert_eq!((st, again["status"].clone()), (200, json!("queued")), "{again}");
    let (st, twice) =
        send(base, "POST", &format!("/v1/runtime/commands/{id}/retry"), COMPANY_KEY, None, None).await;
    assert_eq!((st, twice["code"].clone()), (409, json!("not_a_dead_letter")), "{twice}");
    runtime.restart();
    let state = &settled(base, std::slice::from_ref(&id)).await[&id];
    assert_eq!(state["status"], "delivered", "{state}");
    assert_eq!(runtime.comments("T-2").await, ["hello"]);
}

/// Registration refuses what cannot work, with codes that say what to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_refuses_bad_urls_and_weak_secrets() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    for (body, code) in [
        (json!({"url": "ftp://runtime.example.com/", "secret": RUNTIME_SECRET}), "invalid_runtime_url"),
        (json!({"url": "http://runtime.example.com/", "secret": "short"}), "weak_runtime_secret"),
        (json!({"url": "http://runtime.example.com/"}), "secret_required"),
    ] {
        let (st, b) = send(base, "PUT", "/v1/runtime", COMPANY_KEY, Some(body), None).await;
        assert_eq!((st, b["code"].clone()), (400, json!(code)), "{b}");
    }
    let (st, _) = send(base, "GET", "/v1/runtime", COMPANY_KEY, None, None).await;
    assert_eq!(st, 404, "nothing was registered");
    let a = agent(base, "Teams", &["tasks"]).await;
    let (st, env) = act(base, &a, "teams/comment", json!({"task_id": "T-1", "body": "x"}), None).await;
    assert_eq!((st, env["reason"].clone()), (503, json!("unavailable")), "{env}");
    assert!(env.to_string().contains("runtime_not_registered"), "{env}");
}

/// #30 finding 8: a runtime's claim binds. A second tenant pointing at a runtime the first
/// claimed has none of its commands applied: they end as dead letters, refused
/// `claimed_by_another`. A run id that would climb out of its path is refused before it
/// leaves the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_claimed_by_one_tenant_applies_no_command_of_another() {
    let s = start_fresh(&[("NAIVE_OUTBOX_MAX_ATTEMPTS", "2")]).await;
    let base = &s.server.base;
    let runtime = start_runtime(3, 0);
    register(base, &runtime).await;
    // A second tenant, made by the operator with the same binary and database.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["--database-url", &s.db, "--no-demo", "tenant", "create", "--name", "Other", "--credit", "50"])
        .env("NAIVE_MASTER_KEY", common::MASTER_KEY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    let other_key =
        printed.split_whitespace().find(|w| w.starts_with("nv_")).expect("a company key").to_string();
    let body = json!({"url": runtime.base, "secret": RUNTIME_SECRET});
    let (s2, b) = send(base, "PUT", "/v1/runtime", &other_key, Some(body), None).await;
    assert_eq!(s2, 200, "{b}");
    assert_eq!(b["claimed"], false, "the first tenant holds the claim: {b}");
    let kit = json!({"name": "Team", "primitives": ["tasks"]});
    assert!(send(base, "PUT", "/v1/kits/Team", &other_key, Some(kit), None).await.0 == 201);
    let (_, p) = send(
        base,
        "POST",
        "/v1/agent-profiles",
        &other_key,
        Some(json!({"name": "intruder", "kit": "Team"})),
        None,
    )
    .await;
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), &other_key, None, None).await;
    let intruder = (id, k["secret"].as_str().unwrap().to_string());
    let (st, queued) =
        act(base, &intruder, "teams/comment", json!({"task_id": "T-1", "body": "not yours"}), None).await;
    assert_eq!(st, 200, "{queued}");
    let cmd = queued["result"]["command_id"].as_str().unwrap().to_string();
    let mut state = Value::Null;
    for _ in 0..200 {
        let (_, b) = send(base, "GET", &format!("/v1/runtime/commands/{cmd}"), &other_key, None, None).await;
        if b["status"] == "dead" {
            state = b;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        (state["status"].as_str(), state["last_error"].as_str()),
        (Some("dead"), Some("claimed_by_another")),
        "{state}"
    );
    assert!(runtime.comments("T-1").await.is_empty(), "nothing was applied");

    let reader = agent(base, "Reader", &["tasks"]).await;
    let (st, b) = act(base, &reader, "teams/run", json!({"run_id": ".."}), None).await;
    assert_eq!((st, b["code"].as_str()), (400, Some("invalid_argument")), "{b}");
}
