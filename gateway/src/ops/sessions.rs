//! Console sessions as operations: signing in, the user a session belongs to, signing out.

use chrono::Utc;

use crate::Gateway;
use crate::domain::sessions::{end, start, user_of};
use crate::domain::users::ConsoleUser;
use crate::error::Result;
use crate::secrets;

impl Gateway {
    /// Starts a session for `user`; returns the token for the cookie, shown nowhere else.
    pub async fn start_session(&self, user: &ConsoleUser) -> Result<String> {
        let token = format!("ns_{}", secrets::random_password());
        let hash = secrets::hash_token(&token);
        let (u, t, name) = (user.id.clone(), user.tenant_id.clone(), user.username.clone());
        self.write(move |c| start(c, &hash, (&u, &t, &name), None)).await?;
        Ok(token)
    }

    /// The user a session token belongs to, if it is live.
    pub async fn session_user(&self, token: &str) -> Result<Option<ConsoleUser>> {
        let live = user_of(&self.store, &secrets::hash_token(token), Utc::now()).await?;
        let Some((tenant, user)) = live else { return Ok(None) };
        match self.user(&tenant, &user).await {
            Ok(u) => Ok(Some(u)),
            Err(crate::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Ends a session (sign-out). Ending an unknown or ended one is not an error.
    pub async fn end_session(&self, token: &str) -> Result<()> {
        let hash = secrets::hash_token(token);
        self.write(move |c| end(c, &hash)).await?;
        self.credentials_changed();
        Ok(())
    }
}
