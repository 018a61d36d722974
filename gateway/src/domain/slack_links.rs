//! Who a Slack user is in the console: a link a person makes once, themselves, through a
//! single-use link the gateway sends only them, and that an admin can see and remove. A link
//! is a credential of the person, as a session or a personal token is: deactivating them
//! removes it ([`forget_user_in`]).
//!
//! Guarantees:
//! - A Slack user is linked to at most one console user of the tenant, and a console user to
//!   at most one Slack user: linking again replaces the old link.
//! - A link code is kept only as its hash, works once, within [`CODE_TTL_MINUTES`], and only
//!   for a console user of the tenant whose Slack app sent it.
//! - The signatures of the interaction requests accepted in the last [`SEEN_FOR_MINUTES`] are
//!   kept, so the same request sent again is refused ([`seen_in`]); older ones, and codes a
//!   day past their expiry, are forgotten as new ones are kept.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::domain::users::ConsoleUser;
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::secrets;
use crate::sql::Tx;
use crate::stored;

/// How long a link sent to an unlinked clicker works.
pub const CODE_TTL_MINUTES: i64 = 10;
/// How long an accepted request's signature is remembered: longer than the five minutes a
/// request's timestamp is accepted for.
pub const SEEN_FOR_MINUTES: i64 = 10;

/// A Slack user linked to a console user.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SlackLink {
    /// The Slack user (`U…`).
    pub slack_user_id: String,
    /// Their Slack name when they linked.
    pub slack_name: String,
    pub user_id: String,
    pub username: String,
    pub linked_at: DateTime<Utc>,
}

/// What a link code offers, as its page shows it.
#[derive(Clone, Debug)]
pub struct LinkOffer {
    pub tenant_id: TenantId,
    pub slack_user_id: String,
    pub slack_name: String,
    pub expires_at: DateTime<Utc>,
    pub used: bool,
}

/// Keeps a new link code for `slack_user` (its hash), good until `now` plus the TTL; the code.
pub(crate) fn new_code_in(
    c: &dyn Tx,
    t: &TenantId,
    slack_user: &str,
    slack_name: &str,
    now: DateTime<Utc>,
) -> Result<String> {
    use rand::Rng;
    // Codes a day past their expiry are forgotten here, as new ones are made.
    c.exec(
        "DELETE FROM slack_link_codes WHERE tenant_id = ? AND expires_at < ?",
        &[t, &stored::ts(now - Duration::days(1))],
    )?;
    let code: String =
        rand::thread_rng().sample_iter(&rand::distributions::Alphanumeric).take(32).map(char::from).collect();
    c.exec(
        "INSERT INTO slack_link_codes (code_hash, tenant_id, slack_user_id, slack_name, expires_at) VALUES (?, ?, ?, ?, ?)",
        &[&secrets::hash_token(&code), t, &slack_user, &slack_name, &(now + Duration::minutes(CODE_TTL_MINUTES))],
    )?;
    Ok(code)
}

const OFFER: &str = "SELECT tenant_id, slack_user_id, slack_name, expires_at, used_at FROM slack_link_codes WHERE code_hash = ?";

fn offer_of(r: &crate::sql::Row) -> ::store::Result<LinkOffer> {
    Ok(LinkOffer {
        tenant_id: r.get(0)?,
        slack_user_id: r.get(1)?,
        slack_name: r.get(2)?,
        expires_at: r.get(3)?,
        used: r.get::<Option<String>>(4)?.is_some(),
    })
}

/// What `code` offers, if it is one.
pub(crate) async fn offer(store: &crate::store::Store, code: &str) -> Result<Option<LinkOffer>> {
    let rows = store.rows(OFFER, &[&secrets::hash_token(code)]).await?;
    let Some(r) = rows.first() else { return Ok(None) };
    Ok(Some(offer_of(r)?))
}

/// Whether an offer can still be taken at `now`; why not, as the error taking it gives.
pub(crate) fn usable(o: &LinkOffer, now: DateTime<Utc>) -> Result<()> {
    if o.used {
        return Err(Error::Conflict {
            code: "slack_link_used",
            message: "this link was used already; click Approve or Deny in Slack again for a new one".into(),
        });
    }
    if o.expires_at <= now {
        return Err(Error::Conflict {
            code: "slack_link_expired",
            message: format!(
                "this link expired ({CODE_TTL_MINUTES} minutes after it was sent); click Approve or Deny in Slack again for a new one"
            ),
        });
    }
    Ok(())
}

/// Links the code's Slack user to `user` (of the code's tenant), once; the link.
pub(crate) fn redeem_in(c: &dyn Tx, code: &str, user: &ConsoleUser, now: DateTime<Utc>) -> Result<SlackLink> {
    let t = &user.tenant_id;
    activity::lock_tenant(c, t)?;
    let hash = secrets::hash_token(code);
    let offer = match c.row(OFFER, &[&hash])? {
        Some(r) => offer_of(&r)?,
        None => return Err(Error::NotFound { what: "Slack link" }),
    };
    if offer.tenant_id != *t {
        return Err(Error::NotFound { what: "Slack link" });
    }
    usable(&offer, now)?;
    c.exec("UPDATE slack_link_codes SET used_at = ? WHERE code_hash = ?", &[&now, &hash])?;
    c.exec(
        "DELETE FROM slack_links WHERE tenant_id = ? AND (slack_user_id = ? OR user_id = ?)",
        &[t, &offer.slack_user_id, &user.id],
    )?;
    c.exec(
        "INSERT INTO slack_links (tenant_id, slack_user_id, slack_name, user_id, linked_at) VALUES (?, ?, ?, ?, ?)",
        &[t, &offer.slack_user_id, &offer.slack_name, &user.id, &now],
    )?;
    activity::append(
        c,
        NewEntry::new(t, &user.username, Kind::Console)
            .via(Transport::Console)
            .verdict(Verdict::SlackLinked)
            .detail(json!({ "slack_user_id": offer.slack_user_id, "slack_name": offer.slack_name })),
    )?;
    Ok(SlackLink {
        slack_user_id: offer.slack_user_id,
        slack_name: offer.slack_name,
        user_id: user.id.to_string(),
        username: user.username.clone(),
        linked_at: now,
    })
}

/// The console user `slack_user` is linked to.
pub(crate) async fn linked(
    store: &crate::store::Store,
    t: &TenantId,
    slack_user: &str,
) -> Result<Option<UserId>> {
    let row: Option<(UserId,)> = store
        .opt("SELECT user_id FROM slack_links WHERE tenant_id = ? AND slack_user_id = ?", &[t, &slack_user])
        .await?;
    Ok(row.map(|(id,)| id))
}

const LINKS: &str = "SELECT l.slack_user_id, l.slack_name, l.user_id, u.username, l.linked_at \
     FROM slack_links l JOIN console_users u ON u.id = l.user_id WHERE l.tenant_id = ?";

/// The tenant's links, by username.
pub(crate) async fn list(store: &crate::store::Store, t: &TenantId) -> Result<Vec<SlackLink>> {
    links_in(store, &format!("{LINKS} ORDER BY u.username"), &[t]).await
}

/// The link `user` made, if any.
pub(crate) async fn of_user(
    store: &crate::store::Store,
    t: &TenantId,
    user: &UserId,
) -> Result<Option<SlackLink>> {
    Ok(links_in(store, &format!("{LINKS} AND l.user_id = ?"), &[t, user]).await?.pop())
}

async fn links_in(
    store: &crate::store::Store,
    sql: &str,
    args: &[&dyn crate::sql::ToValue],
) -> Result<Vec<SlackLink>> {
    let rows: Vec<(String, String, String, String, DateTime<Utc>)> = store.all(sql, args).await?;
    Ok(rows
        .into_iter()
        .map(|(slack_user_id, slack_name, user_id, username, linked_at)| SlackLink {
            slack_user_id,
            slack_name,
            user_id,
            username,
            linked_at,
        })
        .collect())
}

/// Removes `slack_user`'s link: their next click asks them to link again.
pub(crate) fn unlink_in(c: &dyn Tx, t: &TenantId, slack_user: &str, by: &str, via: Transport) -> Result<()> {
    activity::lock_tenant(c, t)?;
    let gone =
        c.exec("DELETE FROM slack_links WHERE tenant_id = ? AND slack_user_id = ?", &[t, &slack_user])?;
    if gone == 0 {
        return Err(Error::NotFound { what: "Slack link" });
    }
    activity::append(
        c,
        NewEntry::new(t, by, Kind::Console)
            .via(via)
            .verdict(Verdict::SlackUnlinked)
            .detail(json!({ "slack_user_id": slack_user })),
    )?;
    Ok(())
}

/// Remembers an accepted request's signature; `slack_request_replayed` when it was seen (two
/// instances taking the same request at once: one of the inserts finds the other's row).
pub(crate) fn seen_in(c: &dyn Tx, t: &TenantId, signature: &str) -> Result<()> {
    // What is older than any timestamp still accepted is forgotten here, as new ones come.
    let old = stored::ts(Utc::now() - Duration::minutes(SEEN_FOR_MINUTES));
    c.exec("DELETE FROM slack_requests WHERE tenant_id = ? AND seen_at < ?", &[t, &old])?;
    let kept = c.exec(
        "INSERT INTO slack_requests (tenant_id, signature, seen_at) VALUES (?, ?, ?) \
         ON CONFLICT (tenant_id, signature) DO NOTHING",
        &[t, &signature, &stored::ts(Utc::now())],
    )?;
    if kept == 0 {
        return Err(Error::Forbidden {
            code: "slack_request_replayed",
            message: "this request was received already: a replay is refused".into(),
        });
    }
    Ok(())
}

/// Forgets every link and link code of the tenant: its Slack app was removed, or now belongs
/// to another workspace, whose users are other people.
pub(crate) fn forget_all_in(c: &dyn Tx, t: &TenantId) -> Result<()> {
    c.exec("DELETE FROM slack_links WHERE tenant_id = ?", &[t])?;
    c.exec("DELETE FROM slack_link_codes WHERE tenant_id = ?", &[t])?;
    Ok(())
}

/// Removes the Slack link of a console user being deactivated: their clicks decide nothing,
/// now or after they are reactivated, until they link again.
pub(crate) fn forget_user_in(c: &dyn Tx, t: &TenantId, user: &UserId) -> Result<()> {
    c.exec("DELETE FROM slack_links WHERE tenant_id = ? AND user_id = ?", &[t, user])?;
    Ok(())
}
