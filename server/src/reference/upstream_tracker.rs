//! The reference upstream's connected app: a small issue tracker served as an MCP server at
//! `/mcp` (streamable HTTP, the official SDK), behind the upstream's bearer credential. It is
//! what a connected app looks like to the gateway, and its three tools cover the three effect
//! classes the gateway derives from annotations:
//! - `issues.list` declares `readOnlyHint` (a read);
//! - `issues.delete` declares `destructiveHint` (destructive);
//! - `issues.create` declares neither, as many real servers do (the gateway gates it as
//!   destructive, the MCP schema's default);
//! - `issues.export` declares `readOnlyHint` and answers `bytes` bytes of text, to see what
//!   the gateway does with an answer past its bound.
//!
//! At `/mcp-sprawling` the same credential reaches a second app that lists
//! [`SPRAWLING_TOOLS`] tools, a page of 100 at a time, more than the gateway reads from one
//! app, as the test merchants show a processor's failures.
//!
//! Issues live in the upstream's SQLite file; every create and delete is also a row of
//! `records` (`GET /records`), so a test sees exactly what reached the app.

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

/// How many tools `/mcp-sprawling` lists.
pub const SPRAWLING_TOOLS: usize = 1_200;
/// The most bytes `issues.export` answers.
const MAX_EXPORT_BYTES: u64 = 8 << 20;

/// The tracker's state: the upstream's SQLite connection, and whether it is the sprawling app.
#[derive(Clone)]
pub struct Tracker {
    db: Arc<Mutex<rusqlite::Connection>>,
    sprawling: bool,
}

/// `/mcp` of the reference upstream (or, `sprawling`, `/mcp-sprawling`), refusing a request
/// without `Authorization: Bearer <secret>`.
pub fn endpoint(
    db: Arc<Mutex<rusqlite::Connection>>,
    secret: String,
    sprawling: bool,
) -> Result<axum::Router, String> {
    db.lock()
        .expect("records lock")
        .execute_batch("CREATE TABLE IF NOT EXISTS issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
        .map_err(|e| format!("cannot prepare the tracker: {e}"))?;
    let tracker = Tracker { db, sprawling };
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts().with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(tracker.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let secret = Arc::new(secret);
    Ok(axum::Router::new().fallback_service(service).layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let secret = secret.clone();
            async move {
                let expected = format!("Bearer {secret}");
                let ok = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| gateway::secrets::digest_eq(v, &expected));
                if ok {
                    next.run(req).await
                } else {
                    (StatusCode::UNAUTHORIZED, "bad credential").into_response()
                }
            }
        },
    )))
}

fn schema(v: Value) -> Arc<rmcp::model::JsonObject> {
    let Value::Object(o) = v else { unreachable!("schemas are objects") };
    Arc::new(o)
}

fn tools() -> Vec<Tool> {
    let none = json!({"type": "object", "properties": {}});
    let create =
        json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]});
    let delete = json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]});
    let export =
        json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]});
    vec![
        Tool::new("issues.list", "Lists the open issues.", schema(none))
            .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new("issues.create", "Opens an issue.", schema(create)),
        Tool::new("issues.delete", "Deletes an issue for good.", schema(delete))
            .with_annotations(ToolAnnotations::new().read_only(false).destructive(true)),
        Tool::new("issues.export", "Exports the tracker as text of the given size.", schema(export))
            .with_annotations(ToolAnnotations::new().read_only(true)),
    ]
}

/// The sprawling app's tools: many trivial reads.
fn sprawl() -> Vec<Tool> {
    (0..SPRAWLING_TOOLS)
        .map(|i| {
            Tool::new(format!("report.{i:04}"), "One of many reports.", schema(json!({"type": "object"})))
                .with_annotations(ToolAnnotations::new().read_only(true))
        })
        .collect()
}

impl Tracker {
    fn record(&self, conn: &rusqlite::Connection, action: &str, party: &str) -> rusqlite::Result<()> {
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))?;
        let id = format!("mcp_{:08}", n + 1);
        conn.execute(
            "INSERT INTO records (action_id, action, party, amount, answer, at) VALUES (?1, ?2, ?3, '0.00', '{}', ?4)",
            rusqlite::params![id, format!("tracker/{action}"), party, chrono::Utc::now().to_rfc3339()],
        )?;
        Ok(())
    }

    fn run(&self, tool: &str, args: &Value) -> Result<Value, String> {
        let conn = self.db.lock().expect("records lock");
        let failed = |e: rusqlite::Error| e.to_string();
        match tool {
            "issues.list" => {
                let mut q = conn.prepare("SELECT id, title FROM issues ORDER BY id").map_err(failed)?;
                let rows = q
                    .query_map([], |r| {
                        Ok(json!({"id": r.get::<_, i64>(0)?, "title": r.get::<_, String>(1)?}))
                    })
                    .map_err(failed)?;
                Ok(json!({ "issues": rows.collect::<rusqlite::Result<Vec<_>>>().map_err(failed)? }))
            }
            "issues.create" => {
                let title = args["title"].as_str().ok_or("title is required")?;
                conn.execute("INSERT INTO issues (title) VALUES (?1)", [title]).map_err(failed)?;
                let id = conn.last_insert_rowid();
                self.record(&conn, tool, title).map_err(failed)?;
                Ok(json!({ "id": id }))
            }
            "issues.delete" => {
                let id = args["id"].as_i64().ok_or("id is required")?;
                let n = conn.execute("DELETE FROM issues WHERE id = ?1", [id]).map_err(failed)?;
                self.record(&conn, tool, &id.to_string()).map_err(failed)?;
                Ok(json!({ "deleted": n == 1 }))
            }
            "issues.export" => {
                let bytes = args["bytes"].as_u64().ok_or("bytes is required")?.min(MAX_EXPORT_BYTES);
                Ok(json!({ "export": "x".repeat(bytes as usize) }))
            }
            _ => Err(format!("no tool {tool}")),
        }
    }
}

impl ServerHandler for Tracker {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("reference-tracker", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        page: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if !self.sprawling {
            return Ok(ListToolsResult::with_all_items(tools()));
        }
        let from: usize = page.and_then(|p| p.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        let to = (from + 100).min(SPRAWLING_TOOLS);
        let mut result = ListToolsResult::with_all_items(sprawl()[from..to].to_vec());
        result.next_cursor = (to < SPRAWLING_TOOLS).then(|| to.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match self.run(&request.name, &args) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => CallToolResult::structured_error(json!({ "error": e })),
        };
        Ok(result.into())
    }
}
