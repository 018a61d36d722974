//! Console sessions (docs/architecture.md#identities-and-roles): a signed-in browser holds a random token
//! in an HttpOnly
//! cookie; only its SHA-256 is stored, with the user and an expiry. Signing in checks the
//! argon2id password ([`Gateway::verify_login`](crate::Gateway::verify_login)); every request re-reads the user, so a role
//! change or a deleted user takes effect at once. Sign-in, sign-out and a refused sign-in as
//! a known user are recorded in the activity log.

use chrono::{Duration, Utc};
use serde_json::json;

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::error::Result;
use crate::ids::{TenantId, UserId};
use crate::sql::Tx;
use crate::stored;

/// How long a session lasts.
pub const SESSION_HOURS: i64 = 12;

/// Deletes the sessions that ended by `now`.
pub(crate) fn forget_ended(c: &dyn crate::sql::Tx, now: chrono::DateTime<chrono::Utc>) -> Result<()> {
    c.exec("DELETE FROM console_sessions WHERE expires_at <= ?", &[&crate::stored::ts(now)])?;
    Ok(())
}

/// Records a new session (its token's hash) for `user` of `tenant`, and the sign-in.
/// The tenant and user of the unexpired session whose token hashes to `hash`, at `now`.
pub(crate) async fn user_of(
    store: &crate::store::Store,
    hash: &str,
    now: chrono::DateTime<Utc>,
) -> Result<Option<(TenantId, UserId)>> {
    let sql = "SELECT user_id, tenant_id FROM console_sessions WHERE token_hash = ? AND expires_at > ?";
    let row: Option<(String, String)> = store.opt(sql, &[&hash, &stored::ts(now)]).await?;
    Ok(row.map(|(user, tenant)| (TenantId::from_db(tenant), UserId::from_db(user))))
}

/// With `sso`, the issuer the user signed in through.
pub(crate) fn start(
    c: &dyn Tx,
    hash: &str,
    (user, tenant, name): (&UserId, &TenantId, &str),
    sso: Option<&str>,
) -> Result<Entry> {
    let now = Utc::now();
    c.exec(
        "INSERT INTO console_sessions (token_hash, user_id, tenant_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        &[&hash, &user.as_str(), &tenant.as_str(), &stored::ts(now), &stored::ts(now + Duration::hours(SESSION_HOURS))],
    )?;
    activity::append(
        c,
        NewEntry::new(tenant, name, Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::SignedIn)
            .detail(match sso {
                Some(issuer) => json!({ "user": name, "sso": issuer }),
                None => json!({ "user": name }),
            }),
    )
}

/// Records a refused sign-in as `name` of `tenant` (`why`: `password`, `sso_required`), by the
/// gateway: whoever tried is not known to be the user.
pub(crate) fn refused(c: &dyn Tx, tenant: &TenantId, name: &str, why: &str) -> Result<Entry> {
    activity::append(
        c,
        NewEntry::new(tenant, activity::SYSTEM_ACTOR, Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::SignInFailed)
            .detail(json!({ "user": name, "reason": why })),
    )
}

/// Ends the session whose token hashes to `hash`, and records the sign-out; nothing for an
/// unknown or ended one.
pub(crate) fn end(c: &dyn Tx, hash: &str) -> Result<Vec<Entry>> {
    let row = c.row(
        "DELETE FROM console_sessions WHERE token_hash = ? RETURNING tenant_id, \
             (SELECT username FROM console_users WHERE id = user_id)",
        &[&hash],
    )?;
    let Some(r) = row else { return Ok(Vec::new()) };
    let (tenant, name): (String, String) = (r.get(0)?, r.get(1)?);
    Ok(vec![activity::append(
        c,
        NewEntry::new(&TenantId::from_db(tenant), name.as_str(), Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::SignedOut)
            .detail(json!({ "user": name })),
    )?])
}

/// Ends every session of `user` at once (their directory deactivated them).
pub(crate) fn end_all_in(c: &dyn Tx, user: &UserId) -> Result<u64> {
    Ok(c.exec("DELETE FROM console_sessions WHERE user_id = ?", &[&user.as_str()])?)
}
