//! Who is calling: every credential the gateway accepts, resolved in one place.
//!
//! - An agent's scoped key (`nv_…`, in `agent_keys`) is an [`Credential::Agent`].
//! - A company key (`nv_…`, in `company_keys`) is a [`Credential::Company`]; it administers
//!   the tenant and never decides in a human's name.
//! - A console user's personal API token (`nvu_…`, in `user_tokens`) is a
//!   [`Credential::Person`]: the only way a human decides over HTTP besides the console.
//!
//! Valid keys are cached by the token's hash; invalidation always wins over a lookup in
//! flight ([`crate::cache`]). A revoked key, or a rotated one past its grace period, never
//! authenticates. `last_used_at` is written at most once a minute per credential, off the
//! caller's path. A personal token re-reads its user on every use, so a role taken away or a
//! user removed takes effect at once, and its roles are those it was given that the user
//! still holds.
//!
//! [`Gateway::credential_changes`](crate::Gateway::credential_changes) ticks whenever a credential may have stopped being valid
//! (a key or token revoked or rotated, a profile revoked, a session ended, roles changed), so
//! long-lived streams can ask [`Gateway::still_valid`](crate::Gateway::still_valid) and close.

use chrono::{DateTime, Utc};

use crate::domain::keys::KeyTable;
use crate::domain::principal::Subject;
use crate::domain::users::ConsoleUser;
use crate::error::Result;
use crate::ids::{KeyId, TenantId, TokenId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// `last_used_at` is refreshed at most this often, to keep writes off the hot path.
pub(crate) const LAST_USED_RESOLUTION_SECS: i64 = 60;

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    Agent(Subject),
    Company { tenant: TenantId, key: KeyId },
    Person(Person),
}

/// A console user acting through one of their personal API tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// The user, with `roles` narrowed to those the token was given and the user still has.
    pub user: ConsoleUser,
    pub token: TokenId,
    /// Whether the token acts for the user's approval groups.
    pub groups: bool,
}

impl Person {
    /// How the decision trail names this credential.
    pub fn credential_label(&self) -> String {
        format!("token {}", self.token)
    }
}

impl Credential {
    pub fn tenant(&self) -> &TenantId {
        match self {
            Credential::Agent(s) => &s.tenant,
            Credential::Company { tenant, .. } => tenant,
            Credential::Person(p) => &p.user.tenant_id,
        }
    }

    /// A stable name of this credential, for scoping what it stores (an Idempotency-Key).
    pub fn scope(&self) -> String {
        match self {
            Credential::Agent(s) => s.key.to_string(),
            Credential::Company { key, .. } => key.to_string(),
            Credential::Person(p) => p.token.to_string(),
        }
    }
}

/// A valid key as cached.
#[derive(Clone, Debug)]
pub(crate) struct CachedKey {
    pub(crate) credential: Credential,
    pub(crate) table: KeyTable,
    /// The key's id, for its `last_used_at`.
    pub(crate) id: String,
    pub(crate) expires_at: Option<DateTime<Utc>>,
    pub(crate) last_used_at: Option<DateTime<Utc>>,
}

/// A personal token's row: id, tenant, user, hash, roles, groups, last used.
pub(crate) type TokenRow = (String, String, String, String, String, i64, Option<DateTime<Utc>>);
/// A key's row: id, tenant, profile (none for a company key), hash, last used, expiry.
/// With an OAuth access token, its connection and the connection's client name.
pub(crate) type KeyRow = (
    String,
    String,
    Option<String>,
    String,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<String>,
);

/// The unrevoked key in `table` with `prefix`, if there is one.
pub(crate) async fn key_row(store: &Store, table: KeyTable, prefix: &str) -> Result<Option<KeyRow>> {
    let (owner, connection, client) = if table == KeyTable::Agent {
        let client = "(SELECT o.client_name FROM oauth_connections o WHERE o.id = connection_id)";
        ("profile_id", "connection_id", client)
    } else {
        ("NULL", "NULL", "NULL")
    };
    let sql = format!(
        "SELECT id, tenant_id, {owner}, secret_hash, last_used_at, expires_at, {connection}, {client} FROM {} \
         WHERE prefix = ? AND revoked_at IS NULL",
        table.name()
    );
    Ok(store.opt(&sql, &[&prefix]).await?)
}

/// The unrevoked personal token with `prefix`, if there is one.
pub(crate) async fn token_row(store: &Store, prefix: &str) -> Result<Option<TokenRow>> {
    let sql = "SELECT id, tenant_id, user_id, secret_hash, roles, groups, last_used_at FROM user_tokens \
               WHERE prefix = ? AND revoked_at IS NULL";
    Ok(store.opt(sql, &[&prefix]).await?)
}

/// Records that the credential `id` in `table` was used at `now`.
pub(crate) fn touch_in(c: &dyn Tx, table: &str, id: &str, now: DateTime<Utc>) -> Result<()> {
    c.exec(&format!("UPDATE {table} SET last_used_at = ? WHERE id = ?"), &[&stored::ts(now), &id])?;
    Ok(())
}

/// Whether the credential row `id` in `table` is unrevoked and unexpired at `now`.
pub(crate) async fn live(store: &Store, table: &str, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let sql = format!("SELECT expires_at FROM {table} WHERE id = ? AND revoked_at IS NULL");
    let row: Option<(Option<DateTime<Utc>>,)> = store.opt(&sql, &[&id]).await?;
    Ok(row.is_some_and(|(e,)| e.is_none_or(|e| e > now)))
}
