//! SCIM provisioning as operations (docs/sso.md#provisioning): the tenant's token, and each
//! request on users and groups in one transaction, recorded with the actor `scim:<prefix>`.
//!
//! Guarantees: a request names only its token's tenant's resources (another tenant's id is
//! `not found`); a PATCH applies all its operations or none; a refused request writes nothing.

use serde_json::Value;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::domain::scim::{self, Stored, Table, filter, patch};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::secrets;

/// Who a SCIM request acts as: its token's tenant and the actor its changes are recorded as.
#[derive(Clone, Debug)]
pub struct ScimCaller {
    pub tenant: TenantId,
    pub actor: String,
}

/// A page of a list: the total matching, and this page's resources.
pub struct ScimPage {
    pub total: usize,
    pub items: Vec<Stored>,
}

impl Gateway {
    /// Issues the tenant's SCIM token (replacing one); the secret is returned once.
    pub async fn create_scim_token(&self, tenant: &TenantId, actor: &str, via: Transport) -> Result<String> {
        let prefix = secrets::random_password()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(8)
            .collect::<String>()
            .to_lowercase();
        let token = format!("nvs_{prefix}_{}", secrets::random_password());
        let hash = secrets::hash_token(&token);
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| scim::put_token_in(c, &t, (&prefix, &hash), &a, via)).await?;
        Ok(token)
    }

    /// The tenant's SCIM token: its prefix and when it was issued.
    pub async fn scim_token_info(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<(String, chrono::DateTime<chrono::Utc>)>> {
        scim::token_info(&self.store, tenant).await
    }

    /// The SCIM caller a bearer token is, or `None`.
    pub async fn scim_caller(&self, token: &str) -> Result<Option<ScimCaller>> {
        let found = scim::token_tenant(&self.store, &secrets::hash_token(token)).await?;
        Ok(found.map(|(tenant, prefix)| ScimCaller { tenant, actor: format!("scim:{prefix}") }))
    }

    /// A page of users or groups matching `filter`, `start` counted from 1 as SCIM does.
    pub async fn scim_list(
        &self,
        who: &ScimCaller,
        table: Table,
        query: Option<&str>,
        (start, count): (usize, usize),
    ) -> Result<ScimPage> {
        let count = count.min(scim::MAX_PAGE);
        let offset = start.max(1) - 1;
        let parsed = query
            .map(filter::parse)
            .transpose()
            .map_err(|e| scim::scim_err(400, Some("invalidFilter"), e))?;
        let key = match table {
            Table::Users => "userName",
            Table::Groups => "displayName",
        };
        match &parsed {
            None => self.scim_page(who, table, None, (offset, count)).await,
            Some(f) if f.exact(key).is_some() => {
                self.scim_page(who, table, f.exact(key), (offset, count)).await
            }
            Some(f) => {
                let all = scim::all(&self.store, table, &who.tenant).await?;
                let hits: Vec<Stored> = all.into_iter().filter(|s| f.matches(&with_id(s))).collect();
                let total = hits.len();
                Ok(ScimPage { total, items: hits.into_iter().skip(offset).take(count).collect() })
            }
        }
    }

    async fn scim_page(
        &self,
        who: &ScimCaller,
        table: Table,
        exact: Option<&str>,
        page: (usize, usize),
    ) -> Result<ScimPage> {
        let (total, items) = scim::page(&self.store, (table, &who.tenant), exact, page).await?;
        Ok(ScimPage { total, items })
    }

    /// One user or group.
    pub async fn scim_get(&self, who: &ScimCaller, table: Table, id: &str) -> Result<Stored> {
        let (t, id) = (who.tenant.clone(), id.to_string());
        let what = not_found(table);
        self.write(move |c| scim::one_in(c, table, &t, &id)).await?.ok_or(Error::NotFound { what })
    }

    /// Creates a user or group from the document the directory sent.
    pub async fn scim_create(&self, who: &ScimCaller, table: Table, doc: Value) -> Result<Stored> {
        let doc = scim::clean(doc)?;
        let (t, a) = (who.tenant.clone(), who.actor.clone());
        let made = self
            .write(move |c| match table {
                Table::Users => scim::create_user_in(c, &t, doc.clone(), &a),
                Table::Groups => scim::create_group_in(c, &t, doc.clone(), &a),
            })
            .await?;
        self.credentials_changed();
        Ok(made)
    }

    /// Replaces a user or group (PUT).
    pub async fn scim_replace(&self, who: &ScimCaller, table: Table, id: &str, doc: Value) -> Result<Stored> {
        let doc = scim::clean(doc)?;
        let (t, a, id) = (who.tenant.clone(), who.actor.clone(), id.to_string());
        let done = self.write(move |c| replace_in(c, table, (&t, &id), doc.clone(), &a)).await?;
        self.credentials_changed();
        Ok(done)
    }

    /// Applies a PatchOp's operations to a user or group, all or none.
    pub async fn scim_patch(
        &self,
        who: &ScimCaller,
        table: Table,
        id: &str,
        ops: Vec<patch::Operation>,
    ) -> Result<Stored> {
        let (t, a, id) = (who.tenant.clone(), who.actor.clone(), id.to_string());
        let what = not_found(table);
        let done = self
            .write(move |c| {
                let now = scim::one_in(c, table, &t, &id)?.ok_or(Error::NotFound { what })?;
                let mut doc = now.doc.clone();
                patch::apply(&mut doc, &ops).map_err(|e| scim::scim_err(400, Some(e.scim_type), e.detail))?;
                replace_in(c, table, (&t, &id), scim::clean(doc)?, &a)
            })
            .await?;
        self.credentials_changed();
        Ok(done)
    }

    /// Deletes a user (deactivated; their console user stays for the trails) or a group.
    pub async fn scim_delete(&self, who: &ScimCaller, table: Table, id: &str) -> Result<()> {
        let (t, a, id) = (who.tenant.clone(), who.actor.clone(), id.to_string());
        self.write(move |c| match table {
            Table::Users => scim::delete_user_in(c, &t, &id, &a),
            Table::Groups => scim::delete_group_in(c, &t, &id, &a),
        })
        .await?;
        self.credentials_changed();
        Ok(())
    }
}

fn not_found(table: Table) -> &'static str {
    match table {
        Table::Users => "SCIM user",
        Table::Groups => "SCIM group",
    }
}

fn replace_in(
    c: &dyn crate::sql::Tx,
    table: Table,
    (t, id): (&TenantId, &str),
    doc: Value,
    actor: &str,
) -> Result<Stored> {
    match table {
        Table::Users => scim::replace_user_in(c, t, id, doc, actor),
        Table::Groups => scim::replace_group_in(c, t, id, doc, actor),
    }
}

/// The document with its `id`, for filters that name it.
fn with_id(s: &Stored) -> Value {
    let mut d = s.doc.clone();
    if let Some(o) = d.as_object_mut() {
        o.insert("id".into(), Value::String(s.id.clone()));
    }
    d
}
