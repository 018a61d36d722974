//! `mcp-floor`: what the MCP SDK costs on its own, for `make bench-mcp`. It serves one
//! trivial tool (`read`) at `/mcp` through the same SDK wiring as the gateway's `/mcp`
//! ([`server::mcp::sdk_endpoint`]: the same settings and answer form), and the same answer at
//! `POST /read` as a plain JSON route, through the same accept loop. No authentication,
//! policy, budget or audit: the CPU a call costs here is the floor of each transport, so the
//! bench can say how much of a governed MCP call's extra cost over `/v1` is the SDK's.
//!
//! ```text
//! mcp-floor 127.0.0.1:0     # prints "listening on http://127.0.0.1:PORT", serves until killed
//! ```

use std::sync::Arc;

/// The gateway's allocator, so the floor and the governed call are measured alike: the SDK
/// allocates dozens of times per call, and glibc malloc made the floor look dearer than it is.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::Json;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// The trivial tool's answer, the same over both transports.
fn page(args: &Value) -> Value {
    json!({ "ok": true, "page": format!("the page at {}", args["url"].as_str().unwrap_or_default()) })
}

#[derive(Clone)]
struct Floor;

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-floor", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({ "type": "object", "properties": { "url": { "type": "string" } } });
        let schema = Arc::new(schema.as_object().expect("an object").clone());
        Ok(ListToolsResult::with_all_items(vec![Tool::new("read", "Returns a fixed page.", schema)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(CallToolResult::structured(page(&args)).into())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let sessions = Arc::new(server::mcp::session_manager());
    let settings = server::mcp::McpSettings::default();
    let mcp = server::mcp::sdk_endpoint(|| Floor, sessions, &settings, Default::default());
    let router = axum::Router::new()
        .route("/read", axum::routing::post(|Json(args): Json<Value>| async move { Json(page(&args)) }))
        .nest_service("/mcp", mcp);
    server::http::serve::serve(listener, router, std::future::pending()).await
}
