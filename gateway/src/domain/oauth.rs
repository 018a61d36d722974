//! OAuth 2.1 for hosted MCP clients (docs/mcp.md#connecting-with-oauth): the connections a
//! person made by consenting, the authorization codes and refresh tokens they were given, and
//! the rules each request of the flow is checked by.
//!
//! Guarantees:
//! - A connection is one client acting as one agent profile. Its access tokens are that
//!   profile's scoped keys ([`crate::domain::keys::insert_access_key`]), short-lived and
//!   marked with the connection, so they govern exactly as the profile's other keys do.
//! - A code is taken once: its row is marked used by the exchange that reads it, and a second
//!   exchange revokes the connection it made. It is good for [`CODE_SECS`].
//! - Refresh tokens rotate: each is taken once, and presenting one already taken revokes its
//!   whole family (the connection, with every token it holds).
//! - PKCE is S256 only; a redirect URI matches exactly, except that a loopback `http` URI
//!   matches on any port (RFC 8252 §7.3); a resource indicator must name this server's `/mcp`.
//! - Only hashes of codes and refresh tokens are stored.

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::error::Result;
use crate::ids::{ConnectionId, ProfileId, TenantId, UserId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// The one scope: act at `/mcp` as the connection's profile.
pub const SCOPE: &str = "mcp";
/// How long an authorization code may wait for its exchange.
pub const CODE_SECS: i64 = 60;
/// How long an access token works (the spec's "short-lived": at most an hour).
pub const ACCESS_SECS: i64 = 3600;
/// How long an unused refresh token works.
pub const REFRESH_DAYS: i64 = 30;

/// An OAuth error as RFC 6749 §5.2 (token endpoint) and §4.1.2.1 (authorization) name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OAuthError {
    pub error: &'static str,
    pub error_description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError { error, error_description: description.into() }
    }
}

/// A connected client, as the profile page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Connection {
    pub id: ConnectionId,
    pub profile_id: ProfileId,
    /// The client's id: the URL of its metadata document.
    pub client_id: String,
    /// The name its metadata document gives.
    pub client_name: String,
    pub redirect_uri: String,
    /// The console user who consented.
    pub connected_by: String,
    pub created_at: DateTime<Utc>,
    /// When one of its access tokens was last used.
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

const CONNECTION_COLUMNS: &str = "c.id, c.profile_id, c.client_id, c.client_name, c.redirect_uri, \
     c.connected_by, c.created_at, \
     (SELECT MAX(k.last_used_at) FROM agent_keys k WHERE k.connection_id = c.id), c.revoked_at";

impl crate::sql::FromRow for Connection {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<Connection> {
        let last_used: Option<String> = r.get(7)?;
        Ok(Connection {
            id: r.get(0)?,
            profile_id: r.get(1)?,
            client_id: r.get(2)?,
            client_name: r.get(3)?,
            redirect_uri: r.get(4)?,
            connected_by: r.get(5)?,
            created_at: r.get(6)?,
            last_used_at: last_used.and_then(|s| stored::parse_ts(&s).ok()),
            revoked_at: r.get(8)?,
        })
    }
}

/// Whether `verifier` answers `challenge` under S256 (RFC 7636 §4.6), the verifier being 43
/// to 128 unreserved characters.
pub fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if !(43..=128).contains(&verifier.len()) || !verifier.bytes().all(unreserved) {
        return false;
    }
    let digest = Sha256::digest(verifier.as_bytes());
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    crate::secrets::digest_eq(&computed, challenge)
}

/// Whether a presented redirect URI is the registered one: exactly, or for a loopback `http`
/// URI (a native client's), the same but for the port (RFC 8252 §7.3).
pub fn redirect_matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let (Ok(mut r), Ok(mut p)) = (url::Url::parse(registered), url::Url::parse(presented)) else {
        return false;
    };
    let loopback = |u: &url::Url| {
        u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"))
    };
    if !loopback(&r) || !loopback(&p) {
        return false;
    }
    let _ = (r.set_port(None), p.set_port(None));
    r == p
}

/// The random secret of a code or refresh token, and its stored hash.
pub fn mint_secret(prefix: &str) -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    let secret = format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes));
    let hash = crate::secrets::hash_token(&secret);
    (secret, hash)
}

/// A new connection, before its code is exchanged.
pub struct NewConnection<'a> {
    pub tenant: &'a TenantId,
    pub id: &'a ConnectionId,
    pub profile: &'a ProfileId,
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub redirect_uri: &'a str,
    pub connected_by: &'a str,
}

/// Stores a consented connection and its code (hashed), good for [`CODE_SECS`].
pub(crate) fn insert_connection(
    c: &dyn Tx,
    n: &NewConnection<'_>,
    code_hash: &str,
    challenge: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    c.exec(
        "INSERT INTO oauth_connections (id, tenant_id, profile_id, client_id, client_name, redirect_uri, connected_by, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        &[n.id, n.tenant, n.profile, &n.client_id, &n.client_name, &n.redirect_uri, &n.connected_by, &now],
    )?;
    c.exec(
        "INSERT INTO oauth_codes (code_hash, connection_id, code_challenge, expires_at) VALUES (?, ?, ?, ?)",
        &[&code_hash, n.id, &challenge, &(now + Duration::seconds(CODE_SECS))],
    )?;
    Ok(())
}

/// What a code or refresh token leads to.
#[derive(Clone, Debug)]
pub struct Grant {
    pub connection: ConnectionId,
    pub tenant: TenantId,
    pub profile: ProfileId,
    pub client_id: String,
    pub redirect_uri: String,
    /// The code's PKCE challenge (empty for a refresh token).
    pub challenge: String,
    pub expires_at: DateTime<Utc>,
    /// Whether it was taken before this exchange.
    pub reused: bool,
    /// Whether its connection was revoked.
    pub revoked: bool,
}

const GRANT_COLUMNS: &str =
    "c.id, c.tenant_id, c.profile_id, c.client_id, c.redirect_uri, g.expires_at, g.used_at, c.revoked_at";

fn grant_of(r: &crate::sql::Row, challenge: String) -> Result<Grant> {
    let used: Option<DateTime<Utc>> = r.get(6)?;
    let revoked: Option<DateTime<Utc>> = r.get(7)?;
    Ok(Grant {
        connection: r.get(0)?,
        tenant: r.get(1)?,
        profile: r.get(2)?,
        client_id: r.get(3)?,
        redirect_uri: r.get(4)?,
        challenge,
        expires_at: r.get(5)?,
        reused: used.is_some(),
        revoked: revoked.is_some(),
    })
}

/// Takes the code with this hash: marks it used and returns what it grants (with `reused`
/// when it had been taken before). `None` for a code never issued.
pub(crate) fn take_code(c: &dyn Tx, code_hash: &str, now: DateTime<Utc>) -> Result<Option<Grant>> {
    let sql = format!(
        "SELECT {GRANT_COLUMNS}, g.code_challenge FROM oauth_codes g \
         JOIN oauth_connections c ON c.id = g.connection_id WHERE g.code_hash = ?"
    );
    let Some(r) = c.row(&sql, &[&code_hash])? else { return Ok(None) };
    let grant = grant_of(&r, r.get(8)?)?;
    c.exec(
        "UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL",
        &[&now, &code_hash],
    )?;
    Ok(Some(grant))
}

/// Takes the refresh token with this hash, as [`take_code`] takes a code.
pub(crate) fn take_refresh(c: &dyn Tx, token_hash: &str, now: DateTime<Utc>) -> Result<Option<Grant>> {
    let sql = format!(
        "SELECT {GRANT_COLUMNS} FROM oauth_refresh_tokens g \
         JOIN oauth_connections c ON c.id = g.connection_id WHERE g.token_hash = ?"
    );
    let Some(r) = c.row(&sql, &[&token_hash])? else { return Ok(None) };
    let grant = grant_of(&r, String::new())?;
    c.exec(
        "UPDATE oauth_refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL",
        &[&now, &token_hash],
    )?;
    Ok(Some(grant))
}

/// Stores a refresh token (its hash) for the connection; the first one establishes it and
/// records who connected which client.
pub(crate) fn insert_refresh(
    c: &dyn Tx,
    grant: &Grant,
    token_hash: &str,
    now: DateTime<Utc>,
    first: bool,
) -> Result<()> {
    c.exec(
        "INSERT INTO oauth_refresh_tokens (token_hash, connection_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
        &[&token_hash, &grant.connection, &now, &(now + Duration::days(REFRESH_DAYS))],
    )?;
    if first {
        c.exec("UPDATE oauth_connections SET established_at = ? WHERE id = ?", &[&now, &grant.connection])?;
        let by: String = c
            .row("SELECT connected_by FROM oauth_connections WHERE id = ?", &[&grant.connection])?
            .map(|r| r.get(0))
            .transpose()?
            .unwrap_or_default();
        let detail = serde_json::json!({ "connection_id": grant.connection, "client_id": grant.client_id });
        activity::append(
            c,
            NewEntry::new(&grant.tenant, by.as_str(), Kind::Key)
                .via_actor()
                .profile(&grant.profile)
                .verdict(Verdict::Issued)
                .detail(detail),
        )?;
    }
    Ok(())
}

/// Revokes a connection and every access token it holds, recording who did and why. A
/// connection already revoked changes nothing; `false` then.
pub(crate) fn revoke_connection(
    c: &dyn Tx,
    tenant: &TenantId,
    connection: &ConnectionId,
    actor: &str,
    why: &str,
) -> Result<bool> {
    let now = Utc::now();
    let changed = c.exec(
        "UPDATE oauth_connections SET revoked_at = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL",
        &[&now, connection, tenant],
    )?;
    if changed == 0 {
        return Ok(false);
    }
    crate::domain::keys::revoke_connection_keys(c, tenant, connection)?;
    let profile: ProfileId = c
        .row("SELECT profile_id FROM oauth_connections WHERE id = ?", &[connection])?
        .map(|r| r.get(0))
        .transpose()?
        .expect("the connection just revoked");
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Key)
            .via_actor()
            .profile(&profile)
            .verdict(Verdict::Revoked)
            .detail(serde_json::json!({ "connection_id": connection, "why": why })),
    )?;
    Ok(true)
}

/// Revokes every live connection of a profile (the profile is being revoked).
pub(crate) fn revoke_profile_connections(
    c: &dyn Tx,
    tenant: &TenantId,
    profile: &ProfileId,
    actor: &str,
) -> Result<()> {
    let live = c.rows(
        "SELECT id FROM oauth_connections WHERE tenant_id = ? AND profile_id = ? AND revoked_at IS NULL",
        &[tenant, profile],
    )?;
    for row in live {
        let id: ConnectionId = row.get(0)?;
        revoke_connection(c, tenant, &id, actor, "its agent profile was revoked")?;
    }
    Ok(())
}

/// A profile's established connections, newest first, revoked ones included.
pub(crate) async fn list(store: &Store, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<Connection>> {
    let sql = format!(
        "SELECT {CONNECTION_COLUMNS} FROM oauth_connections c \
         WHERE c.tenant_id = ? AND c.profile_id = ? AND c.established_at IS NOT NULL \
         ORDER BY c.created_at DESC, c.id"
    );
    Ok(store.all(&sql, &[tenant, profile]).await?)
}

/// One of a tenant's connections.
pub(crate) async fn get(store: &Store, tenant: &TenantId, id: &ConnectionId) -> Result<Option<Connection>> {
    let sql =
        format!("SELECT {CONNECTION_COLUMNS} FROM oauth_connections c WHERE c.tenant_id = ? AND c.id = ?");
    Ok(store.opt(&sql, &[tenant, id]).await?)
}

/// Stores a client that registered itself (RFC 7591).
pub(crate) fn insert_client(
    c: &dyn Tx,
    client_id: &str,
    name: &str,
    redirect_uris: &[String],
    now: DateTime<Utc>,
) -> Result<()> {
    let uris = serde_json::to_string(redirect_uris).expect("strings serialize");
    c.exec(
        "INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at) VALUES (?, ?, ?, ?)",
        &[&client_id, &name, &uris, &now],
    )?;
    Ok(())
}

/// A registered client's name and redirect URIs.
pub(crate) async fn registered_client(
    store: &Store,
    client_id: &str,
) -> Result<Option<(String, Vec<String>)>> {
    let row: Option<(String, String)> = store
        .opt("SELECT client_name, redirect_uris FROM oauth_clients WHERE client_id = ?", &[&client_id])
        .await?;
    Ok(row.map(|(name, uris)| (name, serde_json::from_str(&uris).unwrap_or_default())))
}

/// Whether the tenant accepts clients that registered themselves (off unless an admin said so).
pub(crate) async fn dynamic_clients_on(store: &Store, tenant: &TenantId) -> Result<bool> {
    let on: Option<(i64,)> =
        store.opt("SELECT dynamic_clients FROM oauth_settings WHERE tenant_id = ?", &[tenant]).await?;
    Ok(on.is_some_and(|(on,)| on != 0))
}

/// Turns accepting registered clients on or off, recording who did.
pub(crate) fn set_dynamic_clients(c: &dyn Tx, tenant: &TenantId, on: bool, actor: &str) -> Result<()> {
    c.exec(
        "INSERT INTO oauth_settings (tenant_id, dynamic_clients) VALUES (?, ?) \
         ON CONFLICT (tenant_id) DO UPDATE SET dynamic_clients = excluded.dynamic_clients",
        &[tenant, &i64::from(on)],
    )?;
    let detail = serde_json::json!({ "oauth_dynamic_clients": on });
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Settings).via_actor().verdict(Verdict::Changed).detail(detail),
    )?;
    Ok(())
}

/// Whether an admin allowed this person to connect MCP clients.
pub(crate) async fn allowed_to_connect(store: &Store, tenant: &TenantId, user: &UserId) -> Result<bool> {
    let row: Option<(String,)> = store
        .opt("SELECT user_id FROM oauth_connectors WHERE tenant_id = ? AND user_id = ?", &[tenant, user])
        .await?;
    Ok(row.is_some())
}

/// Allows (or, with `allow` false, stops allowing) a person to connect MCP clients.
pub(crate) fn set_connector(
    c: &dyn Tx,
    tenant: &TenantId,
    user: &UserId,
    allow: bool,
    actor: &str,
) -> Result<()> {
    let changed = if allow {
        c.exec(
            "INSERT INTO oauth_connectors (tenant_id, user_id, allowed_by, created_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (tenant_id, user_id) DO NOTHING",
            &[tenant, user, &actor, &Utc::now()],
        )?
    } else {
        c.exec("DELETE FROM oauth_connectors WHERE tenant_id = ? AND user_id = ?", &[tenant, user])?
    };
    if changed > 0 {
        let detail = serde_json::json!({ "oauth_connector": user, "allowed": allow });
        let entry =
            NewEntry::new(tenant, actor, Kind::Settings).via_actor().verdict(Verdict::Changed).detail(detail);
        activity::append(c, entry)?;
    }
    Ok(())
}

/// The people allowed to connect MCP clients besides the admins: (id, username), by name.
pub(crate) async fn connectors(store: &Store, tenant: &TenantId) -> Result<Vec<(UserId, String)>> {
    let sql = "SELECT u.id, u.username FROM oauth_connectors o JOIN console_users u ON u.id = o.user_id \
               WHERE o.tenant_id = ? ORDER BY u.username";
    Ok(store.all(sql, &[tenant]).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_is_s256_of_an_unreserved_verifier() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(pkce_matches("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", verifier));
        assert!(!pkce_matches("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", &verifier.replace('d', "e")));
        assert!(!pkce_matches(verifier, verifier), "plain is not accepted");
        assert!(!pkce_matches("x", "short"));
    }

    #[test]
    fn redirect_uris_match_exactly_but_loopback_ports() {
        assert!(redirect_matches("https://a.example/cb", "https://a.example/cb"));
        assert!(!redirect_matches("https://a.example/cb", "https://a.example/cb/"));
        assert!(!redirect_matches("https://a.example/cb", "https://a.example:444/cb"));
        assert!(redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb"));
        assert!(redirect_matches("http://localhost:3000/cb", "http://localhost:4000/cb"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb2"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://127.0.0.2:51234/cb"));
    }
}
