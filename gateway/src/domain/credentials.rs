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
//! [`Gateway::credential_changes`] ticks whenever a credential may have stopped being valid
//! (a key or token revoked or rotated, a profile revoked, a session ended, roles changed), so
//! long-lived streams can ask [`Gateway::still_valid`] and close.

use chrono::{DateTime, Utc};

use crate::domain::keys::KeyTable;
use crate::domain::principal::Subject;
use crate::domain::users::ConsoleUser;
use crate::ids::{KeyId, TenantId, TokenId};

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

/// A personal token's row: id, tenant, user, hash, roles, last used.
pub(crate) type TokenRow = (String, String, String, String, String, Option<DateTime<Utc>>);
pub(crate) type KeyRow =
    (String, String, Option<String>, String, Option<DateTime<Utc>>, Option<DateTime<Utc>>);
