//! Server functions behind the Runtime page's log streams (admins): each stream with its
//! health (cursor, lag, last error), adding one and removing one (docs/streams.md).
//!
//! Guarantees: admins only; each change is the same gateway function `/v1/streams` calls,
//! recorded as a console action by the admin who made it; a stream's signing secret is shown
//! once, on the page the creating form lands on, through the session's one-time handover.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_roles,
    to_fn_error,
};

/// A log stream as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamView {
    pub id: String,
    pub url: String,
    pub kind: String,
    /// `caught_up`, `streaming` or `failing`.
    pub state: String,
    /// The newest entry its receiver acknowledged, and when.
    pub acked_seq: i64,
    pub acked_at: Option<String>,
    pub lag_entries: i64,
    pub lag_seconds: i64,
    pub batch_entries: i64,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<String>,
    pub created_by: String,
    pub created_at: String,
}

/// The tenant's log streams with their health.
#[cfg(feature = "ssr")]
pub(crate) async fn streams_part(
    gw: &gateway::Gateway,
    t: &gateway::TenantId,
) -> Result<Vec<StreamView>, ServerFnError> {
    let streams = gw.streams(t).await.map_err(to_fn_error)?;
    Ok(streams
        .into_iter()
        .map(|s| StreamView {
            id: s.id,
            url: s.url,
            kind: s.kind.as_str().to_string(),
            state: s.health.state,
            acked_seq: s.health.acked_seq,
            acked_at: s.health.acked_at.map(|t| t.to_rfc3339()),
            lag_entries: s.health.lag_entries,
            lag_seconds: s.health.lag_seconds,
            batch_entries: s.health.batch_entries,
            last_error: s.health.last_error,
            next_attempt_at: s.health.next_attempt_at.map(|t| t.to_rfc3339()),
            created_by: s.created_by,
            created_at: s.created_at.to_rfc3339(),
        })
        .collect())
}

/// Adds a stream (newline-delimited JSON, entries as `/v1/logs` shows them) from the newest
/// entry on (`start` = `now`) or from the oldest the database holds (`beginning`), and lands
/// on the page that shows its signing secret once. A plain form post.
#[server(prefix = "/api", endpoint = "create_stream")]
pub async fn create_stream(url: String, start: String) -> Result<(), ServerFnError> {
    use gateway::delivery::streams::{StreamSpec, StreamStart};
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing log streams").await?;
        let start = if start == "beginning" { StreamStart::Beginning } else { StreamStart::Now };
        let spec = StreamSpec {
            url,
            kind: Default::default(),
            format: Default::default(),
            start,
            max_entries: None,
        };
        let created = gw
            .create_stream(&tenant.id, spec, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        let session = crate::api::session::token()
            .await?
            .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
        let id = created.stream.id;
        gw.hand_over_secret(&session, &id, &created.secret).await.map_err(to_fn_error)?;
        leptos_axum::redirect(&format!("/runtime?issued={id}#streams"));
        Ok(())
    })
    .await
}

/// Removes a stream and its secret. A plain form post.
#[server(prefix = "/api", endpoint = "delete_stream")]
pub async fn delete_stream(id: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing log streams").await?;
        gw.delete_stream(&tenant.id, &id, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice(&format!("Removed log stream {id}.")).await;
        Ok(())
    })
    .await
}
