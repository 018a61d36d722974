//! OAuth 2.1 for hosted MCP clients as operations (docs/mcp.md#connecting-with-oauth): an
//! authorization request checked for the consent page, the consent that makes a connection
//! and its code, the token endpoint's two grants, and a profile's connections.
//!
//! Guarantees: a code or refresh token is taken, and its tokens issued, in one job, so a
//! refused exchange issues nothing and a reused grant revokes its connection in the same
//! transaction that notices it; the client's metadata document is fetched through the egress
//! guard ([`crate::delivery::client_metadata`]); an access token is a key of the connection's
//! profile that ends within [`ACCESS_SECS`].

use chrono::{Duration, Utc};

use crate::Gateway;
use crate::delivery::client_metadata::{ClientDocument, check_client_id};
use crate::domain::keys::{KeyInfo, insert_access_key};
use crate::domain::oauth::{
    self as oauth, ACCESS_SECS, Connection, Grant, NewConnection, OAuthError, SCOPE, mint_secret,
    pkce_matches, redirect_matches,
};
use crate::domain::profiles::{MAX_NAME_LEN, Profile, insert_profile};
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::{ConnectionId, KeyId, ProfileId, TenantId, UserId, display_name};
use crate::secrets;

/// An authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct AuthorizeRequest {
    #[serde(default)]
    pub response_type: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub redirect_uri: String,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub code_challenge: String,
    #[serde(default)]
    pub code_challenge_method: String,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

/// Why an authorization request cannot go on: shown on the page when the client or its
/// redirect URI cannot be trusted (RFC 6749 §4.1.2.1), else sent back to the client.
#[derive(Debug)]
pub enum Refusal {
    Show(Error),
    /// The client's redirect URI with `error`, `error_description` and `state`.
    Redirect(String),
}

/// Which profile a connection acts as.
#[derive(Clone, Debug)]
pub enum ProfileChoice {
    Existing(ProfileId),
    /// A new sub-agent under `parent`, with the parent's kit: it can only narrow.
    NewSubAgent {
        parent: ProfileId,
        name: String,
    },
}

/// The token endpoint's form (RFC 6749 §4.1.3 and §6).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct TokenRequest {
    #[serde(default)]
    pub grant_type: String,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub client_id: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub resource: Option<String>,
}

/// The token endpoint's answer (RFC 6749 §5.1).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Tokens {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: &'static str,
}

/// A grant's outcome, and the tenant whose connection it revoked (a code or refresh token
/// presented again), whose caches must forget its tokens.
type Granted = (std::result::Result<(Tokens, Grant), OAuthError>, Option<TenantId>);

/// The id prefix of a client that registered itself.
pub const REGISTERED_PREFIX: &str = "nvcl_";
/// The most redirect URIs a registered client may list, and the longest one.
const MAX_REDIRECTS: usize = 10;
const MAX_URI_LEN: usize = 2048;
/// The most registrations this process accepts a minute: registering needs no credential.
const REGISTRATIONS_PER_MINUTE: u32 = 60;

/// A client registration request (RFC 7591 §2), the fields this server reads.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Registration {
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
}

/// A registered client (RFC 7591 §3.2.1).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Registered {
    pub client_id: String,
    pub client_id_issued_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: &'static str,
    pub grant_types: Vec<&'static str>,
    pub response_types: Vec<&'static str>,
}

impl Gateway {
    /// The one resource this server's tokens are good for: its public `/mcp`.
    pub fn mcp_resource(&self) -> String {
        format!("{}/mcp", self.config.public_url.trim_end_matches('/'))
    }

    /// How long an access token issued now works: the operator's setting, at most an hour.
    fn access_secs(&self) -> i64 {
        self.config.oauth_access_secs.clamp(1, ACCESS_SECS)
    }

    /// The authorization server's issuer: the public URL.
    pub fn oauth_issuer(&self) -> String {
        self.config.public_url.trim_end_matches('/').to_string()
    }

    /// Checks an authorization request: its client's metadata document, the redirect URI
    /// against it, then PKCE, the response type, the scope and the resource.
    pub async fn oauth_check(&self, req: &AuthorizeRequest) -> std::result::Result<ClientDocument, Refusal> {
        let doc = self.client_document(&req.client_id).await.map_err(Refusal::Show)?;
        if !doc.redirect_uris.iter().any(|r| redirect_matches(r, &req.redirect_uri)) {
            let m = "redirect_uri is not one the client's metadata document lists; the client must send one of them exactly";
            return Err(Refusal::Show(Error::invalid("invalid_redirect_uri", m)));
        }
        let back = |e: OAuthError| {
            Refusal::Redirect(self.back_to_client(&req.redirect_uri, req.state.as_deref(), Err(e)))
        };
        check_params(req, &self.mcp_resource()).map_err(back)?;
        Ok(doc)
    }

    /// Who a client id names: a client that registered here, or the metadata document at
    /// that URL.
    async fn client_document(&self, client_id: &str) -> Result<ClientDocument> {
        let invalid = |m: String| Error::invalid("invalid_client", m);
        if client_id.starts_with(REGISTERED_PREFIX) {
            let (client_name, redirect_uris) =
                oauth::registered_client(&self.store, client_id).await?.ok_or_else(|| {
                    invalid("no client registered here has this client_id; register again".into())
                })?;
            return Ok(ClientDocument {
                client_id: client_id.into(),
                client_name,
                redirect_uris,
                registered: true,
            });
        }
        check_client_id(client_id).map_err(|e| invalid(e.0))?;
        self.oauth_clients.get(&self.egress, client_id).await.map_err(|e| invalid(e.0))
    }

    /// Refuses a client that registered itself where the person's tenant does not accept
    /// such clients.
    pub async fn check_client_accepted(&self, tenant: &TenantId, doc: &ClientDocument) -> Result<()> {
        if doc.registered && !oauth::dynamic_clients_on(&self.store, tenant).await? {
            let m = "this company accepts only clients identified by a metadata document; an admin can also accept clients that register themselves (users page, MCP clients)";
            return Err(Error::Forbidden { code: "dynamic_clients_off", message: m.into() });
        }
        Ok(())
    }

    /// Whether this person may connect MCP clients: an admin, or someone an admin allowed.
    pub async fn may_connect_clients(&self, user: &ConsoleUser) -> Result<bool> {
        Ok(user.has(Role::Admin) || oauth::allowed_to_connect(&self.store, &user.tenant_id, &user.id).await?)
    }

    /// The tenant's settings for connecting clients: whether registered clients are accepted,
    /// and who besides the admins may connect them.
    pub async fn oauth_settings(&self, tenant: &TenantId) -> Result<(bool, Vec<(UserId, String)>)> {
        Ok((
            oauth::dynamic_clients_on(&self.store, tenant).await?,
            oauth::connectors(&self.store, tenant).await?,
        ))
    }

    /// Turns accepting clients that register themselves on or off for the tenant.
    pub async fn set_oauth_dynamic_clients(&self, tenant: &TenantId, on: bool, actor: &str) -> Result<()> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| oauth::set_dynamic_clients(c, &t, on, &a)).await
    }

    /// Allows a person of the tenant to connect MCP clients, or stops allowing them.
    pub async fn set_client_connector(
        &self,
        tenant: &TenantId,
        user: &UserId,
        allow: bool,
        actor: &str,
    ) -> Result<()> {
        self.user(tenant, user).await?;
        let (t, u, a) = (tenant.clone(), user.clone(), actor.to_string());
        self.write(move |c| oauth::set_connector(c, &t, &u, allow, &a)).await
    }

    /// Registers a client (RFC 7591): a public client with its redirect URIs, whose id only
    /// tenants that accept such clients will connect.
    pub async fn register_oauth_client(
        &self,
        req: Registration,
    ) -> Result<std::result::Result<Registered, OAuthError>> {
        let checked = match check_registration(req) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        if !registration_allowed() {
            return Err(Error::Throttled {
                code: "registration_rate_limited",
                message: "too many clients registered in the last minute; try again shortly".into(),
                retry_after_secs: 60,
            });
        }
        let client_id = format!("{REGISTERED_PREFIX}{}", uuid::Uuid::now_v7().simple());
        let now = Utc::now();
        let (id, name, uris) =
            (client_id.clone(), checked.client_name.clone(), checked.redirect_uris.clone());
        self.write(move |c| oauth::insert_client(c, &id, &name, &uris, now)).await?;
        Ok(Ok(Registered { client_id, client_id_issued_at: now.timestamp(), ..checked }))
    }

    /// The client's redirect URI with a code or an error, `state` and this issuer (RFC 9207).
    pub fn back_to_client(
        &self,
        redirect_uri: &str,
        state: Option<&str>,
        outcome: std::result::Result<&str, OAuthError>,
    ) -> String {
        let mut url = url::Url::parse(redirect_uri).expect("a checked redirect URI");
        {
            let mut q = url.query_pairs_mut();
            match &outcome {
                Ok(code) => q.append_pair("code", code),
                Err(e) => {
                    q.append_pair("error", e.error).append_pair("error_description", &e.error_description)
                }
            };
            if let Some(s) = state {
                q.append_pair("state", s);
            }
            q.append_pair("iss", &self.oauth_issuer());
        }
        url.to_string()
    }

    /// A person consents: checks the request again, that they may connect clients, and the
    /// profile they chose (or creates the sub-agent), then stores the connection and its
    /// code. The answer is where to send the browser: the client, with the code.
    pub async fn oauth_consent(
        &self,
        user: &ConsoleUser,
        req: &AuthorizeRequest,
        choice: ProfileChoice,
    ) -> Result<String> {
        if !self.may_connect_clients(user).await? {
            let m = "connecting an MCP client needs the admin role, or an admin's leave (users page, MCP clients)";
            return Err(Error::Forbidden { code: "role_required", message: m.into() });
        }
        let doc = match self.oauth_check(req).await {
            Ok(doc) => doc,
            Err(Refusal::Show(e)) => return Err(e),
            Err(Refusal::Redirect(url)) => return Ok(url),
        };
        self.check_client_accepted(&user.tenant_id, &doc).await?;
        let (profile, new) = self.connected_profile(user, choice).await?;
        let (code, code_hash) = mint_secret("nvc_");
        let (id, t, by) = (ConnectionId::generate(), user.tenant_id.clone(), user.username.clone());
        let (challenge, redirect) = (req.code_challenge.clone(), req.redirect_uri.clone());
        self.write(move |c| {
            if let Some(p) = &new {
                insert_profile(c, p)?;
            }
            let n = NewConnection {
                tenant: &t,
                id: &id,
                profile: &profile,
                client_id: &doc.client_id,
                client_name: &doc.client_name,
                redirect_uri: &redirect,
                connected_by: &by,
            };
            oauth::insert_connection(c, &n, &code_hash, &challenge, Utc::now())
        })
        .await?;
        Ok(self.back_to_client(&req.redirect_uri, req.state.as_deref(), Ok(&code)))
    }

    /// The profile a connection acts as: an active one of the tenant's, or a new sub-agent
    /// (returned to be stored with the connection, in its job) on its parent's kit.
    async fn connected_profile(
        &self,
        user: &ConsoleUser,
        choice: ProfileChoice,
    ) -> Result<(ProfileId, Option<Profile>)> {
        match choice {
            ProfileChoice::Existing(id) => {
                let p = self.profile(&user.tenant_id, &id).await?;
                if p.status != policy::SubjectStatus::Active {
                    let m = "that agent profile is revoked or suspended; choose another";
                    return Err(Error::invalid("profile_not_active", m));
                }
                Ok((p.id, None))
            }
            ProfileChoice::NewSubAgent { parent, name } => {
                let parent = self.profile(&user.tenant_id, &parent).await?;
                let name = display_name(&name, MAX_NAME_LEN, "invalid_profile_name", "a profile name")?;
                let p = Profile::fresh(
                    &user.tenant_id,
                    &name,
                    Some(&user.id),
                    Some(&parent.id),
                    &parent.kit_name,
                );
                Ok((p.id.clone(), Some(p)))
            }
        }
    }

    /// The token endpoint: an authorization code with its PKCE verifier, or a refresh token,
    /// for a new access token and refresh token.
    pub async fn oauth_token(&self, form: TokenRequest) -> Result<std::result::Result<Tokens, OAuthError>> {
        let resource = self.mcp_resource();
        if form.resource.as_deref().is_some_and(|r| r.trim_end_matches('/') != resource) {
            let m = format!("tokens of this server are for {resource} only");
            return Ok(Err(OAuthError::new("invalid_target", m)));
        }
        let (outcome, revoked) = match form.grant_type.as_str() {
            "authorization_code" => self.exchange_code(form).await?,
            "refresh_token" => self.refresh(form).await?,
            "" => (Err(OAuthError::new("invalid_request", "grant_type is required")), None),
            _ => {
                let m = "grant_type is authorization_code or refresh_token";
                (Err(OAuthError::new("unsupported_grant_type", m)), None)
            }
        };
        if let Some(tenant) = revoked {
            self.agents_changed(Some(&tenant));
            self.invalidate_keys();
        }
        Ok(outcome.map(|(tokens, _)| tokens))
    }

    async fn exchange_code(&self, form: TokenRequest) -> Result<Granted> {
        let (Some(code), Some(verifier)) = (form.code.clone(), form.code_verifier.clone()) else {
            return Ok((
                Err(OAuthError::new("invalid_request", "code and code_verifier are required")),
                None,
            ));
        };
        let (hash, ttl) = (secrets::hash_token(&code), self.access_secs());
        self.write(move |c| {
            let now = Utc::now();
            let Some(g) = oauth::take_code(c, &hash, now)? else { return Ok((Err(unknown("code")), None)) };
            if g.reused {
                let why = "authorization code used twice";
                oauth::revoke_connection(c, &g.tenant, &g.connection, "oauth", why)?;
                let m = "the code was already used; the connection it made is revoked";
                return Ok((Err(grant_error(m)), Some(g.tenant)));
            }
            let presented = form.redirect_uri.as_deref().unwrap_or_default();
            let refused = check_grant(&g, form.client_id.as_deref(), now)
                .or_else(|| {
                    (g.redirect_uri != presented)
                        .then(|| grant_error("redirect_uri differs from the authorization request's"))
                })
                .or_else(|| {
                    (!pkce_matches(&g.challenge, &verifier))
                        .then(|| grant_error("code_verifier does not match the code_challenge"))
                });
            if let Some(e) = refused {
                return Ok((Err(e), None));
            }
            issue(c, &g, now, ttl, true).map(|t| (Ok((t, g)), None))
        })
        .await
    }

    async fn refresh(&self, form: TokenRequest) -> Result<Granted> {
        let Some(token) = form.refresh_token.clone() else {
            return Ok((Err(OAuthError::new("invalid_request", "refresh_token is required")), None));
        };
        let (hash, ttl) = (secrets::hash_token(&token), self.access_secs());
        self.write(move |c| {
            let now = Utc::now();
            let Some(g) = oauth::take_refresh(c, &hash, now)? else {
                return Ok((Err(unknown("refresh token")), None));
            };
            if g.reused && !g.revoked {
                oauth::revoke_connection(c, &g.tenant, &g.connection, "oauth", "refresh token used twice")?;
                let m =
                    "the refresh token was already used; its connection is revoked, connect the client again";
                return Ok((Err(grant_error(m)), Some(g.tenant)));
            }
            if let Some(e) = check_grant(&g, form.client_id.as_deref(), now) {
                return Ok((Err(e), None));
            }
            issue(c, &g, now, ttl, false).map(|t| (Ok((t, g)), None))
        })
        .await
    }

    /// A profile's connected clients, newest first.
    pub async fn oauth_connections(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<Connection>> {
        self.profile(tenant, profile).await?;
        oauth::list(&self.store, tenant, profile).await
    }

    /// Revokes a connection: its access tokens stop at once (the next `/mcp` request is 401,
    /// its sessions end) and its refresh tokens with it.
    pub async fn revoke_oauth_connection(
        &self,
        tenant: &TenantId,
        id: &ConnectionId,
        actor: &str,
    ) -> Result<Connection> {
        oauth::get(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "connection" })?;
        let (t, i, a) = (tenant.clone(), id.clone(), actor.to_string());
        self.write(move |c| oauth::revoke_connection(c, &t, &i, &a, "revoked by a person")).await?;
        self.agents_changed(Some(tenant));
        self.invalidate_keys();
        oauth::get(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "connection" })
    }
}

/// The parameters besides the client and its redirect URI (RFC 6749 §4.1.1, RFC 7636 §4.3,
/// RFC 8707 §2).
fn check_params(req: &AuthorizeRequest, resource: &str) -> std::result::Result<(), OAuthError> {
    if req.response_type != "code" {
        return Err(OAuthError::new("unsupported_response_type", "response_type must be code"));
    }
    if req.code_challenge_method != "S256" || req.code_challenge.len() != 43 {
        return Err(OAuthError::new(
            "invalid_request",
            "PKCE is required: send code_challenge (43 characters) with code_challenge_method=S256",
        ));
    }
    if req.scope.as_deref().is_some_and(|s| s.split(' ').any(|s| !s.is_empty() && s != SCOPE)) {
        return Err(OAuthError::new("invalid_scope", format!("the one scope here is `{SCOPE}`")));
    }
    if req.resource.as_deref().is_some_and(|r| r.trim_end_matches('/') != resource) {
        return Err(OAuthError::new(
            "invalid_target",
            format!("tokens of this server are for {resource} only"),
        ));
    }
    Ok(())
}

/// A registration's metadata, checked: public clients with redirect URIs that are https, or
/// loopback http (native clients).
fn check_registration(r: Registration) -> std::result::Result<Registered, OAuthError> {
    let bad_uri = |u: &String| {
        u.len() > MAX_URI_LEN
            || url::Url::parse(u).map_or(true, |p| {
                let loopback = matches!(p.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
                p.fragment().is_some() || !(p.scheme() == "https" || p.scheme() == "http" && loopback)
            })
    };
    if r.redirect_uris.is_empty()
        || r.redirect_uris.len() > MAX_REDIRECTS
        || r.redirect_uris.iter().any(bad_uri)
    {
        let m = format!(
            "redirect_uris: 1 to {MAX_REDIRECTS} absolute URLs without a fragment, https or loopback http"
        );
        return Err(OAuthError::new("invalid_redirect_uri", m));
    }
    if r.token_endpoint_auth_method.as_deref().is_some_and(|m| m != "none") {
        let m = "this server registers public clients only: token_endpoint_auth_method must be none (PKCE protects the code)";
        return Err(OAuthError::new("invalid_client_metadata", m));
    }
    let grants_ok = r.grant_types.iter().flatten().all(|g| g == "authorization_code" || g == "refresh_token");
    let responses_ok = r.response_types.iter().flatten().all(|t| t == "code");
    if !grants_ok || !responses_ok {
        let m = "grant_types may be authorization_code and refresh_token, response_types only code";
        return Err(OAuthError::new("invalid_client_metadata", m));
    }
    let name: String =
        r.client_name.unwrap_or_default().chars().filter(|c| !c.is_control()).take(100).collect();
    let name = if name.trim().is_empty() { "Unnamed client".to_string() } else { name };
    Ok(Registered {
        client_id: String::new(),
        client_id_issued_at: 0,
        client_name: name,
        redirect_uris: r.redirect_uris,
        token_endpoint_auth_method: "none",
        grant_types: vec!["authorization_code", "refresh_token"],
        response_types: vec!["code"],
    })
}

/// Whether another registration fits in this minute's allowance (process-wide).
fn registration_allowed() -> bool {
    use std::sync::Mutex;
    use std::time::{Duration as StdDuration, Instant};
    static WINDOW: Mutex<Option<(Instant, u32)>> = Mutex::new(None);
    let mut w = WINDOW.lock().expect("registration window");
    let now = Instant::now();
    let (start, count) = w.get_or_insert((now, 0));
    if now.duration_since(*start) >= StdDuration::from_secs(60) {
        (*start, *count) = (now, 0);
    }
    *count += 1;
    *count <= REGISTRATIONS_PER_MINUTE
}

fn grant_error(m: &str) -> OAuthError {
    OAuthError::new("invalid_grant", m)
}

fn unknown(what: &str) -> OAuthError {
    grant_error(&format!("the {what} is not one this server issued"))
}

/// The checks a code and a refresh token share: not revoked, not expired, the same client.
fn check_grant(g: &Grant, client_id: Option<&str>, now: chrono::DateTime<Utc>) -> Option<OAuthError> {
    if g.revoked {
        return Some(grant_error("the connection was revoked; connect the client again"));
    }
    if g.expires_at <= now {
        return Some(grant_error("the grant expired; start the authorization again"));
    }
    if client_id != Some(g.client_id.as_str()) {
        return Some(grant_error("client_id is not the client this grant was issued to"));
    }
    None
}

/// Issues an access token (a key of the profile, ending in `ttl` seconds) and a refresh token
/// for the connection.
fn issue(
    c: &dyn crate::sql::Tx,
    g: &Grant,
    now: chrono::DateTime<Utc>,
    ttl: i64,
    first: bool,
) -> Result<Tokens> {
    let minted = secrets::mint_key();
    let info = KeyInfo {
        id: KeyId::generate(),
        profile_id: g.profile.clone(),
        prefix: minted.prefix.clone(),
        created_at: now,
        last_used_at: None,
        expires_at: Some(now + Duration::seconds(ttl)),
        revoked_at: None,
    };
    insert_access_key(c, &g.tenant, &info, &minted.hash, &g.connection)?;
    let (refresh, refresh_hash) = mint_secret("nvr_");
    oauth::insert_refresh(c, g, &refresh_hash, now, first)?;
    Ok(Tokens {
        access_token: minted.token,
        token_type: "Bearer",
        expires_in: ttl,
        refresh_token: refresh,
        scope: SCOPE,
    })
}
