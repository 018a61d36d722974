//! One-time handover of a new secret (a key, a personal token) from the request that made it
//! to the console page that shows it, which may reach another instance.
//!
//! A form that works without JavaScript cannot carry the secret in a response the browser
//! keeps, so the secret waits for the redirected page. It waits in the database, sealed with
//! XChaCha20-Poly1305 under a key derived from the issuing browser's session token; the
//! database holds only the token's SHA-256, so a copy of it opens nothing. The row is bound
//! to the item's id (the AEAD's associated data) and deleted by the first page that takes
//! it; an unclaimed one is deleted after [`HANDOVER_TTL_SECS`].

use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::KeyInit;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::sql::Tx;
use crate::stored;

/// How long an unclaimed secret waits.
pub const HANDOVER_TTL_SECS: i64 = 300;
pub(crate) const NONCE_LEN: usize = 24;

pub(crate) fn cipher(session_token: &str) -> XChaCha20Poly1305 {
    let key = Sha256::new().chain_update(b"naive secret handover\x1f").chain_update(session_token).finalize();
    XChaCha20Poly1305::new(&key)
}

pub(crate) fn keep_sealed(
    tx: &dyn Tx,
    session: &str,
    item: &str,
    sealed: &[u8],
    now: DateTime<Utc>,
) -> Result<()> {
    tx.exec(
        "INSERT INTO secret_handovers (session_hash, item_id, sealed, created_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (session_hash, item_id) DO UPDATE SET sealed = excluded.sealed, created_at = excluded.created_at",
        &[&session, &item, &sealed, &stored::ts(now)],
    )?;
    Ok(())
}

/// The sealed secret and when it was kept, deleting it.
pub(crate) fn take_sealed(tx: &dyn Tx, session: &str, item: &str) -> Result<Option<(Vec<u8>, String)>> {
    let row = tx.row(
        "DELETE FROM secret_handovers WHERE session_hash = ? AND item_id = ? RETURNING sealed, created_at",
        &[&session, &item],
    )?;
    row.map(|r| Ok((r.get(0)?, r.get(1)?))).transpose()
}

/// Deletes unclaimed secrets past their time (the sweeper calls it).
pub(crate) fn forget_unclaimed(tx: &dyn Tx, now: DateTime<Utc>) -> Result<()> {
    let cutoff = now - Duration::seconds(HANDOVER_TTL_SECS);
    tx.exec("DELETE FROM secret_handovers WHERE created_at <= ?", &[&stored::ts(cutoff)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestDb;

    #[tokio::test]
    async fn a_sealed_secret_is_taken_once_on_both_engines() {
        for db in TestDb::both().await {
            let t0 = Utc::now();
            db.run(move |tx| keep_sealed(tx, "s1", "key_a", b"first", t0)).await.unwrap();
            db.run(move |tx| keep_sealed(tx, "s1", "key_a", b"second", t0)).await.unwrap();
            db.run(move |tx| keep_sealed(tx, "s1", "key_b", b"other", t0)).await.unwrap();
            let taken = db.run(|tx| take_sealed(tx, "s1", "key_a")).await.unwrap();
            assert_eq!(
                taken,
                Some((b"second".to_vec(), stored::ts(t0))),
                "{}: the newest is kept",
                db.name()
            );
            assert_eq!(
                db.run(|tx| take_sealed(tx, "s1", "key_a")).await.unwrap(),
                None,
                "{}: once",
                db.name()
            );
            assert_eq!(
                db.run(|tx| take_sealed(tx, "s2", "key_b")).await.unwrap(),
                None,
                "{}: not another session's",
                db.name()
            );
            let later = t0 + Duration::seconds(HANDOVER_TTL_SECS);
            db.run(move |tx| forget_unclaimed(tx, later)).await.unwrap();
            assert_eq!(
                db.run(|tx| take_sealed(tx, "s1", "key_b")).await.unwrap(),
                None,
                "{}: unclaimed ones go",
                db.name()
            );
        }
    }
}
