//! Personal API tokens: how a console user decides over HTTP, as themselves.
//!
//! A user creates their own tokens (on their account page), each with a label and a subset
//! of their roles; the secret (`nvu_<prefix>_<secret>`) is returned once and only its hash is
//! kept. A token acts with the roles it was given that its user still holds, so taking a role
//! from the user takes it from every token at once. A revoked token never authenticates, and
//! its open streams close. Every decision made with a token names it in the trail. Creating
//! and revoking are recorded in the activity log.

use crate::sql::{Tx, lock_key};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::TokenId;
use crate::stored;

/// The longest token label.
pub const MAX_LABEL_LEN: usize = 80;
/// The most live tokens one user may hold.
pub const MAX_TOKENS_PER_USER: i64 = 20;

/// A token as listed: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: TokenId,
    pub label: String,
    pub prefix: String,
    pub roles: Vec<Role>,
    /// Whether it acts for its user's approval groups too (a console session always does).
    pub groups: bool,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

pub(crate) type TokenRow =
    (String, String, String, String, i64, DateTime<Utc>, Option<DateTime<Utc>>, Option<DateTime<Utc>>);
pub(crate) const COLUMNS: &str = "id, label, prefix, roles, groups, created_at, last_used_at, revoked_at";

/// The user's tokens, newest first, revoked ones included.
pub(crate) async fn list(store: &crate::store::Store, user: &ConsoleUser) -> Result<Vec<TokenInfo>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM user_tokens WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC, id"
    );
    let rows: Vec<TokenRow> = store.all(&sql, &[&user.tenant_id, &user.id]).await?;
    Ok(rows.into_iter().map(from_row).collect())
}

pub(crate) fn from_row(
    (id, label, prefix, roles, groups, created_at, last_used_at, revoked_at): TokenRow,
) -> TokenInfo {
    TokenInfo {
        id: TokenId::from_db(id),
        label,
        prefix,
        roles: roles.split(',').filter_map(Role::parse).collect(),
        groups: groups != 0,
        created_at,
        last_used_at,
        revoked_at,
    }
}

fn roles_to_db(roles: &[Role]) -> String {
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
}

/// Stores a new token for `u` (its secret's hash) and records it; `too_many_tokens` when the user holds the most live ones already.
pub(crate) fn insert_token(c: &dyn Tx, u: &ConsoleUser, i: &TokenInfo, hash: &str) -> Result<Entry> {
    // One user's token changes take turns on PostgreSQL, so two at once cannot both
    // pass the limit.
    lock_key(c, &["user tokens", u.id.as_str()])?;
    let live: i64 = c
        .row("SELECT COUNT(*) FROM user_tokens WHERE user_id = ? AND revoked_at IS NULL", &[&u.id.as_str()])?
        .map_or(Ok(0), |r| r.get(0))?;
    if live >= MAX_TOKENS_PER_USER {
        return Err(Error::Conflict {
            code: "too_many_tokens",
            message: format!(
                "a user holds at most {MAX_TOKENS_PER_USER} live tokens; revoke one you no longer use"
            ),
        });
    }
    c.exec(
        "INSERT INTO user_tokens (id, tenant_id, user_id, label, prefix, secret_hash, roles, groups, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            &i.id.as_str(),
            &u.tenant_id.as_str(),
            &u.id.as_str(),
            &i.label,
            &i.prefix,
            &hash,
            &roles_to_db(&i.roles),
            &i64::from(i.groups),
            &stored::ts(i.created_at),
        ],
    )?;
    activity::append(
        c,
        NewEntry::new(&u.tenant_id, u.username.as_str(), Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::TokenCreated)
            .detail(json!({ "token_id": i.id, "label": i.label, "roles": roles_to_db(&i.roles), "groups": i.groups })),
    )
}

/// Revokes one of `u`'s live tokens and records it; `not_found` when it has no such live token.
pub(crate) fn revoke_token(c: &dyn Tx, u: &ConsoleUser, t: &TokenId) -> Result<Entry> {
    let changed = c.exec(
        "UPDATE user_tokens SET revoked_at = ? WHERE id = ? AND user_id = ? AND tenant_id = ? AND revoked_at IS NULL",
        &[&stored::ts(Utc::now()), &t.as_str(), &u.id.as_str(), &u.tenant_id.as_str()],
    )?;
    if changed == 0 {
        return Err(Error::NotFound { what: "live token" });
    }
    activity::append(
        c,
        NewEntry::new(&u.tenant_id, u.username.as_str(), Kind::Console)
            .via(crate::audit::activity::Transport::Console)
            .verdict(Verdict::TokenRevoked)
            .detail(json!({ "token_id": t })),
    )
}

/// Revokes every live token of `user` (their directory deactivated them); how many.
pub(crate) fn revoke_all_in(c: &dyn Tx, user: &crate::ids::UserId) -> Result<u64> {
    Ok(c.exec(
        "UPDATE user_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
        &[&stored::ts(Utc::now()), &user.as_str()],
    )?)
}
