//! Single sign-on as operations (docs/sso.md): an admin sets the tenant's OpenID connection
//! (its client secret into the vault in the same transaction), a person starts a sign-in
//! and the provider's callback finishes it into a console session.
//!
//! Guarantees: a sign-in's `state` is taken once and only by the browser that started it;
//! its code is exchanged with the PKCE verifier that only this server held; the ID token is
//! checked ([`crate::delivery::oidc`]) before anything is written; the user, their roles, their
//! approval groups and the session are written in one transaction, or nothing is.

use serde::Serialize;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::oidc::{self, Challenge, OidcError, Provider};
use crate::domain::sso::{self, CLIENT_SECRET_NAME, Login, Person, SsoConnection, SsoSettings};
use crate::domain::users::ConsoleUser;
use crate::domain::{sessions, vault};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::secrets;

/// Where the provider sends the browser back.
pub const CALLBACK_PATH: &str = "/login/sso/callback";

/// A sign-in started: where to send the browser, and the token that binds the sign-in to it
/// (for a cookie).
pub struct SsoStart {
    pub redirect: String,
    pub browser_token: String,
}

/// A sign-in finished: the user, the session token for the cookie, the page to open.
pub struct SsoDone {
    pub user: ConsoleUser,
    pub session_token: String,
    pub next: String,
}

/// What discovery found for a connection (its test).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SsoProbe {
    pub issuer: String,
    pub authorization_endpoint: String,
    /// Keys the provider publishes now.
    pub keys: usize,
    /// Where the provider must be told to send people back (its redirect URI).
    pub redirect_uri: String,
}

fn provider_error(e: OidcError) -> Error {
    match e {
        OidcError::Provider(m) => Error::unavailable("sso_provider_unavailable", m, 30),
        OidcError::Exchange(m) | OidcError::Token(m) => Error::Forbidden { code: "sso_refused", message: m },
    }
}

impl Gateway {
    /// The tenant's connection.
    pub async fn sso_connection(&self, tenant: &TenantId) -> Result<SsoConnection> {
        sso::get(&self.store, tenant).await?.ok_or(Error::NotFound { what: "single sign-on connection" })
    }

    /// Sets the tenant's connection; a client secret given goes into the vault.
    pub async fn put_sso_connection(
        &self,
        tenant: &TenantId,
        mut settings: SsoSettings,
        actor: &str,
        via: Transport,
    ) -> Result<SsoConnection> {
        let url = settings.check()?;
        self.egress.check_setting(&url).await?;
        let master = match settings.client_secret {
            Some(_) => Some(self.vault.master()?.clone()),
            None => None,
        };
        let (t, a) = (tenant.clone(), actor.to_string());
        let s = settings.clone();
        self.write(move |c| {
            if let (Some(secret), Some(master)) = (&s.client_secret, &master) {
                vault::put_in(c, master, &t, CLIENT_SECRET_NAME, secret, &a, via)?;
            }
            sso::put_in(c, &t, &s, &a, via)
        })
        .await?;
        self.oidc.forget(&settings.issuer);
        self.sso_connection(tenant).await
    }

    /// Removes the tenant's connection (its secret stays in the vault until deleted there).
    pub async fn delete_sso_connection(&self, tenant: &TenantId, actor: &str, via: Transport) -> Result<()> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| sso::delete_in(c, &t, &a, via)).await
    }

    /// Reads the provider's discovery document and keys now.
    pub async fn test_sso_connection(&self, tenant: &TenantId) -> Result<SsoProbe> {
        let conn = self.sso_connection(tenant).await?;
        self.oidc.forget(&conn.issuer);
        let p = self.oidc.get(&self.egress, &conn.issuer).await.map_err(|e| {
            Error::invalid(
                "sso_provider_unreachable",
                format!("{e}; check the issuer URL, and that the operator's egress allows its address"),
            )
        })?;
        Ok(SsoProbe {
            issuer: conn.issuer,
            authorization_endpoint: p.authorization_endpoint().to_string(),
            keys: p.metadata.jwks().keys().len(),
            redirect_uri: self.sso_redirect_uri(),
        })
    }

    /// The tenant whose sign-in an email's domain leads to.
    pub async fn sso_tenant_for_email(&self, email: &str) -> Result<Option<TenantId>> {
        let domain = email.trim().rsplit_once('@').map_or(email.trim(), |(_, d)| d).to_ascii_lowercase();
        sso::tenant_for_domain(&self.store, &domain).await
    }

    /// Whether `user` may not sign in with a password: their tenant requires single sign-on
    /// and they are not its break-glass admin.
    pub async fn password_sign_in_refused(&self, user: &ConsoleUser) -> Result<bool> {
        sso::password_refused(&self.store, user).await
    }

    /// How many times this process read a provider's keys (discovery included).
    pub fn oidc_key_fetches(&self) -> u64 {
        self.oidc.key_fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets what was discovered of `issuer`, so the next sign-in reads it again.
    pub fn forget_oidc_provider(&self, issuer: &str) {
        self.oidc.forget(issuer);
    }

    /// The tenant's users bound to a provider.
    pub async fn sso_identities(&self, tenant: &TenantId) -> Result<Vec<sso::Identity>> {
        sso::identities(&self.store, tenant).await
    }

    fn sso_redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.config.public_url.trim_end_matches('/'))
    }

    /// Starts a sign-in with the tenant's provider; `next` is the console page to open after.
    pub async fn begin_sso(&self, tenant: &TenantId, next: &str) -> Result<SsoStart> {
        let conn = self.sso_connection(tenant).await?;
        let provider = self.oidc.get(&self.egress, &conn.issuer).await.map_err(provider_error)?;
        let challenge = Challenge::new();
        let browser_token = secrets::random_password();
        let login = Login {
            tenant: tenant.clone(),
            browser_hash: secrets::hash_token(&browser_token),
            nonce: challenge.nonce.clone(),
            verifier: challenge.verifier.clone(),
            next: next.to_string(),
        };
        let state_hash = secrets::hash_token(&challenge.state);
        self.write(move |c| sso::begin_in(c, &state_hash, &login)).await?;
        let redirect = oidc::authorize_url(
            &provider,
            (&conn.client_id, &self.sso_redirect_uri(), &conn.scopes),
            &challenge,
        );
        Ok(SsoStart { redirect, browser_token })
    }

    /// Finishes a sign-in from the provider's callback: takes its state (once, for this
    /// browser only), exchanges the code, checks the ID token, then signs the person in. `iss`
    /// is the callback's issuer parameter (RFC 9207), when the provider sends one: it must be
    /// the connection's, so a code another provider issued is never sent to this one.
    pub async fn finish_sso(
        &self,
        (state, code, iss): (&str, &str, Option<&str>),
        browser_token: Option<&str>,
    ) -> Result<SsoDone> {
        let login = self.take_sso_login(state, browser_token).await?;
        let conn = self.sso_connection(&login.tenant).await?;
        if iss.is_some_and(|iss| iss.trim_end_matches('/') != conn.issuer) {
            return Err(Error::Forbidden {
                code: "sso_refused",
                message: "the provider's answer names another issuer than this tenant's; start again from the sign-in page".into(),
            });
        }
        let provider = self.oidc.get(&self.egress, &conn.issuer).await.map_err(provider_error)?;
        let secret = self.open_secret(&login.tenant, &conn.client_secret_name).await?;
        let tokens = oidc::exchange(
            &self.egress,
            &provider,
            (&conn.client_id, &secret),
            (code, &login.verifier, &self.sso_redirect_uri()),
        )
        .await
        .map_err(provider_error)?;
        let id_token = tokens.id_token.ok_or_else(|| {
            provider_error(OidcError::Exchange("the provider answered without an ID token".into()))
        })?;
        let mut who = self
            .oidc
            .verify(&self.egress, &provider, (&conn.client_id, &login.nonce, &conn.groups_claim), &id_token)
            .await
            .map_err(provider_error)?;
        if who.groups.is_none()
            && let Some(access) = &tokens.access_token
        {
            who.groups =
                oidc::userinfo_groups(&self.egress, &provider, access, (&who.subject, &conn.groups_claim))
                    .await
                    .map_err(provider_error)?;
        }
        self.sign_in_person(&login, &conn, &provider, &who).await
    }

    async fn take_sso_login(&self, state: &str, browser_token: Option<&str>) -> Result<Login> {
        let state_hash = secrets::hash_token(state);
        let login = self.write(move |c| sso::take_in(c, &state_hash)).await?;
        let refused = |m: &str| Error::Forbidden { code: "sso_refused", message: m.to_string() };
        let login = login.ok_or_else(|| {
            refused("this sign-in is unknown, used already or ran out of time; start it again from the sign-in page")
        })?;
        if browser_token.map(secrets::hash_token).as_deref() != Some(login.browser_hash.as_str()) {
            return Err(refused(
                "this sign-in was started in another browser; start it again from the sign-in page here",
            ));
        }
        Ok(login)
    }

    async fn sign_in_person(
        &self,
        login: &Login,
        conn: &SsoConnection,
        provider: &Provider,
        who: &oidc::Verified,
    ) -> Result<SsoDone> {
        let issuer = provider.metadata.issuer().to_string();
        let groups = who.groups.clone().unwrap_or_default();
        let token = format!("ns_{}", secrets::random_password());
        let hash = secrets::hash_token(&token);
        let (t, conn, who2) = (login.tenant.clone(), conn.clone(), who.clone());
        let user = self
            .write(move |c| {
                let person = Person {
                    issuer: &issuer,
                    subject: &who2.subject,
                    email: who2.email.as_deref(),
                    groups: &groups,
                };
                let (user, name) = sso::sign_in_in(c, &t, &conn, &person)?;
                sessions::start(c, &hash, (&user, &t, &name), Some(&issuer))?;
                Ok(user)
            })
            .await?;
        self.credentials_changed();
        let user = self.user(&login.tenant, &user).await?;
        Ok(SsoDone { user, session_token: token, next: login.next.clone() })
    }
}
