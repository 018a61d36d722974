//! Resolving credentials as operations: a token to the caller it belongs to (agent key, company
//! key or personal token), through the cache where invalidation wins, and the signal a stream
//! holding a credential watches to check it again.

use chrono::{DateTime, Utc};

use crate::Gateway;
use crate::domain::credentials::{self, CachedKey, Credential, LAST_USED_RESOLUTION_SECS, Person};
use crate::domain::keys::KeyTable;
use crate::domain::principal::Subject;
use crate::domain::users::Role;
use crate::error::Result;
use crate::ids::{KeyId, TenantId, TokenId};
use crate::secrets;

impl Gateway {
    /// The caller a token belongs to, or `None` for a malformed, unknown, revoked or expired
    /// one. Does not look at an agent profile's status: revocation is a policy decision.
    pub async fn credential(&self, token: &str) -> Result<Option<Credential>> {
        if token.starts_with(secrets::USER_TOKEN_PREFIX) {
            return Ok(self.person(token).await?.map(Credential::Person));
        }
        let Some(prefix) = secrets::split_token(token) else { return Ok(None) };
        let hash = secrets::hash_token(token);
        let entry = match self.auth_cache.get(&hash) {
            Some(e) => e,
            None => {
                let generation = self.auth_cache.generation();
                let Some(e) = self.read_key(prefix, &hash).await? else { return Ok(None) };
                self.cache_fill_pause().await;
                self.auth_cache.insert(generation, hash.clone(), e.clone());
                e
            }
        };
        let now = Utc::now();
        if entry.expires_at.is_some_and(|e| e <= now) {
            return Ok(None);
        }
        if entry.last_used_at.is_none_or(|l| (now - l).num_seconds() >= LAST_USED_RESOLUTION_SECS) {
            self.auth_cache.update(&hash, |e| e.last_used_at = Some(now));
            self.touch(entry.table.name(), entry.id.clone(), now);
        }
        Ok(Some(entry.credential))
    }

    /// The agent a scoped key belongs to, if the token is one.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Subject>> {
        Ok(match self.credential(token).await? {
            Some(Credential::Agent(s)) => Some(s),
            _ => None,
        })
    }

    /// The tenant whose company key this is, if the token is one.
    pub async fn authenticate_company_key(&self, token: &str) -> Result<Option<TenantId>> {
        Ok(match self.credential(token).await? {
            Some(Credential::Company { tenant, .. }) => Some(tenant),
            _ => None,
        })
    }

    /// A key by its prefix, in whichever table holds it, if its hash matches.
    async fn read_key(&self, prefix: &str, hash: &str) -> Result<Option<CachedKey>> {
        for table in [KeyTable::Agent, KeyTable::Company] {
            let row = credentials::key_row(&self.store, table, prefix).await?;
            let Some((id, tenant, profile, stored, last_used_at, expires_at, connection, client)) = row
            else {
                continue;
            };
            if !secrets::digest_eq(hash, &stored) {
                return Ok(None);
            }
            let (tenant, key) = (TenantId::from_db(tenant), KeyId::from_db(id.clone()));
            let credential = match profile {
                Some(p) => Credential::Agent(Subject {
                    tenant,
                    profile: crate::ProfileId::from_db(p),
                    key,
                    via: crate::audit::activity::Transport::Http,
                    connection: connection.map(|c| crate::domain::principal::Connected {
                        id: crate::ids::ConnectionId::from_db(c),
                        client: client.unwrap_or_default(),
                    }),
                }),
                None => Credential::Company { tenant, key },
            };
            return Ok(Some(CachedKey { credential, table, id, expires_at, last_used_at }));
        }
        Ok(None)
    }

    /// Records that a credential was used; best effort and off the caller's path.
    fn touch(&self, table: &'static str, id: String, now: DateTime<Utc>) {
        let gw = self.clone();
        tokio::spawn(async move {
            let _ = gw.write(move |c| credentials::touch_in(c, table, &id, now)).await;
        });
    }

    /// A personal API token's user, with the roles the token may use.
    async fn person(&self, token: &str) -> Result<Option<Person>> {
        let Some(prefix) = secrets::split_user_token(token) else { return Ok(None) };
        let row = credentials::token_row(&self.store, prefix).await?;
        let Some((id, tenant, user, stored, roles, groups, last_used)) = row else { return Ok(None) };
        if !secrets::digest_eq(&secrets::hash_token(token), &stored) {
            return Ok(None);
        }
        let mut user = match self.user(&TenantId::from_db(tenant), &crate::UserId::from_db(user)).await {
            Ok(u) => u,
            Err(crate::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let granted: Vec<Role> = roles.split(',').filter_map(Role::parse).collect();
        user.roles.retain(|r| granted.contains(r));
        let now = Utc::now();
        if last_used.is_none_or(|l| (now - l).num_seconds() >= LAST_USED_RESOLUTION_SECS) {
            self.touch("user_tokens", id.clone(), now);
        }
        Ok(Some(Person { user, token: TokenId::from_db(id), groups: groups != 0 }))
    }

    /// A receiver that changes whenever some credential may have stopped being valid.
    pub fn credential_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.credential_epoch.subscribe()
    }

    /// Whether the credential row `id` in `table` is unrevoked and unexpired, read from the
    /// database.
    async fn live(&self, table: &'static str, id: String) -> Result<bool> {
        credentials::live(&self.store, table, &id, Utc::now()).await
    }

    /// Whether the agent's key itself still authenticates, whatever its profile's status.
    pub async fn key_is_live(&self, s: &Subject) -> Result<bool> {
        self.live("agent_keys", s.key.to_string()).await
    }

    /// Whether `c` still authenticates and, for an agent, its profile and every ancestor are
    /// active. Reads the database, never a cache.
    pub async fn still_valid(&self, c: &Credential) -> Result<bool> {
        match c {
            Credential::Agent(s) => {
                if !self.key_is_live(s).await? {
                    return Ok(false);
                }
                let links = self.links(&s.tenant, &s.profile).await?;
                Ok(crate::domain::chain::chain_status(&links) == policy::SubjectStatus::Active)
            }
            Credential::Company { key, .. } => self.live("company_keys", key.to_string()).await,
            Credential::Person(p) => self.live("user_tokens", p.token.to_string()).await,
        }
    }
}
