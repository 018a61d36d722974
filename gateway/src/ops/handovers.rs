//! Secret handovers as operations: a secret shown once to whoever takes it, then gone.

use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::{Duration, Utc};

use crate::Gateway;
use crate::domain::handovers::{HANDOVER_TTL_SECS, NONCE_LEN, cipher, keep_sealed, take_sealed};
use crate::error::{Error, Result};
use crate::secrets;
use crate::stored;

impl Gateway {
    /// Keeps `secret` for the page of this session that shows `item_id`.
    pub async fn hand_over_secret(&self, session_token: &str, item_id: &str, secret: &str) -> Result<()> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let payload = Payload { msg: secret.as_bytes(), aad: item_id.as_bytes() };
        let mut sealed = nonce.to_vec();
        sealed.extend(
            cipher(session_token).encrypt(&nonce, payload).map_err(|_| {
                Error::internal("seal_failed", "could not seal the new secret; issue it again")
            })?,
        );
        let (session, item) = (secrets::hash_token(session_token), item_id.to_string());
        self.write(move |c| keep_sealed(c, &session, &item, &sealed, Utc::now())).await
    }

    /// Takes the secret this session was handed for `item_id`, once: `None` when there is
    /// none (taken already, expired, or another session's).
    pub async fn take_secret(&self, session_token: &str, item_id: &str) -> Result<Option<String>> {
        let (session, item) = (secrets::hash_token(session_token), item_id.to_string());
        let row = self.write(move |c| take_sealed(c, &session, &item)).await?;
        let Some((sealed, at)) = row else { return Ok(None) };
        if stored::parse_ts(&at)? + Duration::seconds(HANDOVER_TTL_SECS) <= Utc::now()
            || sealed.len() < NONCE_LEN
        {
            return Ok(None);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let payload = Payload { msg: body, aad: item_id.as_bytes() };
        let opened = cipher(session_token).decrypt(XNonce::from_slice(nonce), payload).ok();
        Ok(opened.and_then(|s| String::from_utf8(s).ok()))
    }
}
