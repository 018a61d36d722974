//! Server functions behind the console's read views: the session, profiles, kits and spend.
//!
//! The session is the signed-in console user, read on every call from the HttpOnly session
//! cookie; every query below is scoped to that user's tenant, and each view checks the user's
//! roles on the server ([`VIEWS`]). A call without a live session, or by a role without
//! access, fails with `signed_out:` or `forbidden:`, which the pages turn into a sign-in link
//! or a 403 page.

use leptos::prelude::*;
use policy::{Kit, KitDiff, Money};
use serde::{Deserialize, Serialize};

/// Who is looking at the console, for the top bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub username: String,
    pub tenant_name: String,
    pub tenant_credit: Money,
    /// The views this user's roles open, as (href, label), in navigation order.
    pub views: Vec<(String, String)>,
    /// Where this user's work starts ([`landing`]).
    pub landing: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRow {
    pub id: String,
    pub name: String,
    pub depth: usize,
    pub kit_name: String,
    pub status: String,
    pub runtime: String,
    pub runtime_reason: Option<String>,
    pub owner: Option<String>,
    /// The parent profile's id, for a sub-agent.
    pub parent_id: Option<String>,
    pub created_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitVersionRow {
    pub kit: Kit,
    pub author: String,
    pub diff: KitDiff,
    pub created_at: String,
}

#[cfg(feature = "ssr")]
impl From<gateway::KitRecord> for KitVersionRow {
    fn from(r: gateway::KitRecord) -> Self {
        KitVersionRow { kit: r.kit, author: r.author, diff: r.diff, created_at: r.created_at.to_rfc3339() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitSummary {
    pub current: KitVersionRow,
    pub history: Vec<KitVersionRow>,
    pub profiles: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpendRow {
    pub id: String,
    pub profile: String,
    pub depth: usize,
    /// Running totals of this account (itself and its sub-agents).
    pub posted: Money,
    pub pending: Money,
    pub kit_name: String,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    pub approve_above: Option<Money>,
    /// Average posted spend per day over the last [`BURN_WINDOW_DAYS`].
    pub burn_per_day: Money,
    /// At that rate, days until posted + pending reaches the hard cap.
    pub days_to_cap: Option<f64>,
}

/// The most inbox items one page shows.
pub const INBOX_PAGE: usize = 100;

/// The days the burn rate averages over.
pub const BURN_WINDOW_DAYS: u64 = 7;
/// The days the spend chart shows.
pub const CHART_DAYS: u64 = 30;

/// One day of the spend chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DayPoint {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub posted: Money,
}

/// The average spend per day over the last `window` days up to `today`, and at that rate
/// the days until `used` reaches `cap` (none without a cap or without spend).
pub fn burn_rate(
    days: &[(chrono::NaiveDate, Money)],
    today: chrono::NaiveDate,
    window: u64,
    used: Money,
    cap: Option<Money>,
) -> (Money, Option<f64>) {
    let first = today - chrono::Days::new(window.saturating_sub(1));
    let total: i64 = days.iter().filter(|(d, _)| *d >= first && *d <= today).map(|(_, m)| m.units()).sum();
    let per_day = Money::from_units(total / window.max(1) as i64).unwrap_or(Money::ZERO);
    let to_cap = cap.filter(|_| !per_day.is_zero()).map(|c| {
        let left = c.units().saturating_sub(used.units()).max(0);
        left as f64 / per_day.units() as f64
    });
    (per_day, to_cap)
}

/// `days` spread over the `n` days ending `today`, zero where nothing was spent.
pub fn chart_points(days: &[(chrono::NaiveDate, Money)], today: chrono::NaiveDate, n: u64) -> Vec<DayPoint> {
    (0..n)
        .rev()
        .map(|back| {
            let day = today - chrono::Days::new(back);
            let posted = days.iter().find(|(d, _)| *d == day).map_or(Money::ZERO, |(_, m)| *m);
            DayPoint { day: day.format("%Y-%m-%d").to_string(), posted }
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantOverview {
    pub profiles: usize,
    pub active_profiles: usize,
    pub kits: usize,
    pub brain_kits: usize,
}

/// A parked action waiting in the inbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxRow {
    pub id: String,
    pub agent: String,
    pub action: String,
    pub summary: String,
    pub amount: Money,
    pub kit: String,
    pub reason: String,
    pub requested_at: String,
    pub expires_at: String,
    pub seconds_left: i64,
    /// Whether the signed-in user may decide it, and if not, why (shown on the row).
    pub can_decide: bool,
    pub why_not: Option<String>,
}

/// One line of the activity log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub seq: i64,
    pub at: String,
    pub actor: String,
    pub agent: Option<String>,
    pub kind: String,
    pub action: Option<String>,
    pub verdict: Option<String>,
    pub amount: Option<Money>,
    pub kit_version: Option<u32>,
    /// `http`, `mcp` or `console`; none for the gateway's own work.
    pub transport: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityView {
    pub rows: Vec<ActivityRow>,
    /// The cursor of older entries, when there are more.
    pub older: Option<i64>,
    /// The tenant's agent names, for the filter.
    pub agents: Vec<String>,
    pub chain_ok: bool,
    pub chain_entries: u64,
    /// How many entries this look verified: those appended since the last one.
    pub chain_checked: u64,
    pub first_broken: Option<i64>,
}

/// The arguments in one readable line: `merchant: acme · memo: cable ties`.
pub fn summarize_args(args: &serde_json::Value) -> String {
    const MAX_LEN: usize = 120;
    let mut parts = Vec::new();
    if let Some(obj) = args.as_object() {
        let mut fields: Vec<_> = obj.iter().collect();
        fields.sort_by_key(|(k, _)| k.as_str());
        for (k, v) in fields {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            parts.push(format!("{k}: {v}"));
        }
    }
    let mut line = parts.join(" · ");
    if line.chars().count() > MAX_LEN {
        line = line.chars().take(MAX_LEN - 1).collect::<String>() + "…";
    }
    line
}

/// One console view: its key, where it lives, its label in the navigation, and which roles
/// open it.
#[derive(Debug)]
pub struct View {
    pub key: &'static str,
    pub href: &'static str,
    pub label: &'static str,
    pub roles: &'static [&'static str],
}

const EVERYONE: &[&str] = &["admin", "approver", "reviewer", "finance"];

/// The console's views in navigation order, and who may open each (SPEC §3): admins
/// everything, approvers the inbox, reviewers the proposals, finance spend and caps and
/// read-only elsewhere; the beliefs and the activity feed are for everyone signed in. The
/// navigation offers a user only the views their roles open; the server checks again.
pub const VIEWS: &[View] = &[
    View { key: "overview", href: "/overview", label: "Overview", roles: &["admin"] },
    View { key: "inbox", href: "/", label: "Inbox", roles: &["admin", "approver", "finance"] },
    View {
        key: "proposals",
        href: "/proposals",
        label: "Proposals",
        roles: &["admin", "reviewer", "finance"],
    },
    View { key: "beliefs", href: "/beliefs", label: "Beliefs", roles: EVERYONE },
    View { key: "kits", href: "/kits", label: "Kits", roles: &["admin", "finance"] },
    View { key: "spend", href: "/spend", label: "Spend", roles: &["admin", "finance"] },
    View { key: "activity", href: "/activity", label: "Activity", roles: EVERYONE },
    View { key: "profiles", href: "/profiles", label: "Profiles", roles: &["admin", "finance"] },
    View { key: "users", href: "/users", label: "Users", roles: &["admin"] },
];

/// The views a user with these roles opens, in navigation order.
pub fn views_for<R: AsRef<str>>(roles: &[R]) -> impl Iterator<Item = &'static View> + '_ {
    VIEWS.iter().filter(|v| roles.iter().any(|r| v.roles.contains(&r.as_ref())))
}

/// Where a user lands after signing in: the work of their first role in the order admin (the
/// overview of what needs them), approver (the inbox), reviewer (the proposals), finance
/// (spend); their account page when they have none of these.
pub fn landing<R: AsRef<str>>(roles: &[R]) -> &'static str {
    let has = |role: &str| roles.iter().any(|r| r.as_ref() == role);
    match () {
        _ if has("admin") => "/overview",
        _ if has("approver") => "/",
        _ if has("reviewer") => "/proposals",
        _ if has("finance") => "/spend",
        _ => "/account",
    }
}

/// The name of the session cookie over plain HTTP (local development).
pub const SESSION_COOKIE: &str = "naive_session";
/// Its name when cookies are Secure: the `__Host-` prefix makes the browser accept it only
/// from this host, over HTTPS, for every path, so no sibling domain can plant one.
pub const SECURE_SESSION_COOKIE: &str = "__Host-naive_session";

/// How the server names and marks the session cookie; the router puts it into context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieSettings {
    pub secure: bool,
}

impl CookieSettings {
    pub const fn name(self) -> &'static str {
        if self.secure { SECURE_SESSION_COOKIE } else { SESSION_COOKIE }
    }
}

/// Percent-encodes a value for a URL query (paths keep their slashes). The console and the
/// server's redirects both use it.
pub fn encode_query_value(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The session token in a `Cookie` header, if any, under the name `settings` give it (only
/// the `__Host-` one when cookies are secure).
pub fn session_token(cookie_header: &str, settings: CookieSettings) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == settings.name())
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

#[cfg(feature = "ssr")]
pub(crate) mod session {
    use super::*;
    use crate::api::{gateway, to_fn_error};

    /// The session cookie of this request.
    pub(crate) async fn token() -> Result<Option<String>, ServerFnError> {
        let headers: axum::http::HeaderMap = leptos_axum::extract().await?;
        Ok(headers
            .get(axum::http::header::COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|c| {
                session_token(c, use_context::<CookieSettings>().unwrap_or(CookieSettings { secure: false }))
            })
            .map(str::to_string))
    }

    /// The signed-in user of this request and their tenant, or `None` when signed out.
    pub(crate) async fn current()
    -> Result<Option<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser)>, ServerFnError> {
        let gw = gateway()?;
        let Some(token) = token().await? else { return Ok(None) };
        let token = token.as_str();
        let Some(user) = gw.session_user(token).await.map_err(to_fn_error)? else { return Ok(None) };
        let tenant = gw.tenant(&user.tenant_id).await.map_err(to_fn_error)?;
        Ok(Some((gw, tenant, user)))
    }
}

/// The signed-in user, or `signed_out:`.
#[cfg(feature = "ssr")]
pub(crate) async fn require_session()
-> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    session::current().await?.ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))
}

/// The signed-in user, if one of their roles may open `view`; otherwise `forbidden:` (and the
/// response becomes a 403).
#[cfg(feature = "ssr")]
pub(crate) async fn require_view(
    view: &str,
) -> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    let (gw, tenant, user) = require_session().await?;
    let allowed = VIEWS.iter().find(|v| v.key == view).map_or(&[][..], |v| v.roles);
    if user.roles.iter().any(|r| allowed.contains(&r.as_str())) {
        return Ok((gw, tenant, user));
    }
    if let Some(res) = use_context::<leptos_axum::ResponseOptions>() {
        res.set_status(axum::http::StatusCode::FORBIDDEN);
    }
    Err(ServerFnError::new(format!(
        "forbidden: {} cannot open this page; it needs one of these roles: {}",
        user.username,
        allowed.join(", ")
    )))
}

#[server]
pub async fn session_info() -> Result<Option<SessionSummary>, ServerFnError> {
    Ok(session::current().await?.map(|(_, t, u)| {
        let roles: Vec<&str> = u.roles.iter().map(|r| r.as_str()).collect();
        SessionSummary {
            views: views_for(&roles).map(|v| (v.href.to_string(), v.label.to_string())).collect(),
            landing: landing(&roles).to_string(),
            username: u.username,
            tenant_name: t.name,
            tenant_credit: t.credit,
        }
    }))
}

#[server]
pub async fn list_profiles() -> Result<Vec<ProfileRow>, ServerFnError> {
    let (gw, tenant, _) = require_view("profiles").await?;
    profile_rows(&gw, &tenant.id).await
}

/// The tenant's profiles in tree order, as the profile pages show them.
#[cfg(feature = "ssr")]
pub(crate) async fn profile_rows(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
) -> Result<Vec<ProfileRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let users = gw.users(tenant).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(tenant).await.map_err(to_fn_error)?;
    Ok(tree
        .into_iter()
        .map(|e| {
            let p = e.profile;
            ProfileRow {
                id: p.id.to_string(),
                name: p.name,
                depth: e.depth,
                kit_name: p.kit_name,
                status: p.status.as_str().to_string(),
                runtime: p.runtime.as_str().to_string(),
                runtime_reason: p.runtime_reason,
                owner: p.owner.and_then(|o| users.iter().find(|u| u.id == o).map(|u| u.username.clone())),
                parent_id: p.parent.map(|id| id.to_string()),
                created_at: p.created_at.to_rfc3339(),
            }
        })
        .collect())
}

#[server]
pub async fn list_kits() -> Result<Vec<KitSummary>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("kits").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let mut out = Vec::new();
    for current in gw.kits(&tenant.id).await.map_err(to_fn_error)? {
        let history = gw.kit_versions(&tenant.id, &current.kit.name).await.map_err(to_fn_error)?;
        out.push(KitSummary {
            profiles: profiles.iter().filter(|p| p.kit_name == current.kit.name).count(),
            current: current.into(),
            history: history.into_iter().map(Into::into).collect(),
        });
    }
    Ok(out)
}

#[server]
pub async fn spend_overview() -> Result<Vec<SpendRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("spend").await?;
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(&tenant.id).await.map_err(to_fn_error)?;
    let today = chrono::Utc::now().date_naive();
    let since = today - chrono::Days::new(BURN_WINDOW_DAYS - 1);
    let mut rows = Vec::with_capacity(tree.len());
    for e in tree {
        let totals = gw.budget(&tenant.id, &e.profile.id).await.map_err(to_fn_error)?.totals;
        let days = gw.daily_spend(&tenant.id, &e.profile.id, since).await.map_err(to_fn_error)?;
        rows.push((e, totals, days));
    }
    Ok(rows
        .into_iter()
        .map(|(e, totals, days)| {
            let kit = kits.iter().find(|k| k.kit.name == e.profile.kit_name).map(|k| &k.kit);
            let used = totals.posted.checked_add(totals.pending).unwrap_or(totals.posted);
            let (burn_per_day, days_to_cap) =
                burn_rate(&days, today, BURN_WINDOW_DAYS, used, kit.and_then(|k| k.limits.budget.hard_cap));
            SpendRow {
                burn_per_day,
                days_to_cap,
                id: e.profile.id.to_string(),
                posted: totals.posted,
                pending: totals.pending,
                profile: e.profile.name,
                depth: e.depth,
                kit_name: e.profile.kit_name.clone(),
                hard_cap: kit.and_then(|k| k.limits.budget.hard_cap),
                soft_cap: kit.and_then(|k| k.limits.budget.soft_cap),
                approve_above: kit.and_then(|k| k.limits.approve.above),
            }
        })
        .collect())
}

#[server]
pub async fn overview() -> Result<TenantOverview, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("proposals").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    Ok(TenantOverview {
        profiles: profiles.len(),
        active_profiles: profiles.iter().filter(|p| p.status == policy::SubjectStatus::Active).count(),
        kits: kits.len(),
        brain_kits: kits.iter().filter(|k| k.kit.primitives.contains(policy::Primitive::Brain)).count(),
    })
}

#[server]
pub async fn inbox(status: String) -> Result<Vec<InboxRow>, ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::approvals::{ApprovalQuery, ApprovalStatus};
    let (gw, tenant, user) = require_view("inbox").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let status = match status.trim() {
        "" => ApprovalStatus::Pending,
        s => ApprovalStatus::parse(s).ok_or_else(|| {
            ServerFnError::new("invalid_filter: status is pending, approved, denied or expired")
        })?,
    };
    let q = ApprovalQuery { status: Some(status), limit: Some(INBOX_PAGE as i64), ..Default::default() };
    let may_decide = user.has(gateway::Role::Approver) || user.has(gateway::Role::Admin);
    let now = chrono::Utc::now();
    Ok(gw
        .approvals(&tenant.id, &q)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|a| {
            let profile = profiles.iter().find(|p| p.id == a.profile_id);
            // The gateway refuses these decisions too; the page says why before anyone tries.
            let why_not = if a.status != ApprovalStatus::Pending {
                Some(match (&a.decided_by, &a.decision_reason) {
                    (Some(by), Some(why)) => format!("{} by {by}: {why}", a.status.as_str()),
                    (Some(by), None) => format!("{} by {by}", a.status.as_str()),
                    _ => a.status.as_str().to_string(),
                })
            } else if !may_decide {
                Some("Deciding needs the approver or admin role.".to_string())
            } else if profile.and_then(|p| p.owner.as_ref()) == Some(&user.id) {
                Some("You own this agent's profile, so another approver must decide.".to_string())
            } else {
                None
            };
            InboxRow {
                can_decide: why_not.is_none(),
                why_not,
                agent: profile.map_or_else(|| a.profile_id.to_string(), |p| p.name.clone()),
                summary: summarize_args(&a.args),
                seconds_left: a.seconds_left(now),
                id: a.id,
                action: a.action,
                amount: a.amount,
                kit: format!("{} v{}", a.kit_name, a.kit_version),
                reason: a.reason,
                requested_at: a.requested_at.to_rfc3339(),
                expires_at: a.expires_at.to_rfc3339(),
            }
        })
        .collect())
}

/// For a plain form post, which cannot read a response body: sends the browser back to the
/// page it came from with the error's message in `?error=`, which the page shows
/// ([`crate::components::common::FormOutcome`]). Returns the error for callers with JavaScript.
#[cfg(feature = "ssr")]
async fn back_with_error(e: ServerFnError) -> ServerFnError {
    // What the user should read: the stable code and what to do, without the transport's prefix.
    let text = e.to_string();
    let message = text.rsplit("error running server function: ").next().unwrap_or(&text);
    back_to_page("error", message).await;
    e
}

/// For a plain form post that succeeded: sends the browser back to the page it came from with
/// what happened, in words, in `?done=`, which the page announces
/// ([`crate::components::common::FormOutcome`]).
#[cfg(feature = "ssr")]
pub(crate) async fn back_with_notice(message: &str) {
    back_to_page("done", message).await;
}

/// Redirects to the referring page with `key=message`, dropping an earlier outcome.
#[cfg(feature = "ssr")]
async fn back_to_page(key: &str, message: &str) {
    if let Ok(headers) = leptos_axum::extract::<axum::http::HeaderMap>().await
        && let Some(referer) = headers.get(axum::http::header::REFERER).and_then(|v| v.to_str().ok())
    {
        // Only a path on this site: drop the scheme and host, and any earlier outcome.
        let path = referer.splitn(4, '/').nth(3).map_or("/".to_string(), |p| format!("/{p}"));
        let (base, query) = path.split_once('?').unwrap_or((&path, ""));
        let mut target = format!("{base}?");
        let earlier = |kv: &&str| kv.is_empty() || kv.starts_with("error=") || kv.starts_with("done=");
        for kv in query.split('&').filter(|kv| !earlier(kv)) {
            target.push_str(kv);
            target.push('&');
        }
        target.push_str(key);
        target.push('=');
        target.push_str(&encode_query_value(message));
        leptos_axum::redirect(&target);
    }
}

/// Runs a form's server function, turning its error into [`back_with_error`].
#[cfg(feature = "ssr")]
pub(crate) async fn form<T>(
    run: impl std::future::Future<Output = Result<T, ServerFnError>>,
) -> Result<T, ServerFnError> {
    match run.await {
        Ok(v) => Ok(v),
        Err(e) => Err(back_with_error(e).await),
    }
}

/// The signed-in user, if they hold one of `roles`; otherwise `forbidden:` saying that `what`
/// needs them. Every console action goes through this one check.
#[cfg(feature = "ssr")]
pub(crate) async fn require_roles(
    roles: &[gateway::Role],
    what: &str,
) -> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    let (gw, tenant, user) = require_session().await?;
    if !roles.iter().any(|r| user.has(*r)) {
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        return Err(ServerFnError::new(format!("forbidden: {what} needs the {} role", names.join(" or "))));
    }
    Ok((gw, tenant, user))
}

/// The signed-in human, for an approval decision: approver or admin.
#[cfg(feature = "ssr")]
async fn require_approver()
-> Result<(gateway::Gateway, gateway::Tenant, gateway::approvals::Human), ServerFnError> {
    let (gw, tenant, user) =
        require_roles(&[gateway::Role::Approver, gateway::Role::Admin], "deciding").await?;
    Ok((gw, tenant, gateway::approvals::Human::in_console(&user)))
}

/// Approves a parked action: the bound call runs once and its hold settles. Posted as a plain
/// form from the inbox (it works without JavaScript), so it is a POST, never a GET.
#[server(prefix = "/api", endpoint = "approve")]
pub async fn approve_action(id: String, note: Option<String>) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, human) = require_approver().await?;
        let note = note.filter(|n| !n.trim().is_empty());
        let resp = gw.approve(&tenant.id, &id, &human, note.as_deref()).await.map_err(to_fn_error)?;
        // Refused under the kit in force now, or the connector failed: say so on the page.
        match resp.disposition {
            gateway::pipeline::Disposition::Refused | gateway::pipeline::Disposition::Unavailable => {
                let reason = resp.body["error"]["details"]["reason"].as_str().unwrap_or("refused");
                let message = resp.body["message"].as_str().unwrap_or("the call could not run");
                Err(ServerFnError::new(format!("{reason}: not run — {message}; its hold was released")))
            }
            _ => {
                let what = decided_call(&gw, &tenant.id, &id).await?;
                back_with_notice(&format!("Approved {what}: {}.", what_ran(&resp.body))).await;
                Ok(())
            }
        }
    })
    .await
}

/// An approval's call in words: "cards.charge of $30.00 for procurement-bot".
#[cfg(feature = "ssr")]
async fn decided_call(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
    id: &str,
) -> Result<String, ServerFnError> {
    let a = gw.approval(tenant, id).await.map_err(crate::api::to_fn_error)?;
    let agent = gw.profile(tenant, &a.profile_id).await.map_or_else(|_| a.profile_id.to_string(), |p| p.name);
    let amount = if a.amount.is_zero() { String::new() } else { format!(" of {}", a.amount) };
    Ok(format!("{}{amount} for {agent}", a.action))
}

/// What an executed call produced, in words: the belief it became, or the id its provider
/// gave it (a charge, a message), and that its hold settled.
#[cfg(feature = "ssr")]
fn what_ran(body: &serde_json::Value) -> String {
    if let Some(belief) = body["belief_id"].as_str() {
        return format!("the claim is now belief {belief}");
    }
    let id_in = |v: &serde_json::Value| {
        v.as_object()?.iter().find_map(|(k, v)| {
            (k.ends_with("_id") && !["activity_id", "approval_id", "hold_id"].contains(&k.as_str()))
                .then(|| v.as_str().map(|s| format!("{k} {s}")))
                .flatten()
        })
    };
    match id_in(body).or_else(|| id_in(&body["result"])) {
        Some(id) => format!("it ran ({id}) and its hold settled"),
        None => "it ran and its hold settled".into(),
    }
}

/// Denies a parked action with a required reason; its hold is voided.
#[server(prefix = "/api", endpoint = "deny")]
pub async fn deny_action(id: String, reason: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, human) = require_approver().await?;
        let denied = gw.deny(&tenant.id, &id, &human, &reason).await.map_err(to_fn_error)?;
        let what = decided_call(&gw, &tenant.id, &id).await?;
        let hold = if denied.amount.is_zero() {
            String::new()
        } else {
            format!("; its {} hold was voided", denied.amount)
        };
        back_with_notice(&format!("Denied {what}{hold}. The agent is told: {}.", reason.trim())).await;
        Ok(())
    })
    .await
}

#[server]
pub async fn activity_feed(
    agent: String,
    kind: String,
    verdict: String,
    transport: String,
    before: Option<i64>,
) -> Result<ActivityView, ServerFnError> {
    use crate::api::to_fn_error;
    const PAGE: i64 = 200;
    let (gw, tenant, _) = require_view("activity").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let profile = match agent.trim() {
        "" => None,
        name => Some(
            profiles
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.id.clone())
                .ok_or_else(|| ServerFnError::new(format!("not_found: no agent named {name}")))?,
        ),
    };
    let q = gateway::activity::LogQuery { profile, before, limit: Some(PAGE), ..Default::default() };
    let entries = gw.log(&tenant.id, &q).await.map_err(to_fn_error)?;
    let older = (entries.len() as i64 == PAGE).then(|| entries.last().map(|e| e.seq)).flatten();
    let (kind, verdict, transport) =
        (kind.trim().to_string(), verdict.trim().to_string(), transport.trim().to_string());
    let chain = gw.verify_log_since_last(&tenant.id).await.map_err(to_fn_error)?;
    Ok(ActivityView {
        older,
        agents: profiles.iter().map(|p| p.name.clone()).collect(),
        rows: entries
            .into_iter()
            .filter(|e| kind.is_empty() || e.kind == kind)
            .filter(|e| verdict.is_empty() || e.verdict.as_deref() == Some(verdict.as_str()))
            .filter(|e| transport.is_empty() || e.transport.as_deref() == Some(transport.as_str()))
            .map(|e| activity_row(e, &profiles))
            .collect(),
        chain_ok: chain.ok,
        chain_entries: chain.entries,
        chain_checked: chain.checked,
        first_broken: chain.first_broken,
    })
}

/// One log entry as the console shows it, with agent names in place of profile ids. The
/// activity page and the live stream (`/console/events`) both use it.
#[cfg(feature = "ssr")]
pub fn activity_row(e: gateway::activity::Entry, profiles: &[gateway::Profile]) -> ActivityRow {
    let name_of = |id: &str| profiles.iter().find(|p| p.id.as_str() == id).map(|p| p.name.clone());
    ActivityRow {
        agent: e.profile_id.as_ref().and_then(|id| name_of(id.as_str())),
        actor: name_of(&e.actor).unwrap_or(e.actor),
        seq: e.seq,
        at: e.at.to_rfc3339(),
        kind: e.kind,
        action: e.action,
        verdict: e.verdict,
        amount: e.amount,
        kit_version: e.kit_version,
        transport: e.transport,
    }
}

/// One step of a decision trail: who, when, what, because.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrailRow {
    pub at: String,
    /// Who, by name where one is known.
    pub actor: String,
    /// The id behind that name, shown on hover.
    pub actor_id: Option<String>,
    pub step: String,
    pub note: Option<String>,
}

/// A proposed belief in the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalRow {
    pub id: String,
    pub agent: String,
    pub object_type: String,
    pub run_id: String,
    pub claim: String,
    pub status: String,
    pub created_at: String,
    pub trail: Vec<TrailRow>,
}

/// The queue with its filters, and what would fill it when it is empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalQueue {
    pub rows: Vec<ProposalRow>,
    pub brain_kits: usize,
    pub kits: usize,
}

/// One proposal in full: the claim, its writeback envelope and the trail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalFull {
    pub row: ProposalRow,
    /// The claim's content, pretty-printed JSON.
    pub content: String,
    /// The writeback envelope it came in, pretty-printed JSON.
    pub envelope: String,
    pub why_not: Option<String>,
}

/// A claim's content in one line: its `claim` or `text` field when it has one.
#[cfg(feature = "ssr")]
pub(crate) fn claim_text(content: &serde_json::Value) -> String {
    ["claim", "text", "statement"]
        .iter()
        .find_map(|k| content.get(*k).and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_else(|| content.to_string())
}

#[cfg(feature = "ssr")]
fn proposal_row(p: gateway::brain::Proposal, agent: String) -> ProposalRow {
    ProposalRow {
        claim: claim_text(&p.content),
        agent,
        status: p.status.as_str().to_string(),
        created_at: p.created_at.to_rfc3339(),
        trail: p
            .trail
            .into_iter()
            .map(|t| TrailRow {
                at: t.at.to_rfc3339(),
                actor: t.actor,
                actor_id: None,
                step: t.step,
                note: t.note,
            })
            .collect(),
        id: p.id,
        object_type: p.object_type,
        run_id: p.run_id,
    }
}

/// The proposal queue, filtered by status, object type and run (empty means any).
#[server]
pub async fn proposals_view(
    status: String,
    object_type: String,
    run_id: String,
) -> Result<ProposalQueue, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("proposals").await?;
    let opt = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let status = match opt(status) {
        None => None,
        Some(s) => Some(gateway::brain::ProposalStatus::parse(&s).ok_or_else(|| {
            ServerFnError::new("invalid_filter: status is pending, parked, accepted or rejected")
        })?),
    };
    let q = gateway::brain::ProposalQuery {
        status,
        object_type: opt(object_type),
        run_id: opt(run_id),
        limit: Some(200),
    };
    let writebacks = gw.writebacks(&tenant.id, None).await.map_err(to_fn_error)?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let agent_of = |writeback: &str| {
        writebacks
            .iter()
            .find(|w| w.id == writeback)
            .and_then(|w| profiles.iter().find(|p| p.id == w.profile_id))
            .map_or_else(|| "unknown".to_string(), |p| p.name.clone())
    };
    let rows = gw
        .proposals(&tenant.id, &q)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|p| {
            let agent = agent_of(&p.writeback_id);
            proposal_row(p, agent)
        })
        .collect();
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    Ok(ProposalQueue {
        rows,
        kits: kits.len(),
        brain_kits: kits.iter().filter(|k| k.kit.primitives.contains(policy::Primitive::Brain)).count(),
    })
}

#[server]
pub async fn proposal_detail(id: String) -> Result<ProposalFull, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("proposals").await?;
    let p = gw.proposal(&tenant.id, &id).await.map_err(to_fn_error)?;
    let wb = gw.writeback(&tenant.id, &p.writeback_id).await.map_err(to_fn_error)?;
    let agent =
        gw.profile(&tenant.id, &wb.profile_id).await.map(|p| p.name).unwrap_or_else(|_| "unknown".into());
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    let why_not = if !(user.has(gateway::Role::Reviewer) || user.has(gateway::Role::Admin)) {
        Some("Deciding needs the reviewer or admin role.".to_string())
    } else if !matches!(
        p.status,
        gateway::brain::ProposalStatus::Pending | gateway::brain::ProposalStatus::Parked
    ) {
        Some(format!("Already {}.", p.status.as_str()))
    } else {
        None
    };
    let content = pretty(&p.content);
    let mut row = proposal_row(p, agent.clone());
    // The proposing agent is recorded by its profile id; show its name.
    for step in row.trail.iter_mut().filter(|s| s.actor == wb.profile_id.as_str()) {
        step.actor_id = Some(std::mem::replace(&mut step.actor, agent.clone()));
    }
    Ok(ProposalFull { content, envelope: pretty(&wb.envelope), row, why_not })
}

/// Accepts or rejects a proposal, with the required `because`. A plain form post.
#[server(prefix = "/api", endpoint = "decide_proposal")]
pub async fn decide_proposal_form(
    id: String,
    decision: String,
    because: String,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, user) =
            require_roles(&[gateway::Role::Reviewer, gateway::Role::Admin], "deciding proposals").await?;
        let decision = match decision.as_str() {
            "accept" => gateway::brain::Decision::Accept,
            "reject" => gateway::brain::Decision::Reject,
            _ => return Err(ServerFnError::new("invalid_decision: the decision is accept or reject")),
        };
        let by = gateway::brain::Decider::Human(gateway::approvals::Human::in_console(&user));
        let r = gw.decide_proposal(&tenant.id, &id, &by, decision, &because).await.map_err(to_fn_error)?;
        let done = match r.body["belief_id"].as_str() {
            Some(belief) => format!("Accepted: the claim is now belief {belief}, listed under Beliefs."),
            None => "Rejected: the claim stays out of the company's beliefs.".to_string(),
        };
        back_with_notice(&done).await;
        Ok(())
    })
    .await
}

/// One ledger entry as the spend page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    pub seq: i64,
    pub at: String,
    pub action: String,
    pub kind: String,
    pub pending_delta: String,
    pub posted_delta: String,
}

/// A page of one profile's ledger; `next` is the cursor of the following page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerPageView {
    pub profile: String,
    pub rows: Vec<LedgerRow>,
    pub next: Option<i64>,
    /// Posted spend per day over the last [`CHART_DAYS`].
    pub chart: Vec<DayPoint>,
}

/// The largest ledger page the console shows.
pub const LEDGER_PAGE: i64 = 50;

/// Parses an optional `YYYY-MM-DD` (start of that day, UTC) for the period filter.
#[cfg(feature = "ssr")]
pub fn day(v: &str, field: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, ServerFnError> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .map(|d| Some(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()))
        .map_err(|_| ServerFnError::new(format!("invalid_period: `{field}` is a date such as 2026-11-01")))
}

/// One profile's ledger entries in a period (`from` inclusive, `to` exclusive, whole days),
/// keyset-paged after `after`.
#[server]
pub async fn ledger_page(
    profile: String,
    from: String,
    to: String,
    after: Option<i64>,
) -> Result<LedgerPageView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("spend").await?;
    let id = gateway::ProfileId::parse(&profile)
        .ok_or_else(|| ServerFnError::new("not_found: no such agent profile"))?;
    let p = gw.profile(&tenant.id, &id).await.map_err(to_fn_error)?;
    let q = gateway::ledger::LedgerQuery {
        from: day(&from, "from")?,
        to: day(&to, "to")?,
        after,
        limit: Some(LEDGER_PAGE),
    };
    let entries = gw.ledger_entries(&tenant.id, &id, &q, LEDGER_PAGE).await.map_err(to_fn_error)?;
    let next = (entries.len() as i64 == LEDGER_PAGE).then(|| entries.last().map(|e| e.seq)).flatten();
    let today = chrono::Utc::now().date_naive();
    let days = gw
        .daily_spend(&tenant.id, &id, today - chrono::Days::new(CHART_DAYS - 1))
        .await
        .map_err(to_fn_error)?;
    Ok(LedgerPageView {
        chart: chart_points(&days, today, CHART_DAYS),
        profile: p.name,
        next,
        rows: entries
            .into_iter()
            .map(|e| LedgerRow {
                seq: e.seq,
                at: e.created_at.to_rfc3339(),
                action: e.action,
                kind: e.kind,
                pending_delta: e.pending_delta,
                posted_delta: e.posted_delta,
            })
            .collect(),
    })
}

/// A console user as the admin's user list shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserRow {
    pub id: String,
    pub username: String,
    pub roles: Vec<String>,
    pub created_at: String,
}

/// The roles ticked on a users form: one checkbox per role, present when ticked.
#[cfg(feature = "ssr")]
pub(crate) fn ticked(
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Vec<gateway::Role> {
    use gateway::Role;
    [(admin, Role::Admin), (approver, Role::Approver), (reviewer, Role::Reviewer), (finance, Role::Finance)]
        .into_iter()
        .filter_map(|(v, r)| v.map(|_| r))
        .collect()
}

#[server]
pub async fn list_users() -> Result<Vec<UserRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("users").await?;
    Ok(gw
        .users(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|u| UserRow {
            id: u.id.to_string(),
            roles: u.roles.iter().map(|r| r.as_str().to_string()).collect(),
            username: u.username,
            created_at: u.created_at.to_rfc3339(),
        })
        .collect())
}

/// Adds a console user with a password and roles (admin only). A plain form post.
#[server(prefix = "/api", endpoint = "add_user")]
pub async fn add_user(
    username: String,
    password: String,
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing console users").await?;
        let roles = ticked(admin, approver, reviewer, finance);
        gw.create_user_as(&tenant.id, &username.to_lowercase(), &password, &roles, Some(&by.username))
            .await
            .map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

/// Replaces a console user's roles (admin only; the tenant keeps at least one admin).
#[server(prefix = "/api", endpoint = "set_roles")]
pub async fn set_roles(
    user_id: String,
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing console users").await?;
        let id = gateway::UserId::parse(&user_id)
            .ok_or_else(|| ServerFnError::new("not_found: no such console user"))?;
        gw.set_user_roles(&tenant.id, &id, &ticked(admin, approver, reviewer, finance), &by.username)
            .await
            .map_err(to_fn_error)?;
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn m(s: &str) -> Money {
        Money::parse(s).unwrap()
    }

    #[test]
    fn burn_rate_averages_the_window_and_projects_to_the_cap() {
        let days = [(d("2026-11-20"), m("100")), (d("2026-11-28"), m("14")), (d("2026-11-30"), m("0.00"))];
        // Only the last 7 days count: $14 over 7 days is $2 a day.
        let (per_day, to_cap) = burn_rate(&days, d("2026-11-30"), 7, m("40"), Some(m("50")));
        assert_eq!(per_day, m("2"));
        assert_eq!(to_cap, Some(5.0));
        assert_eq!(burn_rate(&days, d("2026-11-30"), 7, m("40"), None).1, None, "no cap, no projection");
        assert_eq!(burn_rate(&[], d("2026-11-30"), 7, m("40"), Some(m("50"))), (Money::ZERO, None));
        assert_eq!(burn_rate(&days, d("2026-11-30"), 7, m("60"), Some(m("50"))).1, Some(0.0), "over the cap");
    }

    #[test]
    fn utc_text_reads_stored_timestamps_and_leaves_others_alone() {
        use crate::components::common::utc_text;
        assert_eq!(utc_text("2026-11-30T08:24:48.123456+00:00"), "2026-11-30 08:24 UTC");
        assert_eq!(utc_text("2026-11-30T23:59:00Z"), "2026-11-30 23:59 UTC");
        assert_eq!(utc_text("2026-11-30T08:24:48+09:00"), "2026-11-30T08:24:48+09:00", "not UTC: as is");
        assert_eq!(utc_text("yesterday"), "yesterday");
    }

    #[test]
    fn chart_points_fill_every_day_oldest_first() {
        let days = [(d("2026-11-29"), m("3"))];
        let points = chart_points(&days, d("2026-11-30"), 3);
        let got: Vec<(&str, Money)> = points.iter().map(|p| (p.day.as_str(), p.posted)).collect();
        assert_eq!(
            got,
            vec![("2026-11-28", Money::ZERO), ("2026-11-29", m("3")), ("2026-11-30", Money::ZERO)]
        );
    }
}
