//! `server team-runtime`: the reference team runtime. It keeps a board of tasks, their runs
//! and comments in its own SQLite file and speaks the control wire (`gateway::delivery::runtime::wire`),
//! so it is what `make run` points the demo tenant at, what the tests start and stop as a
//! separate process, and what a newcomer reads before writing a runtime of their own.
//!
//! - Every request must carry a valid signature under the shared secret; anything else is a
//!   401 and nothing is read or changed.
//! - The first tenant to claim it owns it; another tenant's claim is a 409.
//! - A batch of commands is applied in order in one transaction, each command id at most
//!   once: a command id seen before answers `duplicate`. A command for an unknown or deleted
//!   task, a comment over the limit or an unblock without a reason answers `rejected` with a
//!   code, and the rest of the batch still applies.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gateway::delivery::runtime::wire::{
    self, Applied, Batch, BatchAnswer, Board, Command, CommandKind, Comment, Outcome, Run, Status, Task,
    TaskDetail,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Deserialize;
use serde_json::json;

#[derive(Clone)]
struct Runtime {
    secret: Arc<str>,
    db: Arc<Mutex<Connection>>,
    latency: std::time::Duration,
}

const SCHEMA: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT NULL,
        role TEXT NOT NULL, blocked_because TEXT, unblocked_because TEXT);
    CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, status TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS comments (seq INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL,
        command_id TEXT NOT NULL, body TEXT NOT NULL, author TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS applied (command_id TEXT PRIMARY KEY, outcome TEXT NOT NULL, code TEXT,
        seen_again INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS claim (id INTEGER PRIMARY KEY CHECK (id = 1), tenant_id TEXT NOT NULL);";

const TITLES: [&str; 6] = [
    "Draft the launch announcement",
    "Reconcile the vendor invoices",
    "Review the onboarding flow",
    "Collect quotes for the office move",
    "Fix the flaky checkout test",
    "Plan the quarterly offsite",
];
const ROLES: [&str; 3] = ["engineer", "designer", "researcher"];
const RUN_STATES: [&str; 3] = ["running", "waiting", "succeeded"];

/// Creates `n` tasks `T-1`…`T-n` (every third blocked) with one run each, if the board is empty.
fn seed(conn: &Connection, n: usize) -> rusqlite::Result<()> {
    let have: i64 = conn.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))?;
    if have > 0 {
        return Ok(());
    }
    for i in 1..=n {
        let blocked = i % 3 == 0;
        let (status, why) =
            if blocked { ("blocked", Some("waiting on a decision from a human")) } else { ("open", None) };
        conn.execute(
            "INSERT INTO tasks (task_id, title, status, role, blocked_because) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                format!("T-{i}"),
                TITLES[(i - 1) % TITLES.len()],
                status,
                ROLES[(i - 1) % ROLES.len()],
                why
            ],
        )?;
        conn.execute(
            "INSERT INTO runs (run_id, task_id, status) VALUES (?1, ?2, ?3)",
            params![format!("run-{i}"), format!("T-{i}"), RUN_STATES[(i - 1) % RUN_STATES.len()]],
        )?;
    }
    Ok(())
}

/// Opens (creating and seeding) the board at `db` and serves the control wire on `listen`
/// until the process ends.
pub async fn serve(
    listen: SocketAddr,
    db: &str,
    secret: &str,
    seed_tasks: usize,
    latency_ms: u64,
) -> Result<(), String> {
    if secret.chars().count() < gateway::delivery::runtime::registry::MIN_SECRET_LEN {
        return Err("the shared secret (NAIVE_RUNTIME_SECRET) is at least 16 characters".into());
    }
    let conn = Connection::open(db).map_err(|e| format!("cannot open {db}: {e}"))?;
    conn.execute_batch(SCHEMA).map_err(|e| format!("cannot prepare {db}: {e}"))?;
    seed(&conn, seed_tasks).map_err(|e| format!("cannot seed {db}: {e}"))?;
    let state = Runtime {
        secret: secret.into(),
        db: Arc::new(Mutex::new(conn)),
        latency: std::time::Duration::from_millis(latency_ms),
    };
    let app = axum::Router::new()
        .route("/control/status", get(status))
        .route("/control/board", get(board))
        .route("/control/runs/{run_id}", get(run))
        .route("/control/tasks/{task_id}", get(task))
        .route("/control/claim", post(claim))
        .route("/control/commands", post(commands))
        .layer(axum::middleware::from_fn_with_state(state.clone(), signed))
        .with_state(state);
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Reference team runtime listening on http://{addr} (board in {db})");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

fn refuse(status: StatusCode, code: &str) -> Response {
    (status, Json(json!({ "error": code }))).into_response()
}

/// Refuses a request whose signature does not check out, before anything else reads it.
async fn signed(
    State(rt): State<Runtime>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 4 << 20).await else {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large");
    };
    if let Err(e) = check(&rt.secret, &parts.method, &parts.uri, &parts.headers, &bytes) {
        return refuse(StatusCode::UNAUTHORIZED, e.code());
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

fn check(
    secret: &str,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), wire::SignatureError> {
    let header = |n| headers.get(n).and_then(|v| v.to_str().ok());
    let path = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let now = chrono::Utc::now().timestamp();
    wire::verify(
        secret,
        method.as_str(),
        path,
        header(wire::TIMESTAMP_HEADER),
        header(wire::SIGNATURE_HEADER),
        body,
        now,
    )
}

fn internal(e: impl std::fmt::Display) -> Response {
    eprintln!("team runtime: {e}");
    refuse(StatusCode::INTERNAL_SERVER_ERROR, "runtime_storage")
}

fn current_status(conn: &Connection) -> rusqlite::Result<Status> {
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).map(|n| n as u64);
    Ok(Status {
        runtime: "naive-reference-runtime".into(),
        claimed_by: conn.query_row("SELECT tenant_id FROM claim", [], |r| r.get(0)).optional()?,
        tasks: count("SELECT COUNT(*) FROM tasks WHERE status <> 'deleted'")?,
        blocked: count("SELECT COUNT(*) FROM tasks WHERE status = 'blocked'")?,
        runs_active: count("SELECT COUNT(*) FROM runs WHERE status IN ('running', 'waiting')")?,
        duplicates: count("SELECT COALESCE(SUM(seen_again), 0) FROM applied")?,
    })
}

async fn status(State(rt): State<Runtime>) -> Response {
    let conn = rt.db.lock().expect("the board lock");
    current_status(&conn).map_or_else(internal, |s| Json(s).into_response())
}

#[derive(Deserialize)]
struct Claim {
    tenant_id: String,
}

async fn claim(State(rt): State<Runtime>, Json(c): Json<Claim>) -> Response {
    let conn = rt.db.lock().expect("the board lock");
    let owner: Option<String> =
        match conn.query_row("SELECT tenant_id FROM claim", [], |r| r.get(0)).optional() {
            Ok(o) => o,
            Err(e) => return internal(e),
        };
    match owner {
        Some(o) if o != c.tenant_id => return refuse(StatusCode::CONFLICT, "claimed_by_another"),
        Some(_) => {}
        None => {
            if let Err(e) = conn.execute("INSERT INTO claim (id, tenant_id) VALUES (1, ?1)", [&c.tenant_id]) {
                return internal(e);
            }
        }
    }
    current_status(&conn).map_or_else(internal, |s| Json(s).into_response())
}

const TASK_COLUMNS: &str = "t.task_id, t.title, t.status, t.role, t.blocked_because, \
    (SELECT COUNT(*) FROM comments c WHERE c.task_id = t.task_id)";

fn task_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Task> {
    Ok(Task {
        task_id: r.get(0)?,
        title: r.get(1)?,
        status: r.get(2)?,
        role: r.get(3)?,
        blocked_because: r.get(4)?,
        comments: r.get::<_, i64>(5)? as u64,
    })
}

#[derive(Deserialize)]
struct BoardQuery {
    status: Option<String>,
    role: Option<String>,
}

async fn board(State(rt): State<Runtime>, Query(q): Query<BoardQuery>) -> Response {
    let conn = rt.db.lock().expect("the board lock");
    let sql = format!(
        "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.status <> 'deleted' AND (?1 IS NULL OR t.status = ?1) \
         AND (?2 IS NULL OR t.role = ?2) ORDER BY t.rowid"
    );
    let tasks = conn.prepare(&sql).and_then(|mut s| {
        s.query_map(params![q.status, q.role], task_of)?.collect::<rusqlite::Result<Vec<_>>>()
    });
    tasks.map_or_else(internal, |tasks| Json(Board { tasks }).into_response())
}

async fn run(State(rt): State<Runtime>, Path(run_id): Path<String>) -> Response {
    let conn = rt.db.lock().expect("the board lock");
    let found = conn
        .query_row("SELECT run_id, task_id, status FROM runs WHERE run_id = ?1", [&run_id], |r| {
            Ok(Run {
                transcript: format!("runtime://transcripts/{}", r.get::<_, String>(0)?),
                run_id: r.get(0)?,
                task_id: r.get(1)?,
                status: r.get(2)?,
            })
        })
        .optional();
    match found {
        Ok(Some(run)) => Json(run).into_response(),
        Ok(None) => refuse(StatusCode::NOT_FOUND, "unknown_run"),
        Err(e) => internal(e),
    }
}

async fn task(State(rt): State<Runtime>, Path(task_id): Path<String>) -> Response {
    let conn = rt.db.lock().expect("the board lock");
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE t.task_id = ?1");
    let found = conn.query_row(&sql, [&task_id], task_of).optional();
    let task = match found {
        Ok(Some(t)) => t,
        Ok(None) => return refuse(StatusCode::NOT_FOUND, "unknown_task"),
        Err(e) => return internal(e),
    };
    let comments = conn
        .prepare("SELECT command_id, body, author FROM comments WHERE task_id = ?1 ORDER BY seq")
        .and_then(|mut s| {
            s.query_map([&task_id], |r| {
                Ok(Comment { command_id: r.get(0)?, body: r.get(1)?, author: r.get(2)? })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        });
    comments.map_or_else(internal, |comments| Json(TaskDetail { task, comments }).into_response())
}

async fn commands(State(rt): State<Runtime>, Json(batch): Json<Batch>) -> Response {
    if batch.commands.len() > wire::MAX_BATCH {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "batch_too_large");
    }
    let applied = {
        let mut conn = rt.db.lock().expect("the board lock");
        // The claim is binding: only the tenant that claimed the runtime commands it.
        match conn.query_row("SELECT tenant_id FROM claim", [], |r| r.get::<_, String>(0)).optional() {
            Ok(Some(owner)) if owner == batch.tenant_id => {}
            Ok(Some(_)) => return refuse(StatusCode::CONFLICT, "claimed_by_another"),
            Ok(None) => return refuse(StatusCode::CONFLICT, "not_claimed"),
            Err(e) => return internal(e),
        }
        (|| {
            let tx = conn.transaction()?;
            let results =
                batch.commands.iter().map(|c| apply(&tx, c)).collect::<rusqlite::Result<Vec<_>>>()?;
            tx.commit()?;
            Ok::<_, rusqlite::Error>(results)
        })()
    };
    if !rt.latency.is_zero() {
        tokio::time::sleep(rt.latency).await;
    }
    applied.map_or_else(internal, |results| Json(BatchAnswer { results }).into_response())
}

/// Applies one command once; what became of it.
fn apply(tx: &rusqlite::Transaction<'_>, c: &Command) -> rusqlite::Result<Applied> {
    let answer = |outcome, code: Option<&str>| Applied {
        command_id: c.command_id.clone(),
        outcome,
        code: code.map(str::to_string),
        message: None,
    };
    let seen: Option<(String, Option<String>)> = tx
        .query_row("SELECT outcome, code FROM applied WHERE command_id = ?1", [&c.command_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    if let Some((outcome, code)) = seen {
        tx.execute("UPDATE applied SET seen_again = seen_again + 1 WHERE command_id = ?1", [&c.command_id])?;
        let outcome = if outcome == "rejected" { Outcome::Rejected } else { Outcome::Duplicate };
        return Ok(answer(outcome, code.as_deref()));
    }
    let code = refusal(tx, c)?;
    if code.is_none() {
        carry_out(tx, c)?;
    }
    let outcome = if code.is_some() { "rejected" } else { "applied" };
    tx.execute(
        "INSERT INTO applied (command_id, outcome, code) VALUES (?1, ?2, ?3)",
        params![c.command_id, outcome, code],
    )?;
    Ok(answer(if code.is_some() { Outcome::Rejected } else { Outcome::Applied }, code))
}

/// Why a command cannot be applied, if it cannot.
fn refusal(tx: &rusqlite::Transaction<'_>, c: &Command) -> rusqlite::Result<Option<&'static str>> {
    let status: Option<String> =
        tx.query_row("SELECT status FROM tasks WHERE task_id = ?1", [&c.task_id], |r| r.get(0)).optional()?;
    Ok(match (&status, &c.kind) {
        (None, _) => Some("unknown_task"),
        (Some(s), _) if s == "deleted" => Some("task_deleted"),
        (_, CommandKind::Comment { body }) if body.trim().is_empty() => Some("comment_empty"),
        (_, CommandKind::Comment { body }) if body.chars().count() > wire::MAX_COMMENT_CHARS => {
            Some("comment_too_long")
        }
        (_, CommandKind::Unblock { because }) if because.trim().is_empty() => Some("because_required"),
        _ => None,
    })
}

fn carry_out(tx: &rusqlite::Transaction<'_>, c: &Command) -> rusqlite::Result<()> {
    match &c.kind {
        CommandKind::Comment { body } => tx.execute(
            "INSERT INTO comments (task_id, command_id, body, author) VALUES (?1, ?2, ?3, ?4)",
            params![c.task_id, c.command_id, body, c.author],
        )?,
        CommandKind::Unblock { because } => tx.execute(
            "UPDATE tasks SET status = CASE WHEN status = 'blocked' THEN 'open' ELSE status END, \
             blocked_because = NULL, unblocked_because = ?2 WHERE task_id = ?1",
            params![c.task_id, because],
        )?,
        CommandKind::Delete {} => {
            tx.execute("UPDATE tasks SET status = 'deleted' WHERE task_id = ?1", [&c.task_id])?
        }
    };
    Ok(())
}
