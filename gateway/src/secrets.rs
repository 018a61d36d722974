//! Secrets: API key tokens and console passwords.
//!
//! Keys look like `nv_<prefix>_<secret>`. The prefix finds the row; only a SHA-256 of the
//! whole token is stored, which suffices because the secret is 160 random bits (a slow hash
//! is for low-entropy passwords). Passwords are hashed with argon2id. Comparison is constant
//! time. No function here logs or returns a stored secret.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::Rng;
use rand::distributions::Alphanumeric;
use sha2::{Digest, Sha256};

const PREFIX_LEN: usize = 8;
const SECRET_LEN: usize = 32;

/// A freshly minted key token. The token is shown to its owner once and never stored.
#[derive(Debug, Clone)]
pub struct MintedKey {
    pub prefix: String,
    pub token: String,
    pub hash: String,
}

/// Mints `nv_<prefix>_<secret>`.
pub fn mint_key() -> MintedKey {
    let mut rng = rand::thread_rng();
    let prefix: String = (0..PREFIX_LEN)
        .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.gen_range(0..36)]))
        .collect();
    let secret: String = (&mut rng).sample_iter(&Alphanumeric).take(SECRET_LEN).map(char::from).collect();
    let token = format!("nv_{prefix}_{secret}");
    MintedKey { hash: hash_token(&token), prefix, token }
}

/// Accepts a caller-chosen token (for `NAIVE_COMPANY_KEY`) if it has the key format.
pub fn key_from_token(token: &str) -> Option<MintedKey> {
    let prefix = split_token(token)?;
    Some(MintedKey { prefix: prefix.to_string(), token: token.to_string(), hash: hash_token(token) })
}

/// How a console user's personal API token starts: `nvu_<prefix>_<secret>`, told apart from
/// agent and company keys (`nv_…`) at a glance.
pub const USER_TOKEN_PREFIX: &str = "nvu_";

/// Mints a personal API token, `nvu_<prefix>_<secret>`.
pub fn mint_user_token() -> MintedKey {
    let k = mint_key();
    let token = format!("nvu_{}", &k.token["nv_".len()..]);
    MintedKey { hash: hash_token(&token), prefix: k.prefix, token }
}

/// The prefix of a well-formed personal API token, or `None`.
pub fn split_user_token(token: &str) -> Option<&str> {
    split_after(token, USER_TOKEN_PREFIX)
}

/// The prefix of a well-formed key token, or `None`.
pub fn split_token(token: &str) -> Option<&str> {
    split_after(token, "nv_")
}

fn split_after<'a>(token: &'a str, kind: &str) -> Option<&'a str> {
    let rest = token.strip_prefix(kind)?;
    let (prefix, secret) = rest.split_once('_')?;
    let ok = prefix.len() == PREFIX_LEN
        && prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && secret.len() >= 16
        && secret.len() <= 128
        && secret.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then_some(prefix)
}

pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time comparison of two hex digests.
pub fn digest_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashing with default params")
        .to_string()
}

pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// A random password for the demo admin, printed once.
pub fn random_password() -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(20).map(char::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_have_the_format_and_verify() {
        let k = mint_key();
        assert!(k.token.starts_with("nv_"));
        assert_eq!(split_token(&k.token), Some(k.prefix.as_str()));
        assert!(digest_eq(&hash_token(&k.token), &k.hash));
        assert!(!digest_eq(&hash_token(&format!("{}x", k.token)), &k.hash));
        assert!(split_token("nv_short_x").is_none());
        let u = mint_user_token();
        assert!(u.token.starts_with("nvu_") && split_user_token(&u.token) == Some(u.prefix.as_str()));
        assert!(split_token(&u.token).is_none(), "a personal token is never taken for a key");
        assert!(key_from_token("not-a-key").is_none());
    }

    #[test]
    fn passwords_are_argon2id() {
        let h = hash_password("correct horse");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("x", "not a hash"));
    }
}
