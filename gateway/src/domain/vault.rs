//! The vault: each tenant's provider credentials, encrypted at rest and write-only.
//!
//! Envelope encryption with XChaCha20-Poly1305. The master key lives outside the database (the
//! server reads it from `NAIVE_MASTER_KEY` or a key file); it wraps one random data key per
//! tenant, and a tenant's data key seals that tenant's secrets. Every ciphertext is bound by
//! its associated data to where it belongs (a data key to its tenant, a secret to its tenant
//! and name), so a row copied to another tenant or name does not open. A copy of the database
//! without the master key opens nothing.
//!
//! Guarantees:
//! - Secrets are write-only. What leaves this module is a secret's name, fingerprint, author,
//!   creation and last use ([`SecretInfo`]). The fingerprint is a keyed hash under the
//!   tenant's data key, so even a short secret cannot be guessed from it. Only a connector
//!   carrying out a call opens a secret ([`Gateway::open_secret`](crate::Gateway::open_secret), crate-private).
//! - The database remembers its master key's fingerprint: a gateway opened with another key
//!   refuses to start ([`Error::MasterKeyMismatch`]) before anything is sealed under it.
//! - [`Gateway::rotate_master_key`](crate::Gateway::rotate_master_key) re-wraps every data key in one transaction; secrets and
//!   connectors are untouched, so everything keeps working under the new key.
//! - A gateway opened without a master key has a locked vault: writing or opening a secret is
//!   refused with `vault_locked`, and nothing else changes.

use std::collections::HashMap;
use std::sync::RwLock;

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;

/// Bytes in a master or data key.
pub const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;
/// The longest secret value accepted, in characters: provider credentials are short.
pub const MAX_SECRET_CHARS: usize = 4096;
/// The longest secret name.
pub const MAX_NAME_LEN: usize = 64;
/// `last_used_at` is written at most this often per secret, off the call's path.
const LAST_USED_RESOLUTION_SECS: i64 = 60;

/// The key that wraps every tenant's data key. Never stored in the database; its
/// [`MasterKey::fingerprint`] is.
#[derive(Clone)]
pub struct MasterKey([u8; KEY_LEN]);

impl MasterKey {
    /// A new random key.
    pub fn generate() -> MasterKey {
        let mut k = [0u8; KEY_LEN];
        OsRng.fill_bytes(&mut k);
        MasterKey(k)
    }

    /// A key written as 64 hexadecimal characters (surrounding whitespace ignored).
    pub fn parse(text: &str) -> std::result::Result<MasterKey, String> {
        let bytes = hex::decode(text.trim()).map_err(|_| {
            "a master key is 64 hexadecimal characters (32 bytes), such as `openssl rand -hex 32` prints"
                .to_string()
        })?;
        let key: [u8; KEY_LEN] = bytes.try_into().map_err(|_| {
            "a master key is 64 hexadecimal characters (32 bytes), no more and no fewer".to_string()
        })?;
        Ok(MasterKey(key))
    }

    /// The key as [`MasterKey::parse`] reads it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Names the key without revealing it: `mk_` and 16 hex digits of a domain-separated hash.
    pub fn fingerprint(&self) -> String {
        let h =
            Sha256::new().chain_update(b"naive master key fingerprint\x1f").chain_update(self.0).finalize();
        format!("mk_{}", hex::encode(&h[..8]))
    }

    pub(crate) fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.0).into())
    }
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey({})", self.fingerprint())
    }
}

/// A tenant's data key, opened.
#[derive(Clone)]
pub(crate) struct DataKey([u8; KEY_LEN]);

impl DataKey {
    pub(crate) fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.0).into())
    }

    /// The fingerprint users see for `value`: a keyed hash, so it identifies a value to
    /// someone who holds it without revealing it to someone who does not.
    fn fingerprint(&self, value: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"naive secret fingerprint\x1f");
        mac.update(value.as_bytes());
        format!("fp_{}", hex::encode(&mac.finalize().into_bytes()[..6]))
    }
}

/// What anyone may know of a secret: everything but its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretInfo {
    pub name: String,
    /// A keyed hash of the value (`fp_…`): equal values have equal fingerprints within a
    /// tenant, and it reveals nothing else.
    pub fingerprint: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When a connector last used it (to the minute); never, if empty.
    pub last_used_at: Option<DateTime<Utc>>,
}

const INFO_COLUMNS: &str = "name, fingerprint, created_by, created_at, updated_at, last_used_at";

/// A row of [`INFO_COLUMNS`].
impl crate::sql::FromRow for SecretInfo {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<SecretInfo> {
        Ok(SecretInfo {
            name: r.get(0)?,
            fingerprint: r.get(1)?,
            created_by: r.get(2)?,
            created_at: r.get(3)?,
            updated_at: r.get(4)?,
            last_used_at: r.get(5)?,
        })
    }
}

/// What may be known of the tenant's secret `name`, if there is one.
pub(crate) async fn info(
    store: &crate::store::Store,
    tenant: &TenantId,
    name: &str,
) -> Result<Option<SecretInfo>> {
    let sql = format!("SELECT {INFO_COLUMNS} FROM vault_secrets WHERE tenant_id = ? AND name = ?");
    Ok(store.opt(&sql, &[tenant, &name]).await?)
}

/// The sealed value of the tenant's secret `name`, if there is one.
pub(crate) async fn sealed(
    store: &crate::store::Store,
    tenant: &TenantId,
    name: &str,
) -> Result<Option<Vec<u8>>> {
    let sql = "SELECT sealed FROM vault_secrets WHERE tenant_id = ? AND name = ?";
    let row: Option<(Vec<u8>,)> = store.opt(sql, &[tenant, &name]).await?;
    Ok(row.map(|(sealed,)| sealed))
}

/// The tenant's data key as wrapped under the master key.
pub(crate) async fn wrapped_data_key(store: &crate::store::Store, tenant: &TenantId) -> Result<Vec<u8>> {
    let (wrapped,): (Vec<u8>,) =
        store.one("SELECT wrapped FROM vault_keys WHERE tenant_id = ?", &[tenant]).await?;
    Ok(wrapped)
}

/// The tenant's secrets by name, without their values.
pub(crate) async fn infos(store: &crate::store::Store, tenant: &TenantId) -> Result<Vec<SecretInfo>> {
    let sql = format!("SELECT {INFO_COLUMNS} FROM vault_secrets WHERE tenant_id = ? ORDER BY name");
    Ok(store.all(&sql, &[tenant]).await?)
}

/// The vault's in-memory side: the master key, if any, and the data keys opened so far
/// (they never change; a master rotation only re-wraps them).
pub(crate) struct Vault {
    master: Option<MasterKey>,
    opened: RwLock<HashMap<TenantId, DataKey>>,
    /// When each secret's last use was last written.
    touched: RwLock<HashMap<(TenantId, String), DateTime<Utc>>>,
}

impl Vault {
    pub(crate) fn new(master: Option<MasterKey>) -> Vault {
        Vault { master, opened: RwLock::default(), touched: RwLock::default() }
    }

    pub(crate) fn master(&self) -> Result<&MasterKey> {
        self.master.as_ref().ok_or_else(|| Error::Unavailable {
            code: "vault_locked",
            message: "the vault is locked: this gateway was started without a master key (NAIVE_MASTER_KEY or a key file)".into(),
            retry_after_secs: 60,
        })
    }

    pub(crate) fn cached(&self, tenant: &TenantId) -> Option<DataKey> {
        self.opened.read().expect("vault lock").get(tenant).cloned()
    }

    pub(crate) fn remember(&self, tenant: &TenantId, key: &DataKey) {
        self.opened.write().expect("vault lock").insert(tenant.clone(), key.clone());
    }

    /// Whether a use of `name` at `now` should be written (at most once a minute each).
    pub(crate) fn should_touch(&self, tenant: &TenantId, name: &str, now: DateTime<Utc>) -> bool {
        let mut touched = self.touched.write().expect("vault lock");
        let k = (tenant.clone(), name.to_string());
        let due = touched.get(&k).is_none_or(|l| (now - *l).num_seconds() >= LAST_USED_RESOLUTION_SECS);
        if due {
            touched.insert(k, now);
        }
        due
    }
}

fn seal(cipher: &XChaCha20Poly1305, plain: &[u8], aad: &[u8]) -> Result<Vec<u8>> {
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let mut sealed = nonce.to_vec();
    sealed.extend(
        cipher
            .encrypt(&nonce, Payload { msg: plain, aad })
            .map_err(|_| Error::internal("seal_failed", "could not encrypt; send the request again"))?,
    );
    Ok(sealed)
}

pub(crate) fn open(cipher: &XChaCha20Poly1305, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: body, aad }).ok()
}

fn data_key_aad(tenant: &TenantId) -> Vec<u8> {
    [b"naive data key\x1f".as_slice(), tenant.as_str().as_bytes()].concat()
}

pub(crate) fn secret_aad(tenant: &TenantId, name: &str) -> Vec<u8> {
    [b"naive secret\x1f".as_slice(), tenant.as_str().as_bytes(), b"\x1f", name.as_bytes()].concat()
}

pub(crate) fn unwrap_data_key(master: &MasterKey, tenant: &TenantId, wrapped: &[u8]) -> Result<DataKey> {
    let plain = open(&master.cipher(), wrapped, &data_key_aad(tenant)).ok_or_else(|| {
        Error::internal("vault_corrupt", "a tenant's data key does not open under the master key")
    })?;
    let key: [u8; KEY_LEN] = plain
        .try_into()
        .map_err(|_| Error::internal("vault_corrupt", "a tenant's data key has the wrong length"))?;
    Ok(DataKey(key))
}

/// Checks `name`: 1 to [`MAX_NAME_LEN`] of `a-z 0-9 . _ -`, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "invalid_secret_name",
            format!(
                "a secret's name is 1 to {MAX_NAME_LEN} of a-z, 0-9, '.', '_' and '-', starting with a letter or digit, such as `card-processor`"
            ),
        ))
    }
}

pub(crate) fn check_value(value: &str) -> Result<()> {
    if value.is_empty() || value.chars().count() > MAX_SECRET_CHARS {
        return Err(Error::invalid(
            "invalid_secret_value",
            format!("a secret's value is 1 to {MAX_SECRET_CHARS} characters of text"),
        ));
    }
    Ok(())
}

/// Records the database's master key on first use, and refuses any other key after that.
pub(crate) fn check_master(c: &dyn Tx, master: &MasterKey) -> Result<()> {
    let fp = master.fingerprint();
    c.exec(
        "INSERT INTO vault_master (id, fingerprint, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
        &[&fp, &Utc::now()],
    )?;
    let stored: String = c
        .row("SELECT fingerprint FROM vault_master WHERE id = 1", &[])?
        .ok_or_else(|| Error::internal("vault_corrupt", "the vault's master record is missing"))?
        .get(0)?;
    if stored != fp {
        return Err(Error::MasterKeyMismatch { given: fp, expected: stored });
    }
    Ok(())
}

/// The tenant's data key, made and wrapped under `master` if it has none yet. Refused when
/// the database's master key has been rotated away from this instance's.
fn data_key_in(c: &dyn Tx, master: &MasterKey, tenant: &TenantId) -> Result<DataKey> {
    let row = c.row("SELECT wrapped FROM vault_keys WHERE tenant_id = ?", &[tenant])?;
    if let Some(r) = row {
        return unwrap_data_key(master, tenant, &r.get::<Vec<u8>>(0)?);
    }
    check_master(c, master).map_err(|e| match e {
        Error::MasterKeyMismatch { .. } => rotated_elsewhere(),
        other => other,
    })?;
    let mut key = [0u8; KEY_LEN];
    OsRng.fill_bytes(&mut key);
    let wrapped = seal(&master.cipher(), &key, &data_key_aad(tenant))?;
    c.exec(
        "INSERT INTO vault_keys (tenant_id, wrapped, created_at) VALUES (?, ?, ?)",
        &[tenant, &wrapped, &Utc::now()],
    )?;
    Ok(DataKey(key))
}

fn rotated_elsewhere() -> Error {
    Error::unavailable(
        "vault_master_rotated",
        "the vault's master key was rotated; restart this instance with the new key",
        60,
    )
}

/// Writes `value` under `name`, sealed with the tenant's data key; whether it is new.
pub(crate) fn put_in(
    c: &dyn Tx,
    master: &MasterKey,
    tenant: &TenantId,
    name: &str,
    value: &str,
    actor: &str,
    via: Transport,
) -> Result<(bool, DataKey)> {
    let key = data_key_in(c, master, tenant)?;
    let sealed = seal(&key.cipher(), value.as_bytes(), &secret_aad(tenant, name))?;
    let fp = key.fingerprint(value);
    let now = Utc::now();
    let replaced = c.exec(
        "UPDATE vault_secrets SET sealed = ?, fingerprint = ?, updated_at = ? WHERE tenant_id = ? AND name = ?",
        &[&sealed, &fp, &now, tenant, &name],
    )? == 1;
    if !replaced {
        c.exec(
            "INSERT INTO vault_secrets (tenant_id, name, sealed, fingerprint, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            &[tenant, &name, &sealed, &fp, &actor, &now, &now],
        )?;
    }
    let verdict = if replaced { Verdict::Replaced } else { Verdict::Created };
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Vault)
            .via(via)
            .verdict(verdict)
            .detail(json!({ "secret": name, "fingerprint": fp })),
    )?;
    Ok((!replaced, key))
}

/// Records when a secret was last used.
pub(crate) fn touch_in(c: &dyn Tx, tenant: &TenantId, name: &str, now: DateTime<Utc>) -> Result<()> {
    c.exec(
        "UPDATE vault_secrets SET last_used_at = ? WHERE tenant_id = ? AND name = ?",
        &[&now, &tenant, &name],
    )?;
    Ok(())
}

pub(crate) fn delete_in(
    c: &dyn Tx,
    tenant: &TenantId,
    name: &str,
    actor: &str,
    via: Transport,
) -> Result<()> {
    let users: Vec<String> = c
        .rows(
            "SELECT target FROM connectors WHERE tenant_id = ?1 AND secret_name = ?2 \
             UNION ALL SELECT 'app ' || toolkit FROM connected_apps WHERE tenant_id = ?1 AND secret_name = ?2 \
             UNION ALL SELECT 'team runtime' FROM runtimes WHERE tenant_id = ?1 AND secret_name = ?2 \
             UNION ALL SELECT 'webhook ' || id FROM webhook_endpoints WHERE tenant_id = ?1 AND secret_name = ?2 \
             UNION ALL SELECT 'log stream ' || id FROM log_streams WHERE tenant_id = ?1 AND secret_name = ?2 \
             UNION ALL SELECT 'Slack app' FROM slack_apps WHERE tenant_id = ?1 AND ?2 IN ('slack-bot-token', 'slack-signing-secret') ORDER BY 1",
            &[tenant, &name],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect::<::store::Result<_>>()?;
    if !users.is_empty() {
        return Err(Error::Conflict {
            code: "secret_in_use",
            message: format!(
                "the secret `{name}` is used by the connector(s) {}; point them at another secret first",
                users.join(", ")
            ),
        });
    }
    if c.exec("DELETE FROM vault_secrets WHERE tenant_id = ? AND name = ?", &[tenant, &name])? == 0 {
        return Err(Error::NotFound { what: "secret" });
    }
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Vault)
            .via(via)
            .verdict(Verdict::Deleted)
            .detail(json!({ "secret": name })),
    )?;
    Ok(())
}

pub(crate) fn rotate_in(c: &dyn Tx, old: &MasterKey, new: &MasterKey) -> Result<usize> {
    let locked = crate::sql::locked!(c, "SELECT fingerprint FROM vault_master WHERE id = 1");
    let stored: Option<String> = c.row(locked, &[])?.map(|r| r.get(0)).transpose()?;
    if stored.as_deref().is_some_and(|s| s != old.fingerprint()) {
        return Err(Error::MasterKeyMismatch {
            given: old.fingerprint(),
            expected: stored.unwrap_or_default(),
        });
    }
    let rows = c.rows("SELECT tenant_id, wrapped FROM vault_keys ORDER BY tenant_id", &[])?;
    for r in &rows {
        let tenant = TenantId::from_db(r.get::<String>(0)?);
        let key = unwrap_data_key(old, &tenant, &r.get::<Vec<u8>>(1)?)?;
        let wrapped = seal(&new.cipher(), &key.0, &data_key_aad(&tenant))?;
        c.exec("UPDATE vault_keys SET wrapped = ? WHERE tenant_id = ?", &[&wrapped, &tenant])?;
    }
    c.exec(
        "INSERT INTO vault_master (id, fingerprint, created_at) VALUES (1, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint, created_at = excluded.created_at",
        &[&new.fingerprint(), &Utc::now()],
    )?;
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_key_reads_back_and_names_itself_without_revealing_itself() {
        let k = MasterKey::generate();
        let again = MasterKey::parse(&format!("  {}\n", k.to_hex())).unwrap();
        assert_eq!(again.fingerprint(), k.fingerprint());
        assert!(!k.fingerprint().contains(&k.to_hex()[..8]));
        assert!(format!("{k:?}").starts_with("MasterKey(mk_"));
        assert!(!format!("{k:?}").contains(&k.to_hex()));
        assert!(MasterKey::parse("abcd").is_err());
        assert!(MasterKey::parse(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn a_sealed_value_opens_only_where_it_belongs() {
        let k = MasterKey::generate();
        let (a, b) = (TenantId::from_db("ten_a".into()), TenantId::from_db("ten_b".into()));
        let sealed = seal(&k.cipher(), b"s3cret", &secret_aad(&a, "mail")).unwrap();
        assert_eq!(open(&k.cipher(), &sealed, &secret_aad(&a, "mail")).unwrap(), b"s3cret");
        assert!(open(&k.cipher(), &sealed, &secret_aad(&b, "mail")).is_none(), "another tenant");
        assert!(open(&k.cipher(), &sealed, &secret_aad(&a, "cards")).is_none(), "another name");
        assert!(
            open(&MasterKey::generate().cipher(), &sealed, &secret_aad(&a, "mail")).is_none(),
            "another key"
        );
        assert!(!sealed.windows(6).any(|w| w == b"s3cret"), "the value is not in the ciphertext");
    }

    #[test]
    fn fingerprints_are_keyed() {
        let (k1, k2) = (DataKey([1; KEY_LEN]), DataKey([2; KEY_LEN]));
        assert_eq!(k1.fingerprint("pw"), k1.fingerprint("pw"));
        assert_ne!(k1.fingerprint("pw"), k1.fingerprint("pw2"));
        assert_ne!(k1.fingerprint("pw"), k2.fingerprint("pw"), "another tenant's fingerprint differs");
    }

    #[test]
    fn names_are_checked() {
        for ok in ["card-processor", "mail.relay_2", "a", "0x"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "Card", "a b", "a/b", &"x".repeat(MAX_NAME_LEN + 1)] {
            assert_eq!(check_name(bad).unwrap_err().code(), "invalid_secret_name", "{bad:?}");
        }
    }
}
