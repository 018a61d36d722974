//! Personal API tokens: how a console user decides over HTTP, as themselves.
//!
//! A user creates their own tokens (on their account page), each with a label and a subset
//! of their roles; the secret (`nvu_<prefix>_<secret>`) is returned once and only its hash is
//! kept. A token acts with the roles it was given that its user still holds, so taking a role
//! from the user takes it from every token at once. A revoked token never authenticates, and
//! its open streams close. Every decision made with a token names it in the trail. Creating
//! and revoking are recorded in the activity log.

use crate::sql::lock_key;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry};
use crate::db;
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::TokenId;
use crate::secrets;

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
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

type TokenRow = (String, String, String, String, DateTime<Utc>, Option<DateTime<Utc>>, Option<DateTime<Utc>>);
const COLUMNS: &str = "id, label, prefix, roles, created_at, last_used_at, revoked_at";

fn from_row((id, label, prefix, roles, created_at, last_used_at, revoked_at): TokenRow) -> TokenInfo {
    TokenInfo {
        id: TokenId::from_db(id),
        label,
        prefix,
        roles: roles.split(',').filter_map(Role::parse).collect(),
        created_at,
        last_used_at,
        revoked_at,
    }
}

fn roles_to_db(roles: &[Role]) -> String {
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
}

impl Gateway {
    /// Creates a token for `user` with `roles`, each of which the user must hold. Returns
    /// the token's listing and its secret, which is shown nowhere else.
    pub async fn issue_user_token(
        &self,
        user: &ConsoleUser,
        label: &str,
        roles: &[Role],
    ) -> Result<(TokenInfo, String)> {
        let label = crate::ids::display_name(label, MAX_LABEL_LEN, "invalid_token_label", "a token's label")?;
        if roles.is_empty() {
            return Err(Error::invalid("no_roles", "give the token at least one of your roles"));
        }
        if let Some(r) = roles.iter().find(|r| !user.has(**r)) {
            return Err(Error::Forbidden {
                code: "role_not_held",
                message: format!(
                    "{} does not hold the {r} role, so no token of theirs can have it",
                    user.username
                ),
            });
        }
        let mut roles = roles.to_vec();
        roles.sort();
        roles.dedup();
        let minted = secrets::mint_user_token();
        let info = TokenInfo {
            id: TokenId::generate(),
            label,
            prefix: minted.prefix.clone(),
            roles,
            created_at: Utc::now(),
            last_used_at: None,
            revoked_at: None,
        };
        let (u, i, hash) = (user.clone(), info.clone(), minted.hash.clone());
        self
            .write(move |c| {
                // One user's token changes take turns on PostgreSQL, so two at once cannot both
                // pass the limit.
                lock_key(c, &["user tokens", u.id.as_str()])?;
                let live: i64 = c
                    .row("SELECT COUNT(*) FROM user_tokens WHERE user_id = ? AND revoked_at IS NULL", &[&u.id.as_str()])?
                    .map_or(Ok(0), |r| r.get(0))?;
                if live >= MAX_TOKENS_PER_USER {
                    return Err(Error::Conflict {
                        code: "too_many_tokens",
                        message: format!("a user holds at most {MAX_TOKENS_PER_USER} live tokens; revoke one you no longer use"),
                    });
                }
                c.exec(
                    "INSERT INTO user_tokens (id, tenant_id, user_id, label, prefix, secret_hash, roles, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    &[
                        &i.id.as_str(),
                        &u.tenant_id.as_str(),
                        &u.id.as_str(),
                        &i.label,
                        &i.prefix,
                        &hash,
                        &roles_to_db(&i.roles),
                        &db::ts(i.created_at),
                    ],
                )?;
                activity::append(
                    c,
                    NewEntry::new(&u.tenant_id, u.username.as_str(), Kind::Console)
                        .via(crate::audit::activity::Transport::Console)
                        .verdict("token_created")
                        .detail(json!({ "token_id": i.id, "label": i.label, "roles": roles_to_db(&i.roles) })),
                )
            })
            .await?;
        Ok((info, minted.token))
    }

    /// The user's tokens, newest first, revoked ones included.
    pub async fn user_tokens(&self, user: &ConsoleUser) -> Result<Vec<TokenInfo>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM user_tokens WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC, id"
        );
        let rows: Vec<TokenRow> = self.store.all(&sql, &[&user.tenant_id, &user.id]).await?;
        Ok(rows.into_iter().map(from_row).collect())
    }

    /// Revokes one of the user's own tokens at once.
    pub async fn revoke_user_token(&self, user: &ConsoleUser, id: &TokenId) -> Result<()> {
        let (u, t) = (user.clone(), id.clone());
        self
            .write(move |c| {
                let changed = c.exec(
                    "UPDATE user_tokens SET revoked_at = ? WHERE id = ? AND user_id = ? AND tenant_id = ? AND revoked_at IS NULL",
                    &[&db::ts(Utc::now()), &t.as_str(), &u.id.as_str(), &u.tenant_id.as_str()],
                )?;
                if changed == 0 {
                    return Err(Error::NotFound { what: "live token" });
                }
                activity::append(
                    c,
                    NewEntry::new(&u.tenant_id, u.username.as_str(), Kind::Console)
                        .via(crate::audit::activity::Transport::Console)
                        .verdict("token_revoked")
                        .detail(json!({ "token_id": t })),
                )
            })
            .await?;
        self.credentials_changed();
        Ok(())
    }
}
