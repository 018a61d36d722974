//! Server functions behind the Runtime page's archive and retention (admins): how far the
//! tenant's log is archived, sent by every log stream and deleted under its retention, and
//! the form that sets the retention (docs/archive.md).
//!
//! Guarantees: admins only; the retention is saved by the same gateway function
//! `PUT /v1/tenant/retention` calls, recorded as a console action by the admin who made it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_roles,
    to_fn_error,
};

/// The tenant's archive and retention as the page shows them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchiveView {
    /// Where the operator keeps the archive; None when nothing is archived.
    pub url: Option<String>,
    pub ranges: i64,
    /// The newest archived entry (0 for none), its day and when it was archived.
    pub archived_to: i64,
    pub archived_day: Option<String>,
    pub archived_at: Option<String>,
    /// The newest entry every log stream has sent; None without a stream.
    pub streamed_through: Option<i64>,
    /// Entries up to this one are deleted from the database (0 for none), and when it was
    /// appended.
    pub deleted_through: i64,
    pub deleted_through_at: Option<String>,
    /// Days an archived entry stays in the database; None keeps every entry.
    pub log_days: Option<u32>,
}

/// The tenant's archive and retention.
#[cfg(feature = "ssr")]
pub(crate) async fn archive_part(
    gw: &gateway::Gateway,
    t: &gateway::TenantId,
) -> Result<ArchiveView, ServerFnError> {
    let s = gw.archive_status(t).await.map_err(to_fn_error)?;
    let r = gw.log_retention(t).await.map_err(to_fn_error)?;
    Ok(ArchiveView {
        url: gw.config().archive_url.clone(),
        ranges: s.ranges,
        archived_to: s.archived_to,
        archived_day: s.archived_day,
        archived_at: s.archived_at.map(|t| t.to_rfc3339()),
        streamed_through: s.streamed_through,
        deleted_through: s.deleted_through,
        deleted_through_at: s.deleted_through_at.map(|t| t.to_rfc3339()),
        log_days: r.log_days,
    })
}

/// Sets how many days archived entries stay in the database (`log_days` empty keeps every
/// entry). A plain form post.
#[server(prefix = "/api", endpoint = "set_retention")]
pub async fn set_retention(log_days: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "changing the retention").await?;
        let days = match log_days.trim() {
            "" => None,
            n => Some(n.parse::<u32>().map_err(|_| {
                ServerFnError::new("invalid_retention: the retention is a whole number of days, or empty to keep every entry")
            })?),
        };
        let r = gateway::domain::tenants::Retention { log_days: days };
        gw.set_log_retention(&tenant.id, r, &by.username).await.map_err(to_fn_error)?;
        let said = match days {
            Some(d) => format!("Archived log entries now stay in the database for {d} days."),
            None => "Every log entry now stays in the database.".to_string(),
        };
        back_with_notice(&said).await;
        Ok(())
    })
    .await
}
