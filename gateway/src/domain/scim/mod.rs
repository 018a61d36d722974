//! SCIM 2.0 provisioning's records (RFC 7643/7644; docs/sso.md#provisioning): a tenant's
//! SCIM token, and each provisioned user and group as the directory sent it, beside the
//! console user and approval group it is.
//!
//! Guarantees:
//! - A SCIM user is a console user; its `userName` is kept as sent (unique in the tenant,
//!   case-insensitively) and the console username is made from it, never another user's.
//! - A SCIM group is an approval group: its members are the approval group's members, and
//!   a group the tenant's single sign-on mapping names gives its members that mapping's
//!   roles, at once.
//! - Deactivating or deleting a user ends their console sessions and personal tokens in the
//!   same transaction and takes their roles and approval groups away, so a vote they cast
//!   stays in its trail but counts only on what they hold now (nothing).
//! - Every change is an activity entry with the actor `scim:<token prefix>`.

pub mod filter;
pub mod patch;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::{TenantId, UserId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
/// The most resources one list answers.
pub const MAX_PAGE: usize = 200;

/// A provisioned user or group as stored: its id, its document (attributes as the directory
/// sent them, without `id`, `schemas` and `meta`), its version and times.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub id: String,
    pub doc: Value,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A SCIM refusal as a gateway error: its status and `scimType` travel in the code.
pub fn scim_err(status: u16, scim_type: Option<&'static str>, detail: impl Into<String>) -> Error {
    Error::Invalid { code: scim_code(status, scim_type), message: detail.into() }
}

/// The gateway error code a SCIM refusal travels as (the server turns it back).
fn scim_code(status: u16, scim_type: Option<&'static str>) -> &'static str {
    match (status, scim_type) {
        (409, _) => "scim_uniqueness",
        (_, Some("invalidFilter")) => "scim_invalid_filter",
        (_, Some("invalidPath")) => "scim_invalid_path",
        (_, Some("noTarget")) => "scim_no_target",
        (_, Some("invalidSyntax")) => "scim_invalid_syntax",
        (_, Some("mutability")) => "scim_mutability",
        _ => "scim_invalid_value",
    }
}

/// The SCIM status and type of a gateway error code made by [`scim_err`].
pub fn scim_type_of(code: &str) -> Option<&'static str> {
    Some(match code {
        "scim_uniqueness" => "uniqueness",
        "scim_invalid_filter" => "invalidFilter",
        "scim_invalid_path" => "invalidPath",
        "scim_no_target" => "noTarget",
        "scim_invalid_syntax" => "invalidSyntax",
        "scim_mutability" => "mutability",
        "scim_invalid_value" => "invalidValue",
        _ => return None,
    })
}

/// A document without what the server owns, its attribute names as sent.
pub fn clean(mut doc: Value) -> Result<Value> {
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| scim_err(400, Some("invalidSyntax"), "the body is a JSON object"))?;
    for owned in ["id", "meta", "schemas"] {
        if let Some(k) = obj.keys().find(|k| k.eq_ignore_ascii_case(owned)).cloned() {
            obj.remove(&k);
        }
    }
    Ok(doc)
}

/// An attribute of a document, its name matched case-insensitively.
pub fn attr<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v)
}

/// The user's `userName`, required: 1 to 256 characters.
pub fn user_name(doc: &Value) -> Result<String> {
    match attr(doc, "userName").and_then(Value::as_str).map(str::trim) {
        Some(n) if !n.is_empty() && n.chars().count() <= 256 => Ok(n.to_string()),
        _ => Err(scim_err(400, Some("invalidValue"), "`userName` is required: 1 to 256 characters")),
    }
}

/// A group's `displayName`, required: 1 to 256 characters.
pub fn display_name(doc: &Value) -> Result<String> {
    match attr(doc, "displayName").and_then(Value::as_str).map(str::trim) {
        Some(n) if !n.is_empty() && n.chars().count() <= 256 => Ok(n.to_string()),
        _ => Err(scim_err(400, Some("invalidValue"), "`displayName` is required: 1 to 256 characters")),
    }
}

/// Whether a user is active (`active` absent means active).
pub fn active(doc: &Value) -> bool {
    attr(doc, "active").and_then(Value::as_bool).unwrap_or(true)
}

/// The `value`s of a group's `members`.
pub fn member_ids(doc: &Value) -> Vec<String> {
    attr(doc, "members")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter().filter_map(|m| attr(m, "value").and_then(Value::as_str).map(str::to_string)).collect()
        })
        .unwrap_or_default()
}

fn stored_row(r: &crate::sql::Row) -> Result<Stored> {
    let doc: String = r.get(1)?;
    Ok(Stored {
        id: r.get(0)?,
        doc: serde_json::from_str(&doc)
            .map_err(|e| Error::internal("corrupt_row", format!("a SCIM document: {e}")))?,
        version: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
    })
}

/// One of the tenant's users or groups (`table` is `scim_users` or `scim_groups`).
pub(crate) fn one_in(c: &dyn Tx, table: Table, tenant: &TenantId, id: &str) -> Result<Option<Stored>> {
    let sql = format!(
        "SELECT {}, doc, version, created_at, updated_at FROM {} WHERE tenant_id = ? AND {} = ?",
        table.id(),
        table.name(),
        table.id()
    );
    c.row(&sql, &[&tenant.as_str(), &id])?.map(|r| stored_row(&r)).transpose()
}

/// Users or groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Users,
    Groups,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Users => "scim_users",
            Table::Groups => "scim_groups",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Table::Users => "user_id",
            Table::Groups => "id",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Table::Users => "user_name_key",
            Table::Groups => "display_key",
        }
    }
}

/// A page of the tenant's users or groups, oldest first: those whose key (lowercased
/// `userName` or `displayName`) is `exact` when given, else all; the total and the page.
pub(crate) async fn page(
    store: &Store,
    (table, tenant): (Table, &TenantId),
    exact: Option<&str>,
    (offset, limit): (usize, usize),
) -> Result<(usize, Vec<Stored>)> {
    let cols = format!("{}, doc, version, created_at, updated_at", table.id());
    let (filter, key) = match exact {
        Some(k) => (format!(" AND {} = ?", table.key()), Some(k.to_lowercase())),
        None => (String::new(), None),
    };
    let count_sql = format!("SELECT COUNT(*) FROM {} WHERE tenant_id = ?{filter}", table.name());
    let page_sql = format!(
        "SELECT {cols} FROM {} WHERE tenant_id = ?{filter} ORDER BY created_at, {} LIMIT ? OFFSET ?",
        table.name(),
        table.id()
    );
    let (limit, offset) = (limit as i64, offset as i64);
    let (total, rows) = match &key {
        Some(k) => (
            store.rows(&count_sql, &[tenant, k]).await?,
            store.rows(&page_sql, &[tenant, k, &limit, &offset]).await?,
        ),
        None => (
            store.rows(&count_sql, &[tenant]).await?,
            store.rows(&page_sql, &[tenant, &limit, &offset]).await?,
        ),
    };
    let total: i64 = total.first().map_or(Ok(0), |r| r.get(0))?;
    Ok((total as usize, rows.iter().map(stored_row).collect::<Result<_>>()?))
}

/// Every one of the tenant's users or groups, for a filter the index cannot answer.
pub(crate) async fn all(store: &Store, table: Table, tenant: &TenantId) -> Result<Vec<Stored>> {
    let sql = format!(
        "SELECT {}, doc, version, created_at, updated_at FROM {} WHERE tenant_id = ? ORDER BY created_at, {}",
        table.id(),
        table.name(),
        table.id()
    );
    store.rows(&sql, &[tenant]).await?.iter().map(stored_row).collect()
}

fn logged(c: &dyn Tx, tenant: &TenantId, actor: &str, verdict: Verdict, detail: Value) -> Result<()> {
    let e = NewEntry::new(tenant, actor, Kind::Console).via(Transport::Http).verdict(verdict).detail(detail);
    activity::append(c, e)?;
    Ok(())
}

/// A console username for a new SCIM user: its `userName` if that is a valid, free one,
/// else one made from it. Never an existing user's.
fn free_username(c: &dyn Tx, user_name: &str) -> Result<String> {
    let lowered = user_name.to_lowercase();
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= crate::domain::users::MAX_USERNAME_LEN
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-@".contains(&b))
            && !policy::activity::Actor::is_reserved(s)
    };
    let digest = crate::secrets::hash_token(&lowered);
    let mut candidates: Vec<String> = Some(lowered).filter(|n| valid(n)).into_iter().collect();
    candidates.push(format!("scim-{}", &digest[..12]));
    candidates.push(format!("scim-{}", &digest[..24]));
    for name in candidates {
        if c.row("SELECT 1 FROM console_users WHERE username = ?", &[&name])?.is_none() {
            return Ok(name);
        }
    }
    Err(scim_err(409, Some("uniqueness"), "no free console username for this userName"))
}

fn unique_user_name(c: &dyn Tx, tenant: &TenantId, key: &str, except: Option<&str>) -> Result<()> {
    let sql = "SELECT user_id FROM scim_users WHERE tenant_id = ? AND user_name_key = ?";
    if let Some(r) = c.row(sql, &[&tenant.as_str(), &key])? {
        let id: String = r.get(0)?;
        if Some(id.as_str()) != except {
            return Err(scim_err(
                409,
                Some("uniqueness"),
                format!("a user with the userName `{key}` exists already"),
            ));
        }
    }
    Ok(())
}

/// Creates a user from `doc`: a console user with no password, and its SCIM record.
pub(crate) fn create_user_in(c: &dyn Tx, tenant: &TenantId, doc: Value, actor: &str) -> Result<Stored> {
    let name = user_name(&doc)?;
    unique_user_name(c, tenant, &name.to_lowercase(), None)?;
    let user = ConsoleUser {
        id: UserId::generate(),
        tenant_id: tenant.clone(),
        username: free_username(c, &name)?,
        roles: Vec::new(),
        created_at: Utc::now(),
    };
    crate::domain::users::insert_user(c, &user, crate::domain::sso::NO_PASSWORD, Some(actor))?;
    let now = stored::ts(user.created_at);
    let sql = "INSERT INTO scim_users (user_id, tenant_id, user_name_key, external_id, doc, active, version, created_at, updated_at) \
               VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)";
    c.exec(
        sql,
        &[
            &user.id.as_str(),
            &tenant.as_str(),
            &name.to_lowercase(),
            &attr(&doc, "externalId").and_then(Value::as_str),
            &doc.to_string(),
            &i64::from(active(&doc)),
            &now,
            &now,
        ],
    )?;
    if !active(&doc) {
        deactivate(c, tenant, &user.id, actor)?;
    }
    one_in(c, Table::Users, tenant, user.id.as_str())?.ok_or(Error::NotFound { what: "SCIM user" })
}

/// Replaces a user's document (PUT, or the result of a PATCH). Deactivating ends their
/// sessions and tokens; reactivating gives back what their groups give.
pub(crate) fn replace_user_in(
    c: &dyn Tx,
    tenant: &TenantId,
    id: &str,
    doc: Value,
    actor: &str,
) -> Result<Stored> {
    let before = one_in(c, Table::Users, tenant, id)?.ok_or(Error::NotFound { what: "SCIM user" })?;
    let name = user_name(&doc)?;
    unique_user_name(c, tenant, &name.to_lowercase(), Some(id))?;
    let sql = "UPDATE scim_users SET user_name_key = ?, external_id = ?, doc = ?, active = ?, version = version + 1, \
               updated_at = ? WHERE tenant_id = ? AND user_id = ?";
    c.exec(
        sql,
        &[
            &name.to_lowercase(),
            &attr(&doc, "externalId").and_then(Value::as_str),
            &doc.to_string(),
            &i64::from(active(&doc)),
            &stored::ts(Utc::now()),
            &tenant.as_str(),
            &id,
        ],
    )?;
    let user = UserId::from_db(id.to_string());
    match (active(&before.doc), active(&doc)) {
        (true, false) => deactivate(c, tenant, &user, actor)?,
        (false, true) => {
            logged(c, tenant, actor, Verdict::Changed, json!({ "user": name, "change": "reactivated" }))?;
            regrant(c, tenant, &[user], actor)?;
        }
        _ => logged(c, tenant, actor, Verdict::Changed, json!({ "user": name, "change": "updated" }))?,
    }
    one_in(c, Table::Users, tenant, id)?.ok_or(Error::NotFound { what: "SCIM user" })
}

/// Deletes a user's SCIM record and deactivates the console user (who stays, without roles,
/// for the trails that name them).
pub(crate) fn delete_user_in(c: &dyn Tx, tenant: &TenantId, id: &str, actor: &str) -> Result<()> {
    let n = c.exec("DELETE FROM scim_users WHERE tenant_id = ? AND user_id = ?", &[&tenant.as_str(), &id])?;
    if n == 0 {
        return Err(Error::NotFound { what: "SCIM user" });
    }
    c.exec("DELETE FROM scim_group_members WHERE tenant_id = ? AND user_id = ?", &[&tenant.as_str(), &id])?;
    deactivate(c, tenant, &UserId::from_db(id.to_string()), actor)
}

/// Ends a user's sessions, personal tokens and Slack link and takes their roles and approval
/// groups.
fn deactivate(c: &dyn Tx, tenant: &TenantId, user: &UserId, actor: &str) -> Result<()> {
    crate::domain::sessions::end_all_in(c, user)?;
    crate::domain::tokens::revoke_all_in(c, user)?;
    crate::domain::slack_links::forget_user_in(c, tenant, user)?;
    crate::domain::users::clear_roles_in(c, tenant, user, actor)?;
    crate::domain::groups::leave_all_in(c, tenant, user, actor)?;
    logged(c, tenant, actor, Verdict::Revoked, json!({ "user": user.as_str(), "change": "deactivated" }))
}

/// Gives each of `users` the roles the tenant's single sign-on mapping gives the SCIM groups
/// they are in (with its default role), and puts them in those groups' approval groups.
/// Without a connection, roles stay as an admin set them.
pub(crate) fn regrant(c: &dyn Tx, tenant: &TenantId, users: &[UserId], actor: &str) -> Result<()> {
    let conn = crate::domain::sso::get_in(c, tenant)?;
    for user in users {
        let row = c.row(
            "SELECT active FROM scim_users WHERE tenant_id = ? AND user_id = ?",
            &[&tenant.as_str(), &user.as_str()],
        )?;
        if row.map(|r| r.get::<i64>(0)).transpose()? == Some(0) {
            continue;
        }
        let groups: Vec<(String, String)> = c
            .rows(
                "SELECT g.display_name, g.group_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id \
                 WHERE m.tenant_id = ? AND m.user_id = ?",
                &[&tenant.as_str(), &user.as_str()],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect::<Result<_>>()?;
        if let Some(conn) = &conn {
            let names: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
            let (roles, _) = conn.grants(&names);
            crate::domain::users::set_roles_in(c, tenant, user, &roles, actor)?;
        }
        for (_, approval) in &groups {
            crate::domain::groups::set_member(c, tenant, (approval, user), true, actor)?;
        }
    }
    Ok(())
}

/// Roles a mapping gives, re-exported for the users page.
pub fn role_names(roles: &[Role]) -> Vec<&'static str> {
    roles.iter().map(|r| r.as_str()).collect()
}

/// An approval group name made from a SCIM `displayName`: lowercase letters, digits, - and _.
fn approval_name(c: &dyn Tx, tenant: &TenantId, display: &str) -> Result<String> {
    let mut base: String = display
        .to_lowercase()
        .chars()
        .map(|ch| if ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_' { ch } else { '-' })
        .collect();
    base = base.trim_matches('-').chars().take(48).collect();
    if base.is_empty() {
        base = "group".into();
    }
    let taken = |n: &str| {
        c.row("SELECT 1 FROM user_groups WHERE tenant_id = ? AND name = ?", &[&tenant.as_str(), &n])
    };
    if taken(&base)?.is_none() {
        return Ok(base);
    }
    for i in 2..1000 {
        let n = format!("{base}-{i}");
        if taken(&n)?.is_none() {
            return Ok(n);
        }
    }
    Err(scim_err(409, Some("uniqueness"), "no free approval group name for this displayName"))
}

fn set_members(c: &dyn Tx, tenant: &TenantId, group_id: &str, doc: &Value, actor: &str) -> Result<()> {
    let wanted = member_ids(doc);
    for m in &wanted {
        let sql = "SELECT 1 FROM scim_users WHERE tenant_id = ? AND user_id = ?";
        if c.row(sql, &[&tenant.as_str(), m])?.is_none() {
            return Err(scim_err(
                400,
                Some("invalidValue"),
                format!("the member `{m}` is not a user of this tenant"),
            ));
        }
    }
    let before: Vec<String> = c
        .rows(
            "SELECT user_id FROM scim_group_members WHERE tenant_id = ? AND group_id = ?",
            &[&tenant.as_str(), &group_id],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect::<std::result::Result<_, _>>()?;
    let approval: String = c
        .row("SELECT group_name FROM scim_groups WHERE id = ?", &[&group_id])?
        .ok_or(Error::NotFound { what: "SCIM group" })?
        .get(0)?;
    for gone in before.iter().filter(|b| !wanted.contains(b)) {
        c.exec("DELETE FROM scim_group_members WHERE group_id = ? AND user_id = ?", &[&group_id, gone])?;
        let u = UserId::from_db(gone.clone());
        crate::domain::groups::set_member(c, tenant, (&approval, &u), false, actor)?;
    }
    for new in wanted.iter().filter(|w| !before.contains(w)) {
        let sql = "INSERT INTO scim_group_members (tenant_id, group_id, user_id) VALUES (?, ?, ?)";
        c.exec(sql, &[&tenant.as_str(), &group_id, new])?;
    }
    let touched: Vec<UserId> = before.iter().chain(&wanted).map(|u| UserId::from_db(u.clone())).collect();
    regrant(c, tenant, &touched, actor)
}

/// Creates a group from `doc`, and the approval group it is.
pub(crate) fn create_group_in(c: &dyn Tx, tenant: &TenantId, doc: Value, actor: &str) -> Result<Stored> {
    let display = display_name(&doc)?;
    unique_display(c, tenant, &display, None)?;
    let approval = approval_name(c, tenant, &display)?;
    crate::domain::groups::create(c, tenant, &approval, actor)?;
    let id = uuid::Uuid::now_v7().simple().to_string();
    let now = stored::ts(Utc::now());
    let sql = "INSERT INTO scim_groups (id, tenant_id, display_name, display_key, group_name, doc, version, created_at, updated_at) \
               VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)";
    c.exec(
        sql,
        &[&id, &tenant.as_str(), &display, &display.to_lowercase(), &approval, &doc.to_string(), &now, &now],
    )?;
    set_members(c, tenant, &id, &doc, actor)?;
    one_in(c, Table::Groups, tenant, &id)?.ok_or(Error::NotFound { what: "SCIM group" })
}

fn unique_display(c: &dyn Tx, tenant: &TenantId, display: &str, except: Option<&str>) -> Result<()> {
    let sql = "SELECT id FROM scim_groups WHERE tenant_id = ? AND display_key = ?";
    if let Some(r) = c.row(sql, &[&tenant.as_str(), &display.to_lowercase()])? {
        let id: String = r.get(0)?;
        if Some(id.as_str()) != except {
            return Err(scim_err(409, Some("uniqueness"), format!("a group `{display}` exists already")));
        }
    }
    Ok(())
}

/// Replaces a group's document (PUT, or a PATCH's result) and its members.
pub(crate) fn replace_group_in(
    c: &dyn Tx,
    tenant: &TenantId,
    id: &str,
    doc: Value,
    actor: &str,
) -> Result<Stored> {
    one_in(c, Table::Groups, tenant, id)?.ok_or(Error::NotFound { what: "SCIM group" })?;
    let display = display_name(&doc)?;
    unique_display(c, tenant, &display, Some(id))?;
    let sql = "UPDATE scim_groups SET display_name = ?, display_key = ?, doc = ?, version = version + 1, updated_at = ? \
               WHERE tenant_id = ? AND id = ?";
    c.exec(
        sql,
        &[
            &display,
            &display.to_lowercase(),
            &doc.to_string(),
            &stored::ts(Utc::now()),
            &tenant.as_str(),
            &id,
        ],
    )?;
    set_members(c, tenant, id, &doc, actor)?;
    one_in(c, Table::Groups, tenant, id)?.ok_or(Error::NotFound { what: "SCIM group" })
}

/// Deletes a group, its approval group (unless a kit names it: then it stays, empty) and
/// what it gave its members.
pub(crate) fn delete_group_in(c: &dyn Tx, tenant: &TenantId, id: &str, actor: &str) -> Result<()> {
    let g = one_in(c, Table::Groups, tenant, id)?.ok_or(Error::NotFound { what: "SCIM group" })?;
    let empty = json!({ "displayName": display_name(&g.doc)?, "members": [] });
    set_members(c, tenant, id, &empty, actor)?;
    let approval: String =
        c.row("SELECT group_name FROM scim_groups WHERE id = ?", &[&id])?.expect("read above").get(0)?;
    c.exec("DELETE FROM scim_groups WHERE tenant_id = ? AND id = ?", &[&tenant.as_str(), &id])?;
    match crate::domain::groups::delete(c, tenant, &approval, actor) {
        Err(Error::Conflict { code: "group_in_use", .. }) => Ok(()),
        r => r.map(|_| ()),
    }
}

/// The tenant's SCIM token: its prefix and creation, if it has one.
pub(crate) async fn token_info(store: &Store, tenant: &TenantId) -> Result<Option<(String, DateTime<Utc>)>> {
    store
        .opt("SELECT prefix, created_at FROM scim_tokens WHERE tenant_id = ?", &[tenant])
        .await
        .map_err(Into::into)
}

/// Stores a new token for the tenant (replacing one), by its hash.
pub(crate) fn put_token_in(
    c: &dyn Tx,
    tenant: &TenantId,
    (prefix, hash): (&str, &str),
    actor: &str,
    via: Transport,
) -> Result<()> {
    c.exec("DELETE FROM scim_tokens WHERE tenant_id = ?", &[&tenant.as_str()])?;
    let sql = "INSERT INTO scim_tokens (tenant_id, prefix, token_hash, created_at) VALUES (?, ?, ?, ?)";
    c.exec(sql, &[&tenant.as_str(), &prefix, &hash, &stored::ts(Utc::now())])?;
    let e = NewEntry::new(tenant, actor, Kind::Key)
        .via(via)
        .verdict(Verdict::Issued)
        .detail(json!({ "scim_token": prefix }));
    activity::append(c, e)?;
    Ok(())
}

/// The tenant and prefix of the SCIM token whose hash this is.
pub(crate) async fn token_tenant(store: &Store, hash: &str) -> Result<Option<(TenantId, String)>> {
    let row: Option<(String, String)> =
        store.opt("SELECT tenant_id, prefix FROM scim_tokens WHERE token_hash = ?", &[&hash]).await?;
    Ok(row.map(|(t, p)| (TenantId::from_db(t), p)))
}

/// Keeps `Map` in use for the document helpers' callers.
pub type Doc = Map<String, Value>;
