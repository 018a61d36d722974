//! Replay and shadow (docs/architecture.md#replay-and-shadow): what a draft kit would have
//! done to recorded calls, and what it does to live ones beside the live kit.
//!
//! [`Gateway::replay`] reads the recorded calls of a kit in a bounded range, oldest first, in
//! pages of [`CHUNK`] (memory stays bounded whatever the range holds), with the human
//! decisions their parks got, and decides each again ([`crate::domain::replay::Replayer`]).
//! It reserves nothing and writes nothing. Shadows are [`crate::domain::shadow`]'s.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use policy::{Kit, KitDiff, KitVersion};
use serde::{Deserialize, Serialize};

use crate::Gateway;
use crate::domain::kits::KitRecord;
use crate::domain::replay::{Change, Fate, Inputs, KitRef, Recorded, Replayer, Summary, kit_in_chain};
use crate::domain::shadow::{self, Shadow, ShadowTotals};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::stored;

/// The longest range one replay reads.
pub const MAX_RANGE_DAYS: i64 = 31;
/// The range a replay reads unless told: the last week.
pub const DEFAULT_RANGE_DAYS: i64 = 7;
/// The most changed calls one answer lists.
pub const MAX_CHANGES: usize = 500;

/// Recorded calls read per statement.
const CHUNK: i64 = 5_000;

/// What to replay: a draft (or a saved version) over a range.
#[derive(Clone, Debug)]
pub struct ReplayRequest {
    /// The draft; `None` replays a saved version.
    pub draft: Option<Kit>,
    /// The saved version to replay when there is no draft; the current one if neither.
    pub version: Option<u32>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Without `from`: how many days before `to` the range starts (1 to [`MAX_RANGE_DAYS`];
    /// [`DEFAULT_RANGE_DAYS`] unless given).
    pub days: Option<i64>,
    /// List the changed calls after this entry (the previous answer's `next`).
    pub after: Option<i64>,
    pub limit: usize,
    /// Only this profile's calls (an agent replays its own).
    pub profile: Option<ProfileId>,
}

impl ReplayRequest {
    /// `draft` over the last `days` days, its first `limit` changed calls.
    /// `days` is checked when the replay runs, like every range (`range_too_long`).
    pub fn recent(draft: Option<Kit>, days: i64, limit: usize) -> ReplayRequest {
        ReplayRequest {
            draft,
            version: None,
            from: None,
            to: None,
            days: Some(days),
            after: None,
            limit,
            profile: None,
        }
    }
}

/// A replay's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplayReport {
    pub kit: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub summary: Summary,
    /// The changed calls after `after`, oldest first, at most `limit`.
    pub changes: Vec<Change>,
    /// Pass as `after` for the next changed calls; absent on the last page.
    pub next: Option<i64>,
}

/// A running shadow with its totals and what promoting it would change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShadowView {
    pub shadow: Shadow,
    pub totals: ShadowTotals,
    /// What promoting it widens and narrows against the live version.
    pub diff: KitDiff,
    /// The live version now (promote with it as If-Match).
    pub live_version: u32,
}

/// The bounded range `[from, to)` a request asks for.
fn range(req: &ReplayRequest, now: DateTime<Utc>) -> Result<(DateTime<Utc>, DateTime<Utc>)> {
    let to = req.to.unwrap_or(now);
    let days = req.days.unwrap_or(DEFAULT_RANGE_DAYS);
    if days > MAX_RANGE_DAYS {
        return Err(too_long());
    }
    if days < 1 {
        return Err(Error::invalid("invalid_range", "`days` is at least 1"));
    }
    let from = match req.from {
        Some(from) => from,
        None => to.checked_sub_signed(Duration::days(days)).ok_or_else(|| {
            Error::invalid("invalid_range", "`to` is before the earliest moment a replay can start from")
        })?,
    };
    if to > now + Duration::minutes(1) {
        return Err(Error::invalid(
            "range_in_future",
            "`to` is in the future: replay reads recorded calls only",
        ));
    }
    if from >= to {
        return Err(Error::invalid("invalid_range", "`from` must be before `to`"));
    }
    if to - from > Duration::days(MAX_RANGE_DAYS) {
        return Err(too_long());
    }
    Ok((from, to))
}

fn too_long() -> Error {
    Error::invalid(
        "range_too_long",
        format!(
            "a replay reads at most {MAX_RANGE_DAYS} days; narrow `from` and `to`, or ask for fewer `days`"
        ),
    )
}

/// How often replays may run, each reading up to a month of a tenant's calls: per tenant at
/// most [`ReplayLimits::at_once`] at a time, and per minute [`ReplayLimits::per_minute`] for
/// its humans and company key together, [`ReplayLimits::agent_per_minute`] for each agent.
/// Every transport and the console go through it ([`Gateway::replay`]).
#[derive(Clone, Copy, Debug)]
pub struct ReplayLimits {
    pub at_once: usize,
    pub per_minute: u32,
    pub agent_per_minute: u32,
}

impl Default for ReplayLimits {
    fn default() -> Self {
        ReplayLimits { at_once: 2, per_minute: 30, agent_per_minute: 6 }
    }
}

/// A bucket of replays a caller may start: `tokens` left as of `at`.
struct Bucket {
    tokens: f64,
    at: std::time::Instant,
}

/// The replays running and the buckets, per tenant and caller ([`ReplayLimits`]), in memory.
#[derive(Default)]
pub(crate) struct ReplayMeter {
    running: std::sync::Mutex<HashMap<TenantId, usize>>,
    buckets: std::sync::Mutex<HashMap<(TenantId, Option<ProfileId>), Bucket>>,
}

/// A replay's place among its tenant's running ones, given back when it ends.
pub(crate) struct Turn<'a> {
    meter: &'a ReplayMeter,
    tenant: TenantId,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut running = self.meter.running.lock().expect("not poisoned");
        if let Some(n) = running.get_mut(&self.tenant) {
            *n = n.saturating_sub(1);
        }
    }
}

impl ReplayMeter {
    /// A turn for a replay by `agent` (or the tenant's humans), or `replay_rate_limited`
    /// with when to ask again.
    fn admit(&self, limits: ReplayLimits, tenant: &TenantId, agent: Option<&ProfileId>) -> Result<Turn<'_>> {
        let per_minute =
            f64::from(if agent.is_some() { limits.agent_per_minute } else { limits.per_minute }.max(1));
        let mut buckets = self.buckets.lock().expect("not poisoned");
        let b = buckets
            .entry((tenant.clone(), agent.cloned()))
            .or_insert(Bucket { tokens: per_minute, at: std::time::Instant::now() });
        let now = std::time::Instant::now();
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_minute / 60.0).min(per_minute);
        b.at = now;
        if b.tokens < 1.0 {
            let wait = ((1.0 - b.tokens) * 60.0 / per_minute).ceil() as u32;
            return Err(throttled(
                format!("at most {per_minute} replays a minute; ask again in {wait} s"),
                wait,
            ));
        }
        let mut running = self.running.lock().expect("not poisoned");
        let n = running.entry(tenant.clone()).or_default();
        if *n >= limits.at_once {
            return Err(throttled(
                format!("{} replays of this tenant are running; ask again when one ends", *n),
                1,
            ));
        }
        *n += 1;
        b.tokens -= 1.0;
        Ok(Turn { meter: self, tenant: tenant.clone() })
    }
}

fn throttled(message: String, retry_after_secs: u32) -> Error {
    Error::Throttled { code: "replay_rate_limited", message, retry_after_secs: retry_after_secs.max(1) }
}

/// Each recorded call's chain of effective kits under the draft (the draft in place of the
/// kit it drafts, every other level's own kit at the version the call was decided under,
/// narrowed from the root down), built once per distinct chain of versions.
struct Chains {
    name: String,
    /// For a call recorded without its chain's kits: the draft alone.
    alone: Arc<Vec<Kit>>,
    versions: HashMap<String, Vec<Kit>>,
    built: HashMap<Vec<KitRef>, Arc<Vec<Kit>>>,
}

impl Chains {
    fn new(name: &str, draft: Kit) -> Chains {
        let alone = Arc::new(vec![draft]);
        Chains { name: name.to_string(), alone, versions: HashMap::new(), built: HashMap::new() }
    }

    async fn of(&mut self, gw: &Gateway, tenant: &TenantId, i: &Inputs) -> Result<Arc<Vec<Kit>>> {
        if i.kits.is_empty() {
            return Ok(self.alone.clone());
        }
        if let Some(k) = self.built.get(&i.kits) {
            return Ok(k.clone());
        }
        let mut own = Vec::with_capacity(i.kits.len());
        for r in &i.kits {
            own.push(match r.kit == self.name {
                true => self.alone[0].clone(),
                false => self.version(gw, tenant, r).await?,
            });
        }
        let kits = Arc::new(crate::domain::chain::narrowed(own));
        self.built.insert(i.kits.clone(), kits.clone());
        Ok(kits)
    }

    /// Version `r` of a kit, from its versions read once.
    async fn version(&mut self, gw: &Gateway, tenant: &TenantId, r: &KitRef) -> Result<Kit> {
        if !self.versions.contains_key(&r.kit) {
            let all = gw.kit_versions(tenant, &r.kit).await?.into_iter().map(|v| v.kit).collect();
            self.versions.insert(r.kit.clone(), all);
        }
        let all = &self.versions[&r.kit];
        all.iter().find(|k| k.version.0 == r.version).cloned().ok_or(Error::NotFound { what: "kit version" })
    }
}

impl Gateway {
    /// Decides the recorded calls in the range again whose chain has kit `name` (its own
    /// profiles' and their descendants'), under the draft (or saved version) `req` names, each
    /// under its chain's effective kits as the draft makes them. Writes nothing. Metered
    /// ([`ReplayLimits`]): `replay_rate_limited` past it.
    pub async fn replay(&self, tenant: &TenantId, name: &str, req: ReplayRequest) -> Result<ReplayReport> {
        let _turn = self.replays.admit(self.config.replays, tenant, req.profile.as_ref())?;
        let (from, to) = range(&req, Utc::now())?;
        self.refuse_archived(tenant, from).await?;
        let live = self.current_kit(tenant, name).await?;
        let draft = self.draft_to_replay(tenant, name, &req, live).await?;
        let clock = self.tenant_clock(tenant).await?;
        let mut replayer = Replayer::new(&clock.calendar, self.config.approval_ttl_secs);
        let mut chains = Chains::new(name, draft);
        let limit = req.limit.clamp(1, MAX_CHANGES);
        let (mut changes, mut next) = (Vec::new(), None);
        let (mut seq, end) = self.seq_range(tenant, (from, to)).await?;
        loop {
            let chunk = self.recorded(tenant, name, (from, to), req.profile.as_ref(), (seq, end)).await?;
            let Some(last) = chunk.last() else { break };
            seq = last.seq;
            for call in &chunk {
                let kits = chains.of(self, tenant, &call.inputs).await?;
                let Some(change) = replayer.step(call, &kits) else { continue };
                if req.after.is_some_and(|a| change.seq <= a) {
                    continue;
                }
                if changes.len() < limit {
                    changes.push(change);
                } else if next.is_none() {
                    next = changes.last().map(|c: &Change| c.seq);
                }
            }
        }
        Ok(ReplayReport { kit: name.to_string(), from, to, summary: replayer.summary, changes, next })
    }

    /// [`Gateway::replay`] for an agent: its own calls, of its own kit only.
    pub async fn replay_own(
        &self,
        subject: &crate::domain::principal::Subject,
        name: &str,
        mut req: ReplayRequest,
    ) -> Result<ReplayReport> {
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        if links[0].kit.name != name {
            return Err(Error::NotFound { what: "kit" });
        }
        req.profile = Some(subject.profile.clone());
        self.replay(&subject.tenant, name, req).await
    }

    /// The kit a replay decides under: the draft (checked), or a saved version.
    async fn draft_to_replay(
        &self,
        tenant: &TenantId,
        name: &str,
        req: &ReplayRequest,
        live: KitRecord,
    ) -> Result<Kit> {
        match (&req.draft, req.version) {
            (Some(kit), _) => {
                check_draft(kit, name)?;
                Ok(kit.clone())
            }
            (None, Some(v)) => self
                .kit_versions(tenant, name)
                .await?
                .into_iter()
                .find(|r| r.kit.version == KitVersion(v))
                .map(|r| r.kit)
                .ok_or(Error::NotFound { what: "kit version" }),
            (None, None) => Ok(live.kit),
        }
    }

    /// The seqs of the tenant's entries in `[from, to)`: after the first and before the
    /// second. Entries are appended in time order under the tenant's lock, so the bounds are
    /// found by bisecting seqs on the (tenant, seq) index, however long the log is before or
    /// after the range.
    async fn seq_range(
        &self,
        tenant: &TenantId,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(i64, i64)> {
        let first = self.first_seq_at(tenant, from).await?;
        let end = self.first_seq_at(tenant, to).await?;
        Ok((first.map_or(i64::MAX - 1, |s| s - 1), end.unwrap_or(i64::MAX)))
    }

    /// `409 range_archived` when entries from `from` on were deleted from the database after
    /// they were archived: the message says where the archive is and from when a replay can
    /// start.
    async fn refuse_archived(&self, tenant: &TenantId, from: DateTime<Utc>) -> Result<()> {
        let Some(cut) = crate::audit::activity::checkpoint(&self.store, tenant).await? else { return Ok(()) };
        if from > cut.at {
            return Ok(());
        }
        let archive = self.config.archive_url.as_deref().map_or(String::new(), |a| format!(" at {a}"));
        Err(Error::Conflict {
            code: "range_archived",
            message: format!(
                "the log's entries up to {} are no longer in the database: they are in its archive{archive} (docs/archive.md); replay from a later `from`",
                cut.at.to_rfc3339()
            ),
        })
    }

    /// The first seq of the tenant's log appended at or after `t`, if any.
    async fn first_seq_at(&self, tenant: &TenantId, t: DateTime<Utc>) -> Result<Option<i64>> {
        crate::audit::activity::first_seq_at(&self.store, tenant, t).await
    }

    /// Up to [`CHUNK`] recorded calls in `[from, to)` whose chain has kit `name`, between
    /// entries `after` and `before` (exclusive), with the fates of their parks.
    async fn recorded(
        &self,
        tenant: &TenantId,
        name: &str,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
        profile: Option<&ProfileId>,
        (after, before): (i64, i64),
    ) -> Result<Vec<Recorded>> {
        let like = kit_in_chain(name);
        let range = crate::audit::activity::DecidedRange {
            like: &like,
            at: (from, to),
            profile,
            seqs: (after, before),
        };
        let rows = crate::audit::activity::decided_calls(&self.store, tenant, &range, CHUNK).await?;
        // A park's approval, read from its entry once.
        let mut approvals = Vec::with_capacity(rows.len());
        for (_, kind, _, detail, _) in &rows {
            approvals.push(match kind.as_str() {
                "park" => stored::json("activity detail", detail)?["approval_id"].as_str().map(String::from),
                _ => None,
            });
        }
        let parks: Vec<String> = approvals.iter().flatten().cloned().collect();
        let fates = self.park_fates(&parks).await?;
        let mut out = Vec::with_capacity(rows.len());
        for ((seq, kind, verdict, _, inputs), approval) in rows.into_iter().zip(approvals) {
            let inputs: Inputs = stored::decode("decision inputs", &inputs)?;
            if !inputs.has_kit(name) || inputs.chain.is_empty() {
                continue;
            }
            let fate = match (kind.as_str(), verdict.as_deref()) {
                ("park", _) => approval.and_then(|a| fates.get(&a).copied()).unwrap_or(Fate::Held),
                ("refusal", Some("unavailable")) | ("hold", _) => Fate::Failed,
                _ => Fate::Ran,
            };
            out.push(Recorded { seq, inputs, fate });
        }
        Ok(out)
    }

    /// What became of the approvals `ids`: released (denied or expired, when) or held.
    async fn park_fates(&self, ids: &[String]) -> Result<HashMap<String, Fate>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let rows = crate::domain::approvals::outcomes(&self.store, ids).await?;
        Ok(rows
            .into_iter()
            .map(|(id, status, decided, expires)| {
                let fate = match status.as_str() {
                    // Decided before it expired, or expired: whichever came first.
                    "denied" | "expired" => {
                        Fate::Released(decided.map_or(expires, |d| d.min(expires)).timestamp())
                    }
                    _ => Fate::Held,
                };
                (id, fate)
            })
            .collect())
    }

    /// Starts `draft` as the shadow of its kit, beside the live version.
    pub async fn start_shadow(&self, tenant: &TenantId, draft: Kit, by: &str) -> Result<Shadow> {
        let name = draft.name.clone();
        check_draft(&draft, &name)?;
        let live = self.current_kit(tenant, &name).await?;
        let (t, by) = (tenant.clone(), by.to_string());
        let started = self.write(move |c| shadow::start(c, &t, &draft, live.kit.version.0, &by)).await?;
        self.shadow_cache.invalidate();
        Ok(started)
    }

    /// The shadow of kit `name`, its totals since it started and its diff against the live kit.
    pub async fn shadow(&self, tenant: &TenantId, name: &str) -> Result<ShadowView> {
        let live = self.current_kit(tenant, name).await?;
        let s = shadow::get(&self.store, tenant, name).await?.ok_or(Error::NotFound { what: "shadow" })?;
        let totals = shadow::totals(&self.store, tenant, name, &s).await?;
        let diff = KitDiff::between(&live.kit, &s.kit);
        Ok(ShadowView { shadow: s, totals, diff, live_version: live.kit.version.0 })
    }

    /// Ends the shadow of kit `name` without saving it.
    pub async fn discard_shadow(&self, tenant: &TenantId, name: &str, by: &str) -> Result<()> {
        let (t, n, by) = (tenant.clone(), name.to_string(), by.to_string());
        self.write(move |c| shadow::end(c, &t, &n, "discarded", &by)).await?;
        self.shadow_cache.invalidate();
        Ok(())
    }

    /// Saves the shadow of kit `name` that started at entry `shadow` as the kit's next version
    /// (edited from `expected`, like any save) and ends it, in one job that reads both: a
    /// shadow discarded and started again since it was read is `shadow_changed`, and nothing
    /// is saved or ended.
    pub async fn promote_shadow(
        &self,
        tenant: &TenantId,
        name: &str,
        (expected, shadow): (KitVersion, i64),
        by: &str,
    ) -> Result<KitRecord> {
        let (t, n, by) = (tenant.clone(), name.to_string(), by.to_string());
        let record = self
            .write(move |c| {
                let s = shadow::take(c, &t, &n, shadow, &by)?;
                crate::ops::kits::save_in(c, &t, s.kit, Some(expected), &by)
            })
            .await?;
        self.kit_saved(tenant);
        Ok(record)
    }
}

/// A draft must validate and name the kit it drafts.
fn check_draft(kit: &Kit, name: &str) -> Result<()> {
    kit.validate().map_err(|e| Error::invalid("invalid_kit", e.to_string()))?;
    if kit.name != name {
        return Err(Error::invalid(
            "kit_name_mismatch",
            format!("the draft's name \"{}\" is not \"{name}\"", kit.name),
        ));
    }
    Ok(())
}
