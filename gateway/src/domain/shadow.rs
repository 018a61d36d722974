//! Shadow kits: a draft that decides every live call of its kit's profiles beside the live
//! kit, without effect (docs/architecture.md#replay-and-shadow).
//!
//! Owns `kit_shadows`: at most one shadow per kit (its primary key). The deciding job
//! evaluates the shadow after the live decision, on the same inputs, and [`record`]s a
//! `shadow` entry when the two differ; the live decision is never changed or delayed by more
//! than that evaluation (and that entry, when they differ). Starting, discarding and
//! promoting a shadow are `kit_edit` entries (`changed`), so every instance drops its cached
//! shadows.

use chrono::{DateTime, Utc};
use policy::{Decision, EngineVerdict, Kit};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::principal::Subject;
use crate::domain::replay::{Decided, Side};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{FromRow, Row, Tx};
use crate::store::Store;
use crate::stored;

/// A running shadow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Shadow {
    pub kit: Kit,
    /// The live version it was started beside.
    pub based_on: u32,
    /// The log entry that started it.
    pub after_seq: i64,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
}

const COLUMNS: &str = "document, based_on, after_seq, started_by, started_at";

impl FromRow for Shadow {
    fn from_row(r: &Row) -> ::store::Result<Shadow> {
        let doc: String = r.get(0)?;
        Ok(Shadow {
            kit: stored::decode("shadow kit", &doc)?,
            based_on: u32::try_from(r.get::<i64>(1)?).unwrap_or(0),
            after_seq: r.get(2)?,
            started_by: r.get(3)?,
            started_at: r.get(4)?,
        })
    }
}

/// The shadow of kit `name`, if one runs.
pub(crate) async fn get(store: &Store, tenant: &TenantId, name: &str) -> Result<Option<Shadow>> {
    let sql = format!("SELECT {COLUMNS} FROM kit_shadows WHERE tenant_id = ? AND kit_name = ?");
    Ok(store.opt(&sql, &[tenant, &name]).await?)
}

/// Starts `draft` as the shadow of its kit, beside live version `based_on`.
pub(crate) fn start(c: &dyn Tx, tenant: &TenantId, draft: &Kit, based_on: u32, by: &str) -> Result<Shadow> {
    let e = activity::append(
        c,
        NewEntry::new(tenant, by, Kind::KitEdit)
            .via_actor()
            .verdict(Verdict::Changed)
            .kit_version(based_on)
            .detail(json!({ "kit": draft.name, "shadow": "started" })),
    )?;
    let now = Utc::now();
    let doc = serde_json::to_string(draft).expect("kits serialize");
    c.exec(
        "INSERT INTO kit_shadows (tenant_id, kit_name, document, based_on, after_seq, started_by, started_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[tenant, &draft.name, &doc, &i64::from(based_on), &e.seq, &by, &stored::ts(now)],
    )
    .map_err(|e| match Error::from(e) {
        e if e.is_unique_violation() => Error::Conflict {
            code: "shadow_exists",
            message: format!(
                "kit \"{}\" already has a shadow; promote or discard it before starting another",
                draft.name
            ),
        },
        e => e,
    })?;
    Ok(Shadow { kit: draft.clone(), based_on, after_seq: e.seq, started_by: by.into(), started_at: now })
}

/// Ends the shadow of kit `name` (`discarded` or `promoted`); `not_found` if none runs.
pub(crate) fn end(c: &dyn Tx, tenant: &TenantId, name: &str, how: &str, by: &str) -> Result<()> {
    let n = c.exec("DELETE FROM kit_shadows WHERE tenant_id = ? AND kit_name = ?", &[tenant, &name])?;
    if n == 0 {
        return Err(Error::NotFound { what: "shadow" });
    }
    ended(c, tenant, name, how, by)
}

/// Ends the shadow of kit `name` that started at entry `after_seq`, and answers it, to promote
/// in the same job: `shadow_changed` when another shadow of the kit runs now (this one was
/// discarded and another started), `not_found` when none does.
pub(crate) fn take(c: &dyn Tx, tenant: &TenantId, name: &str, after_seq: i64, by: &str) -> Result<Shadow> {
    let sql = format!("SELECT {COLUMNS} FROM kit_shadows WHERE tenant_id = ? AND kit_name = ?");
    let row = c.row(&sql, &[tenant, &name])?.ok_or(Error::NotFound { what: "shadow" })?;
    let s = Shadow::from_row(&row)?;
    if s.after_seq != after_seq {
        return Err(Error::Conflict {
            code: "shadow_changed",
            message: format!(
                "the shadow of kit \"{name}\" you read is no longer the one running; read it again and promote that one"
            ),
        });
    }
    c.exec("DELETE FROM kit_shadows WHERE tenant_id = ? AND kit_name = ?", &[tenant, &name])?;
    ended(c, tenant, name, "promoted", by)?;
    Ok(s)
}

/// The entry that says a shadow ended, and how.
fn ended(c: &dyn Tx, tenant: &TenantId, name: &str, how: &str, by: &str) -> Result<()> {
    activity::append(
        c,
        NewEntry::new(tenant, by, Kind::KitEdit)
            .via_actor()
            .verdict(Verdict::Changed)
            .detail(json!({ "kit": name, "shadow": how })),
    )?;
    Ok(())
}

fn verdict(v: EngineVerdict) -> Verdict {
    match v {
        EngineVerdict::Allow => Verdict::Allow,
        EngineVerdict::Freeze => Verdict::Park,
        EngineVerdict::Deny => Verdict::Deny,
    }
}

/// A running shadow as a call's chain meets it: the chain's effective kits with the draft in
/// place of the kit it drafts (wherever that kit is on the chain), each narrowed by the
/// levels above it as the deciding job narrows them, so a parent's draft narrows its
/// descendants and a child's draft stays under its parent.
#[derive(Clone, Debug)]
pub struct ShadowChain {
    /// The kit it drafts, and that kit's live version.
    pub name: String,
    pub live_version: u32,
    /// The chain's effective kits under the draft, the acting profile's first.
    pub kits: Vec<Kit>,
}

impl ShadowChain {
    /// The rate windows a call by `profile` counts toward under the shadow: its kit's own,
    /// keyed apart from the live kit's (`s/<kit>/…`), so they count the calls the shadow would
    /// have let through; then the tenant's (`tenant`), shared with the live kit.
    pub(crate) fn windows(
        &self,
        profile: &ProfileId,
        tenant: Option<crate::domain::periods::TenantRate>,
        (action, now): (&str, DateTime<Utc>),
    ) -> Vec<crate::domain::periods::Window> {
        let mut w = crate::domain::periods::rate_windows(profile, &self.kits[0], tenant, action, now);
        for x in w.iter_mut().filter(|x| x.view.limit.is_some()) {
            x.key = format!("s/{}/{}", self.name, x.key);
        }
        w
    }
}

/// Records that `shadow` decided the call of `subject` otherwise than the live kit, if it did.
pub(crate) fn record(
    c: &dyn Tx,
    subject: &Subject,
    action: &str,
    (live, shadow_decision): (&Decision, &Decision),
    shadow: &ShadowChain,
) -> Result<()> {
    let (live, shadowed) = (Decided::from(live), Decided::from(shadow_decision));
    if crate::domain::replay::same(&live, &shadowed) {
        return Ok(());
    }
    // The entry names the profile in its detail, not as its profile: an agent's own feed
    // (`/v1/events`, its logs) shows what it did, and a draft is not that; the tenant's humans
    // see it in the tenant's feed.
    activity::append(
        c,
        NewEntry::new(&subject.tenant, subject.profile.as_str(), Kind::Shadow)
            .via(subject.via)
            .action(action)
            .verdict(verdict(shadowed.verdict))
            .amount(live.cost)
            .kit_version(shadow.live_version)
            .detail(json!({ "kit": shadow.name, "profile_id": subject.profile, "live": Side::of(&live), "shadow": Side::of(&shadowed) })),
    )?;
    Ok(())
}

/// A shadow's running totals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShadowTotals {
    /// Live calls of the kit's profiles decided since the shadow started.
    pub calls: u64,
    /// Of which the shadow decided otherwise.
    pub differed: u64,
    pub transitions: Vec<crate::domain::replay::Transition>,
    pub money: crate::domain::replay::Moved,
    /// The newest differences first, at most [`RECENT`].
    pub recent: Vec<crate::domain::replay::Change>,
}

/// A difference as read: seq, at, profile, action, amount and detail.
type DiffRow = (i64, DateTime<Utc>, Option<ProfileId>, Option<String>, Option<i64>, String);

/// How many of a shadow's differences [`totals`] lists.
pub const RECENT: usize = 20;

/// The calls decided and the differences since shadow `s` of kit `name` started. A call
/// counts from its decision: recorded on its entry, or still in flight (its inputs kept with
/// its hold), read in one statement so a call settling meanwhile counts once.
pub(crate) async fn totals(store: &Store, tenant: &TenantId, name: &str, s: &Shadow) -> Result<ShadowTotals> {
    let (like, after_seq, since) =
        (crate::domain::replay::kit_in_chain(name), s.after_seq, stored::ts(s.started_at));
    let calls: i64 = store
        .opt::<(i64,)>(
            "SELECT (SELECT COUNT(*) FROM activity WHERE tenant_id = ?1 AND seq > ?2 AND inputs LIKE ?3 ESCAPE '\\') \
             + (SELECT COUNT(*) FROM pending_inputs p JOIN holds h ON h.id = p.hold_id \
                WHERE h.tenant_id = ?1 AND h.created_at >= ?4 AND p.inputs LIKE ?3 ESCAPE '\\')",
            &[tenant, &after_seq, &like, &since],
        )
        .await?
        .map_or(0, |r| r.0);
    let rows: Vec<DiffRow> = store
        .all(
            "SELECT seq, at, profile_id, action, amount_units, detail FROM activity \
             WHERE tenant_id = ? AND seq > ? AND kind = 'shadow' ORDER BY seq DESC",
            &[tenant, &s.after_seq],
        )
        .await?;
    let mut summary = crate::domain::replay::Summary::default();
    let mut recent = Vec::new();
    for (seq, at, profile, action, amount, detail) in rows {
        let d: serde_json::Value = stored::json("shadow entry", &detail)?;
        let named = d["profile_id"].as_str().map(|p| ProfileId::from_db(p.to_string()));
        let (Some(profile_id), true) = (profile.or(named), d["kit"] == name) else { continue };
        let side = |k: &str| Side {
            verdict: d[k]["verdict"].as_str().unwrap_or_default().to_string(),
            reason: d[k]["reason"].as_str().map(String::from),
            detail: d[k]["detail"].as_str().map(String::from),
        };
        let amount = amount.and_then(policy::Money::from_units).unwrap_or(policy::Money::ZERO);
        let (was, would_be) = (side("live"), side("shadow"));
        summary.count_words(&was.verdict, &would_be.verdict, amount);
        if recent.len() < RECENT {
            let action = action.unwrap_or_default();
            recent.push(crate::domain::replay::Change { seq, at, profile_id, action, amount, was, would_be });
        }
    }
    Ok(ShadowTotals {
        calls: u64::try_from(calls).unwrap_or(0),
        differed: summary.changed,
        transitions: summary.transitions,
        money: summary.money,
        recent,
    })
}
