//! Single sign-on's records (docs/sso.md): a tenant's OpenID connection, the email domains
//! that lead to it, the identities that bind console users to the provider, and the sign-ins
//! in flight.
//!
//! Guarantees:
//! - A console user signed in through the provider is found by (tenant, issuer, subject) only;
//!   an email is stored to be shown, never matched, so a provider account whose email equals a
//!   local user's is not that user.
//! - At every sign-in the user's roles become what the mapping gives their groups now, and the
//!   approval groups the mapping names follow the same groups, in the sign-in's transaction.
//! - A sign-in in flight is taken once: its row is deleted by the callback that reads it.
//! - An email domain leads to at most one tenant.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// The vault secret that holds a tenant's client secret.
pub const CLIENT_SECRET_NAME: &str = "sso-oidc-client-secret";
/// How long a sign-in may take at the provider.
pub const LOGIN_MINUTES: i64 = 10;
/// The password hash of a user who signs in only through the provider: no password verifies.
pub(crate) const NO_PASSWORD: &str = "!sso";

/// What one of the provider's groups gives here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GroupMapping {
    /// The group's name as the provider's groups claim carries it.
    pub group: String,
    /// The console roles members get.
    #[serde(default)]
    pub roles: Vec<Role>,
    /// The approval groups (users page, `/v1/groups`) members are put in.
    #[serde(default)]
    pub approval_groups: Vec<String>,
}

/// A tenant's connection to its OpenID provider, as an admin sets it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SsoSettings {
    /// The issuer; its discovery document is `<issuer>/.well-known/openid-configuration`.
    #[cfg_attr(feature = "openapi", schema(min_length = 8, max_length = 2048))]
    pub issuer: String,
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 256))]
    pub client_id: String,
    /// Needed the first time; left out, the stored one stays. Kept in the vault, never shown.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 4096))]
    pub client_secret: Option<String>,
    /// Asked for besides `openid` (default `email profile`).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The claim that carries the person's groups, in the ID token or userinfo.
    #[serde(default = "default_groups_claim")]
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub groups_claim: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 200))]
    pub mapping: Vec<GroupMapping>,
    /// The role everyone who signs in gets besides their groups' (none by default).
    #[serde(default)]
    pub default_role: Option<Role>,
    /// Whether a person not yet known becomes a console user at their first sign-in.
    #[serde(default)]
    pub create_users: bool,
    /// Email domains whose people are sent to this provider from the sign-in page.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 20))]
    pub domains: Vec<String>,
    /// Whether everyone but `break_glass` must sign in through the provider.
    #[serde(default)]
    pub required: bool,
    /// The local admin who may still sign in with a password when `required`.
    #[serde(default)]
    pub break_glass: Option<String>,
}

fn default_scopes() -> Vec<String> {
    vec!["email".into(), "profile".into()]
}

fn default_groups_claim() -> String {
    "groups".into()
}

/// A tenant's connection as stored, without its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SsoConnection {
    pub issuer: String,
    pub client_id: String,
    /// The vault secret holding the client secret.
    pub client_secret_name: String,
    pub scopes: Vec<String>,
    pub groups_claim: String,
    pub mapping: Vec<GroupMapping>,
    pub default_role: Option<Role>,
    pub create_users: bool,
    pub domains: Vec<String>,
    pub required: bool,
    pub break_glass: Option<String>,
    pub updated_at: DateTime<Utc>,
}

impl SsoConnection {
    /// The roles and approval groups the mapping gives these groups.
    pub fn grants(&self, groups: &[String]) -> (Vec<Role>, Vec<String>) {
        let mut roles: Vec<Role> = self.default_role.into_iter().collect();
        let mut approval = Vec::new();
        for m in self.mapping.iter().filter(|m| groups.contains(&m.group)) {
            roles.extend(&m.roles);
            approval.extend(m.approval_groups.iter().cloned());
        }
        roles.sort();
        roles.dedup();
        approval.sort();
        approval.dedup();
        (roles, approval)
    }

    /// Every approval group the mapping names (the ones a sign-in keeps in step).
    fn managed_groups(&self) -> Vec<String> {
        let mut all: Vec<String> = self.mapping.iter().flat_map(|m| m.approval_groups.clone()).collect();
        all.sort();
        all.dedup();
        all
    }
}

fn invalid(code: &'static str, message: impl Into<String>) -> Error {
    Error::invalid(code, message)
}

fn token_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

impl SsoSettings {
    /// Checks the settings' shape; what needs the tenant's rows is checked in [`put_in`].
    pub fn check(&mut self) -> Result<url::Url> {
        self.issuer = self.issuer.trim().trim_end_matches('/').to_string();
        let url = url::Url::parse(&self.issuer)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some() && u.query().is_none())
            .ok_or_else(|| {
                invalid("invalid_issuer", "the issuer is the provider's https:// URL, such as https://login.example.com/realms/acme")
            })?;
        if !token_like(&self.client_id) {
            return Err(invalid(
                "invalid_client_id",
                "the client id is 1 to 256 printable characters without spaces",
            ));
        }
        if self.client_secret.as_ref().is_some_and(|s| s.is_empty() || s.len() > 4096) {
            return Err(invalid("invalid_client_secret", "the client secret is 1 to 4096 characters"));
        }
        if self.scopes.len() > 20 || !self.scopes.iter().all(|s| token_like(s)) {
            return Err(invalid("invalid_scopes", "at most 20 scopes, each a word without spaces or quotes"));
        }
        if !token_like(&self.groups_claim) || self.groups_claim.len() > 64 {
            return Err(invalid(
                "invalid_groups_claim",
                "the groups claim is a claim's name, such as `groups`",
            ));
        }
        self.check_mapping()?;
        self.check_domains()?;
        if self.required && self.break_glass.is_none() {
            return Err(invalid(
                "break_glass_needed",
                "requiring single sign-on needs a break-glass local admin (`break_glass`), so an outage at the provider cannot lock the tenant out",
            ));
        }
        Ok(url)
    }

    fn check_mapping(&self) -> Result<()> {
        if self.mapping.len() > 200 {
            return Err(invalid("invalid_mapping", "at most 200 group mappings"));
        }
        for m in &self.mapping {
            if m.group.trim().is_empty() || m.group.len() > 256 {
                return Err(invalid(
                    "invalid_mapping",
                    "each mapping names the provider's group (1 to 256 characters)",
                ));
            }
            if m.roles.is_empty() && m.approval_groups.is_empty() {
                return Err(invalid(
                    "invalid_mapping",
                    format!("the mapping for `{}` gives neither a role nor an approval group", m.group),
                ));
            }
        }
        Ok(())
    }

    fn check_domains(&mut self) -> Result<()> {
        for d in &mut self.domains {
            *d = d.trim().trim_start_matches('@').to_ascii_lowercase();
        }
        self.domains.sort();
        self.domains.dedup();
        let ok = |d: &String| {
            d.contains('.')
                && d.len() <= 253
                && d.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        };
        if self.domains.len() > 20 || !self.domains.iter().all(ok) {
            return Err(invalid("invalid_domains", "at most 20 email domains, such as `example.com`"));
        }
        Ok(())
    }
}

const COLUMNS: &str = "issuer, client_id, secret_name, scopes, groups_claim, mapping, default_role, \
     create_users, required, break_glass, updated_at";

fn from_row(r: &crate::sql::Row, domains: Vec<String>) -> Result<SsoConnection> {
    let scopes: String = r.get(3)?;
    let mapping: String = r.get(5)?;
    let role: Option<String> = r.get(6)?;
    Ok(SsoConnection {
        issuer: r.get(0)?,
        client_id: r.get(1)?,
        client_secret_name: r.get(2)?,
        scopes: scopes.split_whitespace().map(str::to_string).collect(),
        groups_claim: r.get(4)?,
        mapping: serde_json::from_str(&mapping)
            .map_err(|e| Error::internal("corrupt_row", format!("an SSO mapping does not read: {e}")))?,
        default_role: role.as_deref().and_then(Role::parse),
        create_users: r.get::<i64>(7)? != 0,
        required: r.get::<i64>(8)? != 0,
        break_glass: r.get(9)?,
        domains,
        updated_at: r.get(10)?,
    })
}

/// The tenant's connection, if it has one.
pub(crate) async fn get(store: &Store, tenant: &TenantId) -> Result<Option<SsoConnection>> {
    let sql = format!("SELECT {COLUMNS} FROM sso_connections WHERE tenant_id = ?");
    let rows = store.rows(&sql, &[tenant]).await?;
    let Some(r) = rows.first() else { return Ok(None) };
    let domains: Vec<(String,)> =
        store.all("SELECT domain FROM sso_domains WHERE tenant_id = ? ORDER BY domain", &[tenant]).await?;
    Ok(Some(from_row(r, domains.into_iter().map(|d| d.0).collect())?))
}

/// The tenant's connection, read inside a transaction.
pub(crate) fn get_in(c: &dyn Tx, tenant: &TenantId) -> Result<Option<SsoConnection>> {
    let sql = format!("SELECT {COLUMNS} FROM sso_connections WHERE tenant_id = ?");
    let Some(r) = c.row(&sql, &[&tenant.as_str()])? else { return Ok(None) };
    let domains = c
        .rows("SELECT domain FROM sso_domains WHERE tenant_id = ? ORDER BY domain", &[&tenant.as_str()])?
        .iter()
        .map(|d| d.get(0))
        .collect::<std::result::Result<_, _>>()?;
    Ok(Some(from_row(&r, domains)?))
}

/// The tenant an email domain leads to.
pub(crate) async fn tenant_for_domain(store: &Store, domain: &str) -> Result<Option<TenantId>> {
    let row: Option<(String,)> =
        store.opt("SELECT tenant_id FROM sso_domains WHERE domain = ?", &[&domain]).await?;
    Ok(row.map(|r| TenantId::from_db(r.0)))
}

/// Stores the tenant's connection (replacing one), its domains, and records the change.
pub(crate) fn put_in(c: &dyn Tx, tenant: &TenantId, s: &SsoSettings, by: &str, via: Transport) -> Result<()> {
    check_break_glass(c, tenant, s)?;
    check_approval_groups(c, tenant, s)?;
    let had = c.row("SELECT 1 FROM sso_connections WHERE tenant_id = ?", &[&tenant.as_str()])?.is_some();
    if !had && s.client_secret.is_none() {
        return Err(invalid(
            "client_secret_needed",
            "give the client secret the provider issued (`client_secret`)",
        ));
    }
    c.exec("DELETE FROM sso_connections WHERE tenant_id = ?", &[&tenant.as_str()])?;
    let mapping = serde_json::to_string(&s.mapping).expect("a mapping serializes");
    c.exec(
        "INSERT INTO sso_connections (tenant_id, issuer, client_id, secret_name, scopes, groups_claim, mapping, \
         default_role, create_users, required, break_glass, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            &tenant.as_str(),
            &s.issuer,
            &s.client_id,
            &CLIENT_SECRET_NAME,
            &s.scopes.join(" "),
            &s.groups_claim,
            &mapping,
            &s.default_role.map(|r| r.as_str()),
            &i64::from(s.create_users),
            &i64::from(s.required),
            &s.break_glass,
            &stored::ts(Utc::now()),
        ],
    )?;
    put_domains(c, tenant, &s.domains)?;
    let detail = json!({ "sso": s.issuer, "change": if had { "replaced" } else { "created" }, "required": s.required });
    activity::append(
        c,
        NewEntry::new(tenant, by, Kind::Settings).via(via).verdict(Verdict::Changed).detail(detail),
    )?;
    Ok(())
}

fn put_domains(c: &dyn Tx, tenant: &TenantId, domains: &[String]) -> Result<()> {
    c.exec("DELETE FROM sso_domains WHERE tenant_id = ?", &[&tenant.as_str()])?;
    for d in domains {
        c.exec("INSERT INTO sso_domains (domain, tenant_id) VALUES (?, ?)", &[d, &tenant.as_str()]).map_err(
            |e| {
                if e.is_unique_violation() {
                    Error::Conflict {
                        code: "domain_taken",
                        message: format!(
                            "another tenant's sign-in already uses the domain `{d}`; leave it out"
                        ),
                    }
                } else {
                    e.into()
                }
            },
        )?;
    }
    Ok(())
}

fn check_break_glass(c: &dyn Tx, tenant: &TenantId, s: &SsoSettings) -> Result<()> {
    let Some(name) = &s.break_glass else { return Ok(()) };
    let sql = "SELECT roles, password_hash FROM console_users WHERE tenant_id = ? AND username = ?";
    let row = c.row(sql, &[&tenant.as_str(), name])?;
    let local_admin = match row {
        Some(r) => {
            let (roles, hash): (String, String) = (r.get(0)?, r.get(1)?);
            roles.split(',').any(|r| r == "admin") && hash != NO_PASSWORD
        }
        None => false,
    };
    if local_admin {
        Ok(())
    } else {
        Err(invalid(
            "invalid_break_glass",
            format!("`{name}` is not a local admin of this tenant (with a password); name one"),
        ))
    }
}

fn check_approval_groups(c: &dyn Tx, tenant: &TenantId, s: &SsoSettings) -> Result<()> {
    for m in &s.mapping {
        for g in &m.approval_groups {
            let sql = "SELECT 1 FROM user_groups WHERE tenant_id = ? AND name = ?";
            if c.row(sql, &[&tenant.as_str(), g])?.is_none() {
                return Err(invalid(
                    "unknown_group",
                    format!(
                        "the mapping for `{}` names the approval group `{g}`, which does not exist; create it first",
                        m.group
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Removes the tenant's connection and domains; people bound to it keep their accounts but
/// cannot sign in until it is set again.
pub(crate) fn delete_in(c: &dyn Tx, tenant: &TenantId, by: &str, via: Transport) -> Result<()> {
    let n = c.exec("DELETE FROM sso_connections WHERE tenant_id = ?", &[&tenant.as_str()])?;
    if n == 0 {
        return Err(Error::NotFound { what: "single sign-on connection" });
    }
    c.exec("DELETE FROM sso_domains WHERE tenant_id = ?", &[&tenant.as_str()])?;
    let detail = json!({ "sso": "removed" });
    activity::append(
        c,
        NewEntry::new(tenant, by, Kind::Settings).via(via).verdict(Verdict::Changed).detail(detail),
    )?;
    Ok(())
}

/// Whether `user` must sign in through the provider (the tenant requires it and they are
/// not its break-glass admin).
pub(crate) async fn password_refused(store: &Store, user: &ConsoleUser) -> Result<bool> {
    let sql = "SELECT required, break_glass FROM sso_connections WHERE tenant_id = ?";
    let row: Option<(i64, Option<String>)> = store.opt(sql, &[&user.tenant_id]).await?;
    Ok(row.is_some_and(|(required, bg)| required != 0 && bg.as_deref() != Some(user.username.as_str())))
}

/// A sign-in in flight.
pub(crate) struct Login {
    pub tenant: TenantId,
    pub browser_hash: String,
    pub nonce: String,
    pub verifier: String,
    pub next: String,
}

/// Records a sign-in in flight (and forgets the ones that ran out).
pub(crate) fn begin_in(c: &dyn Tx, state_hash: &str, l: &Login) -> Result<()> {
    let now = Utc::now();
    c.exec("DELETE FROM sso_logins WHERE expires_at <= ?", &[&stored::ts(now)])?;
    c.exec(
        "INSERT INTO sso_logins (state_hash, tenant_id, browser_hash, nonce, verifier, next, expires_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[
            &state_hash,
            &l.tenant.as_str(),
            &l.browser_hash,
            &l.nonce,
            &l.verifier,
            &l.next,
            &stored::ts(now + chrono::Duration::minutes(LOGIN_MINUTES)),
        ],
    )?;
    Ok(())
}

/// Takes the live sign-in whose state hashes to `state_hash`: it is gone after this.
pub(crate) fn take_in(c: &dyn Tx, state_hash: &str) -> Result<Option<Login>> {
    let row = c.row(
        "DELETE FROM sso_logins WHERE state_hash = ? RETURNING tenant_id, browser_hash, nonce, verifier, next, expires_at",
        &[&state_hash],
    )?;
    let Some(r) = row else { return Ok(None) };
    let expires: DateTime<Utc> = r.get(5)?;
    if expires <= Utc::now() {
        return Ok(None);
    }
    Ok(Some(Login {
        tenant: TenantId::from_db(r.get::<String>(0)?),
        browser_hash: r.get(1)?,
        nonce: r.get(2)?,
        verifier: r.get(3)?,
        next: r.get(4)?,
    }))
}

/// Who the provider vouched for, with the groups it gave.
pub struct Person<'a> {
    pub issuer: &'a str,
    pub subject: &'a str,
    pub email: Option<&'a str>,
    pub groups: &'a [String],
}

/// The actor the provider's changes are recorded under.
pub fn idp_actor(issuer: &str) -> String {
    let host = url::Url::parse(issuer).ok().and_then(|u| u.host_str().map(str::to_string));
    format!("sso:{}", host.unwrap_or_else(|| issuer.to_string()))
}

/// Signs `p` in to `tenant`: finds their user by (issuer, subject), or creates one when the
/// connection allows; gives them the roles and approval groups their groups map to now.
/// Refused, with nothing written, when their groups give no role. Their id and username.
pub(crate) fn sign_in_in(
    c: &dyn Tx,
    tenant: &TenantId,
    conn: &SsoConnection,
    p: &Person<'_>,
) -> Result<(UserId, String)> {
    let (roles, approval) = conn.grants(p.groups);
    if roles.is_empty() {
        return Err(Error::Forbidden {
            code: "sso_no_role",
            message: format!(
                "your groups at the identity provider ({}) give no console role here; ask an admin to map one of them",
                if p.groups.is_empty() { "none".to_string() } else { p.groups.join(", ") }
            ),
        });
    }
    let actor = idp_actor(p.issuer);
    // Two first sign-ins of one person take turns on PostgreSQL, so the second finds the
    // user the first created instead of creating another.
    crate::sql::lock_key(c, &["sso identity", tenant.as_str(), p.issuer, p.subject])?;
    let found = bound_user(c, tenant, p)?;
    let user = match found {
        Some(id) => {
            let id = UserId::from_db(id);
            if deactivated_in(c, &id)? {
                return Err(Error::Forbidden {
                    code: "sso_deactivated",
                    message: "your company's directory deactivated your account here; ask an admin".into(),
                });
            }
            keep_roles(c, tenant, &id, &roles, &actor)?;
            let now = stored::ts(Utc::now());
            c.exec(
                "UPDATE user_identities SET email = ?, last_seen_at = ? WHERE tenant_id = ? AND issuer = ? AND subject = ?",
                &[&p.email, &now, &tenant.as_str(), &p.issuer, &p.subject],
            )?;
            id
        }
        None if conn.create_users => create_in(c, tenant, p, &roles, &actor)?,
        None => {
            return Err(Error::Forbidden {
                code: "sso_not_provisioned",
                message: "no console user is bound to your identity provider account here, and this tenant does not create them at sign-in; ask an admin".into(),
            });
        }
    };
    for g in conn.managed_groups() {
        let exists =
            c.row("SELECT 1 FROM user_groups WHERE tenant_id = ? AND name = ?", &[&tenant.as_str(), &g])?;
        if exists.is_some() {
            crate::domain::groups::set_member(c, tenant, (&g, &user), approval.contains(&g), &actor)?;
        }
    }
    let name: String = c
        .row("SELECT username FROM console_users WHERE id = ?", &[&user.as_str()])?
        .ok_or(Error::NotFound { what: "console user" })?
        .get(0)?;
    Ok((user, name))
}

/// The user `p` is bound to: by (issuer, subject), or, at a first sign-in, the user a
/// directory provisioned with this subject as its externalId (SCIM), bound now.
fn bound_user(c: &dyn Tx, tenant: &TenantId, p: &Person<'_>) -> Result<Option<String>> {
    let sql = "SELECT user_id FROM user_identities WHERE tenant_id = ? AND issuer = ? AND subject = ?";
    if let Some(r) = c.row(sql, &[&tenant.as_str(), &p.issuer, &p.subject])? {
        return Ok(Some(r.get(0)?));
    }
    let Some(u) = by_external_id_in(c, tenant, p.subject)? else { return Ok(None) };
    bind(c, tenant, p, &u)?;
    Ok(Some(u.as_str().to_string()))
}

/// Binds `p` to a user the directory provisioned.
fn bind(c: &dyn Tx, tenant: &TenantId, p: &Person<'_>, user: &UserId) -> Result<()> {
    let now = stored::ts(Utc::now());
    c.exec(
        "INSERT INTO user_identities (tenant_id, issuer, subject, user_id, email, created_at, last_seen_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[&tenant.as_str(), &p.issuer, &p.subject, &user.as_str(), &p.email, &now, &now],
    )?;
    Ok(())
}

fn keep_roles(c: &dyn Tx, tenant: &TenantId, user: &UserId, roles: &[Role], actor: &str) -> Result<()> {
    let sql = "SELECT roles FROM console_users WHERE id = ? AND tenant_id = ?";
    let now: String = c
        .row(sql, &[&user.as_str(), &tenant.as_str()])?
        .ok_or(Error::NotFound { what: "console user" })?
        .get(0)?;
    let want = roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",");
    if now != want {
        crate::domain::users::replace_roles(c, tenant, user, roles, actor)?;
    }
    Ok(())
}

fn create_in(c: &dyn Tx, tenant: &TenantId, p: &Person<'_>, roles: &[Role], actor: &str) -> Result<UserId> {
    let user = ConsoleUser {
        id: UserId::generate(),
        tenant_id: tenant.clone(),
        username: free_username(c, p)?,
        roles: roles.to_vec(),
        created_at: Utc::now(),
    };
    crate::domain::users::insert_user(c, &user, NO_PASSWORD, Some(actor))?;
    let now = stored::ts(user.created_at);
    c.exec(
        "INSERT INTO user_identities (tenant_id, issuer, subject, user_id, email, created_at, last_seen_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[&tenant.as_str(), &p.issuer, &p.subject, &user.id.as_str(), &p.email, &now, &now],
    )?;
    Ok(user.id)
}

/// A username for a new user: their email if it is a free, valid username, else one made
/// from their subject. Never an existing user's.
fn free_username(c: &dyn Tx, p: &Person<'_>) -> Result<String> {
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= crate::domain::users::MAX_USERNAME_LEN
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-@".contains(&b))
            && !policy::activity::Actor::is_reserved(s)
    };
    let digest = crate::secrets::hash_token(&format!("{}\n{}", p.issuer, p.subject));
    let mut candidates: Vec<String> =
        p.email.map(str::to_ascii_lowercase).filter(|e| valid(e)).into_iter().collect();
    candidates.push(format!("sso-{}", &digest[..12]));
    candidates.push(format!("sso-{}", &digest[..24]));
    for name in candidates {
        if c.row("SELECT 1 FROM console_users WHERE username = ?", &[&name])?.is_none() {
            return Ok(name);
        }
    }
    Err(Error::Conflict {
        code: "username_taken",
        message: "no free username for this person; ask an admin".into(),
    })
}

/// A console user bound to a provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Identity {
    pub user_id: UserId,
    pub issuer: String,
    pub email: Option<String>,
    pub last_seen_at: DateTime<Utc>,
}

/// The tenant's users bound to a provider.
pub(crate) async fn identities(store: &Store, tenant: &TenantId) -> Result<Vec<Identity>> {
    let sql = "SELECT user_id, issuer, email, last_seen_at FROM user_identities WHERE tenant_id = ?";
    let rows: Vec<(String, String, Option<String>, DateTime<Utc>)> = store.all(sql, &[tenant]).await?;
    Ok(rows
        .into_iter()
        .map(|(u, issuer, email, last_seen_at)| Identity {
            user_id: UserId::from_db(u),
            issuer,
            email,
            last_seen_at,
        })
        .collect())
}

/// Whether the user is one a directory deactivated over SCIM (who may not sign in).
pub(crate) fn deactivated_in(c: &dyn Tx, user: &UserId) -> Result<bool> {
    let row = c.row("SELECT active FROM scim_users WHERE user_id = ?", &[&user.as_str()])?;
    Ok(row.map(|r| r.get::<i64>(0)).transpose()? == Some(0))
}

/// The user a directory provisioned with this `externalId` (the provider's subject), for a
/// first single sign-on to bind to.
pub(crate) fn by_external_id_in(c: &dyn Tx, tenant: &TenantId, external: &str) -> Result<Option<UserId>> {
    let sql = "SELECT user_id FROM scim_users WHERE tenant_id = ? AND external_id = ?";
    Ok(c.row(sql, &[&tenant.as_str(), &external])?
        .map(|r| r.get::<String>(0))
        .transpose()?
        .map(UserId::from_db))
}
