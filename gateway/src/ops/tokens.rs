//! Personal API tokens as operations: issuing one with a subset of the user's roles (its secret
//! shown once), listing them, revoking one.

use chrono::Utc;

use crate::Gateway;
use crate::domain::tokens::{MAX_LABEL_LEN, TokenInfo, insert_token, revoke_token};
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::TokenId;
use crate::secrets;

impl Gateway {
    /// Creates a token for `user` with `roles`, each of which the user must hold, acting for
    /// the user's approval groups too when `groups`. Returns the token's listing and its
    /// secret, which is shown nowhere else.
    pub async fn issue_user_token(
        &self,
        user: &ConsoleUser,
        label: &str,
        (roles, groups): (&[Role], bool),
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
            groups,
            created_at: Utc::now(),
            last_used_at: None,
            revoked_at: None,
        };
        let (u, i, hash) = (user.clone(), info.clone(), minted.hash.clone());
        self.write(move |c| insert_token(c, &u, &i, &hash)).await?;
        Ok((info, minted.token))
    }

    /// The user's tokens, newest first, revoked ones included.
    pub async fn user_tokens(&self, user: &ConsoleUser) -> Result<Vec<TokenInfo>> {
        crate::domain::tokens::list(&self.store, user).await
    }

    /// Revokes one of the user's own tokens at once.
    pub async fn revoke_user_token(&self, user: &ConsoleUser, id: &TokenId) -> Result<()> {
        let (u, t) = (user.clone(), id.clone());
        self.write(move |c| revoke_token(c, &u, &t)).await?;
        self.credentials_changed();
        Ok(())
    }
}
