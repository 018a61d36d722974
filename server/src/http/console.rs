//! Console routes outside the Leptos pages, authenticated by the console session.
//!
//! `GET /console/events`: the tenant's activity as Server-Sent Events of console rows (agent
//! names resolved), for the live inbox and activity feed; it resumes with `Last-Event-ID`
//! exactly as `/v1/events` does, because it is the same feed.
//!
//! `GET /spend/export.csv?profile=&from=&to=`: finance's export of exactly the ledger entries
//! the spend page's period filter shows (every page of them), as CSV.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::http::problem::{Problem, Query};
use crate::state::AppState;

#[derive(Deserialize)]
pub struct ExportParams {
    profile: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
}

fn day(v: &str, field: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, Problem> {
    app::api::spend::day(v, field).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_period",
            e.to_string().replace("error running server function: ", ""),
        )
    })
}

pub async fn export_ledger_csv(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ExportParams>,
) -> Result<Response, Problem> {
    let user = crate::http::console_auth::session_user(&state, &headers).await?.ok_or_else(|| {
        Problem::new(StatusCode::UNAUTHORIZED, "signed_out", "sign in to the console to export the ledger")
    })?;
    if !(user.has(gateway::Role::Finance) || user.has(gateway::Role::Admin)) {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "role_required",
            "the ledger export needs the finance or admin role",
        ));
    }
    let id = gateway::ProfileId::parse(&q.profile)
        .ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile"))?;
    let query = gateway::domain::ledger::LedgerQuery {
        from: day(&q.from, "from")?,
        to: day(&q.to, "to")?,
        after: None,
        limit: None,
    };
    let rows = state
        .gateway
        .ledger_entries(&user.tenant_id, &id, &query, gateway::domain::ledger::MAX_LEDGER_EXPORT)
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"ledger-{id}.csv\"")),
        ],
        gateway::domain::ledger::to_csv(&rows),
    )
        .into_response())
}

/// `GET /approvals/export.csv?status=&agent=&action=&min=&age=&q=`: the approvals the
/// inbox's filters match (decided and expired ones included), each step of each trail a line:
/// who, with which credential, when, their note, the kit version.
pub async fn export_approvals_csv(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(f): Query<app::api::inbox::InboxFilter>,
) -> Result<Response, Problem> {
    let user = crate::http::console_auth::session_user(&state, &headers).await?.ok_or_else(|| {
        Problem::new(StatusCode::UNAUTHORIZED, "signed_out", "sign in to the console to export approvals")
    })?;
    if ![gateway::Role::Approver, gateway::Role::Admin, gateway::Role::Finance].iter().any(|r| user.has(*r)) {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "role_required",
            "the approvals export needs the approver, admin or finance role",
        ));
    }
    let profiles = state.gateway.profiles(&user.tenant_id).await?;
    let q = f.to_query(&profiles, gateway::domain::approvals::MAX_EXPORT).map_err(|e| {
        let text = e.to_string();
        let message = text.rsplit("invalid_filter: ").next().unwrap_or(&text).to_string();
        Problem::new(StatusCode::BAD_REQUEST, "invalid_filter", message)
    })?;
    let csv = state.gateway.export_approvals(&user.tenant_id, &q).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"approvals.csv\"".to_string()),
        ],
        csv,
    )
        .into_response())
}

pub async fn events(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Problem> {
    let user = crate::http::console_auth::session_user(&state, &headers).await?.ok_or_else(|| {
        Problem::new(StatusCode::UNAUTHORIZED, "signed_out", "sign in to the console to follow its activity")
    })?;
    let names = crate::v1::events::ConsoleNames::load(state.gateway.clone(), user.tenant_id.clone()).await?;
    let token = crate::http::console_auth::token(&state, &headers).unwrap_or_default().to_string();
    crate::v1::events::open(
        &state,
        user.tenant_id,
        None,
        crate::v1::events::Holder::Session(token),
        &headers,
        crate::v1::events::Render::Console(Box::new(names)),
    )
    .await
}
