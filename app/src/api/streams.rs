//! Server functions behind the Runtime page's log streams (admins): each stream with its
//! health (cursor, lag, last error), adding one and removing one (docs/streams.md).
//!
//! Guarantees: admins only; each change is the same gateway function `/v1/streams` calls,
//! recorded as a console action by the admin who made it; a stream's signing secret is shown
//! once, on the page the creating form lands on, through the session's one-time handover; a
//! collector's token the admin gave is never shown.

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
    /// `entry` or `ocsf`.
    pub format: String,
    /// `signed` or `token`.
    pub auth: String,
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
    /// The entries its receiver refused for good, skipped and kept to send again (oldest
    /// first, at most 20), and how many there are in all.
    pub dead_letters: Vec<i64>,
    pub dead_letter_count: i64,
    pub created_by: String,
    pub created_at: String,
}

/// The tenant's log streams with their health.
#[cfg(feature = "ssr")]
pub(crate) async fn streams_part(
    gw: &gateway::Gateway,
    t: &gateway::TenantId,
) -> Result<Vec<StreamView>, ServerFnError> {
    let mut out = Vec::new();
    for s in gw.streams(t).await.map_err(to_fn_error)? {
        let dead = match s.health.dead_letters {
            0 => Vec::new(),
            _ => gw.stream_dead_letters(t, &s.id).await.map_err(to_fn_error)?,
        };
        out.push(view(s, dead.iter().take(20).map(|d| d.seq).collect()));
    }
    Ok(out)
}

#[cfg(feature = "ssr")]
fn view(s: gateway::delivery::streams::Stream, dead_letters: Vec<i64>) -> StreamView {
    StreamView {
        id: s.id,
        url: s.url,
        kind: s.kind.as_str().to_string(),
        format: s.format.as_str().to_string(),
        auth: s.auth.as_str().to_string(),
        state: s.health.state,
        acked_seq: s.health.acked_seq,
        acked_at: s.health.acked_at.map(|t| t.to_rfc3339()),
        lag_entries: s.health.lag_entries,
        lag_seconds: s.health.lag_seconds,
        batch_entries: s.health.batch_entries,
        last_error: s.health.last_error,
        next_attempt_at: s.health.next_attempt_at.map(|t| t.to_rfc3339()),
        dead_letters,
        dead_letter_count: s.health.dead_letters,
        created_by: s.created_by,
        created_at: s.created_at.to_rfc3339(),
    }
}

/// Adds a stream of `kind` (`ndjson`, `splunk_hec`, `otlp`) sending each entry in `format`
/// (`entry`, `ocsf`), from the newest entry on (`start` = `now`) or from the oldest the
/// database holds (`beginning`). With a `token` (the collector's, required for Splunk HEC) it
/// is kept in the vault and never shown; without one the page the form lands on shows the
/// signing secret the gateway made, once. A plain form post.
#[server(prefix = "/api", endpoint = "create_stream")]
pub async fn create_stream(
    url: String,
    start: String,
    kind: String,
    format: String,
    token: String,
) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing log streams").await?;
        let spec = stream_spec(url, &start, &kind, &format, token)?;
        let created = gw
            .create_stream(&tenant.id, spec, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        let id = created.stream.id;
        let Some(secret) = created.secret else {
            back_with_notice(&format!("Added log stream {id}; it sends with your collector's token.")).await;
            return Ok(());
        };
        let session = crate::api::session::token()
            .await?
            .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
        gw.hand_over_secret(&session, &id, &secret).await.map_err(to_fn_error)?;
        leptos_axum::redirect(&format!("/runtime?issued={id}#streams"));
        Ok(())
    })
    .await
}

/// The stream the form describes; an unknown kind or format is refused with what is known.
#[cfg(feature = "ssr")]
fn stream_spec(
    url: String,
    start: &str,
    kind: &str,
    format: &str,
    token: String,
) -> Result<gateway::delivery::streams::StreamSpec, ServerFnError> {
    use gateway::delivery::streams::{StreamFormat, StreamKind, StreamSpec, StreamStart};
    let kind = StreamKind::parse(kind)
        .ok_or_else(|| ServerFnError::new("invalid_stream_kind: a stream is ndjson, splunk_hec or otlp"))?;
    let format = StreamFormat::parse(format)
        .ok_or_else(|| ServerFnError::new("invalid_stream_format: a stream sends entry or ocsf events"))?;
    let start = if start == "beginning" { StreamStart::Beginning } else { StreamStart::Now };
    let token = Some(token.trim().to_string()).filter(|t| !t.is_empty());
    Ok(StreamSpec { url, kind, format, start, max_entries: None, token })
}

/// Sends a stream's dead letter again, alone; the page says whether the receiver took it. A
/// plain form post.
#[server(prefix = "/api", endpoint = "retry_stream_dead_letter")]
pub async fn retry_stream_dead_letter(id: String, seq: i64) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "managing log streams").await?;
        gw.retry_stream_dead_letter(&tenant.id, &id, seq).await.map_err(to_fn_error)?;
        back_with_notice(&format!("Entry {seq} was sent to log stream {id} and is no longer a dead letter."))
            .await;
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
