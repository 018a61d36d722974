//! `GET /healthz`: the process is up and the database answers. `GET /readyz`: this instance
//! should get traffic: the database answers, its schema is the one this build migrates to,
//! writes go through (the SQLite writer, or a PostgreSQL runner), the sweeper and the delivery
//! worker run, and it is not draining. Each check is bounded by [`CHECK_TIMEOUT`], so a
//! database that does not answer makes it 503, never a hung probe. `/readyz` answers without
//! a credential, so its probe of the database and the writer runs at most once per
//! [`PROBE_EVERY`], one at a time, whatever the request rate: a flood of probes costs the
//! writer nothing more.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

#[utoipa::path(get, path = "/healthz", tag = "meta",
    responses((status = 200, description = "Up, and the database answers.", body = Object),
        (status = 503, description = "The database does not answer.", body = Object)))]
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.gateway.store().ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({ "status": "ok", "database": "ok" }))),
        Err(e) => {
            tracing::warn!(error = %e, "health check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "degraded", "database": e.code() })))
        }
    }
}

/// How long one readiness check may take before it counts as failed.
pub const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// One check's outcome: `ok`, or why not.
async fn check<F: std::future::Future<Output = gateway::Result<bool>>>(f: F, not: &'static str) -> String {
    match tokio::time::timeout(CHECK_TIMEOUT, f).await {
        Ok(Ok(true)) => "ok".into(),
        Ok(Ok(false)) => not.into(),
        Ok(Err(e)) => e.code().into(),
        Err(_) => "timeout".into(),
    }
}

/// How long one probe of the database, the schema and the writer stands for `/readyz`.
pub const PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The checks of the database, the schema and the writer: the last probe's while it is
/// younger than [`PROBE_EVERY`], otherwise a new one. Requests that arrive while one probes
/// wait for its answer instead of probing too.
async fn probed(state: &AppState) -> [String; 3] {
    let mut last = state.readiness.last_probe.lock().await;
    if let Some((at, checks)) = last.as_ref()
        && at.elapsed() < PROBE_EVERY
    {
        return checks.clone();
    }
    let gw = &state.gateway;
    let checks = [
        check(async { gw.store().ping().await.map(|()| true).map_err(Into::into) }, "down").await,
        check(async { gw.store().schema_current().await.map_err(Into::into) }, "not_current").await,
        check(async { gw.writer_answers().await.map(|()| true) }, "down").await,
    ];
    *last = Some((std::time::Instant::now(), checks.clone()));
    checks
}

#[utoipa::path(get, path = "/readyz", tag = "meta",
    responses((status = 200, description = "Ready: every check is `ok`.", body = Object),
        (status = 503, description = "Not ready: draining, or a check is not `ok` (it says why).", body = Object)))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let gw = &state.gateway;
    let [database, schema, writer] = probed(&state).await;
    let stopped = state.readiness.stopped_tasks();
    let task = |name: &str| if stopped.contains(&name) { "stopped" } else { "ok" };
    let checks = json!({ "database": database, "migrations": schema, "writer": writer,
        "sweeper": task("sweeper"), "delivery": task("delivery") });
    let draining = state.readiness.draining.load(std::sync::atomic::Ordering::SeqCst);
    let ok = !draining && checks.as_object().is_some_and(|c| c.values().all(|v| v == "ok"));
    let status = if draining {
        "draining"
    } else if ok {
        "ready"
    } else {
        "not_ready"
    };
    gw.metrics().with(|f| f.ready.set(i64::from(ok)));
    let code = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(json!({ "status": status, "checks": checks })))
}
