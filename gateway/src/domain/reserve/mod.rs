//! The writer-side half of a governed call: decide and reserve in one job, settle in another.
//!
//! [`ReserveJob::run`] reads everything it decides on inside the job, on the writer's
//! connection: the status of the acting profile and of every ancestor (a revoke committed a
//! moment ago is seen), the running totals and company credit (no two calls take the last of
//! a cap), and the current version of every kit the cached ancestry used (a job that finds a
//! newer one answers [`Reserved::Stale`] and writes nothing). Then it takes exactly one of
//! three outcomes, each its own function: refuse (record, count repeats), park (reserve a
//! hold, open an approval) or execute (reserve and, for an in-process connector, settle in
//! the same transaction). A repeated `Idempotency-Key` is answered from the store only after
//! the profile is known to be active, so a revoked agent never gets a replay.
//!
//! A job may run twice (see [`crate::store::writer`]); the connector's answer is remembered in
//! [`ReserveJob::answer`], so it is asked once.
//!
//! Cost, with warm caches: a call executed in process is this one job and no read outside it.
//! On PostgreSQL the job runs in a batch of its tenant's jobs that holds the tenant's lock
//! ([`crate::Gateway::write_for`]); the batch reads every call's standing in one statement
//! and writes every call's hold, ledger entries, moved totals and log entry in one more
//! ([`book`]), so a call in a batch of 31 costs about a fifth of a statement, and a lone call
//! 5 statements and 7 round trips (BEGIN, the lock, its standing, the chain head, its write,
//! the notification, COMMIT), for the sandbox `web.read` and `cards.charge` alike. On SQLite,
//! where no statement leaves the process, each part of the ledger write is a statement: 6 for
//! `web.read` (priced, so credit moves), 5 for `cards.charge`. `gateway/tests/statements.rs`
//! counts a lone call's statements so they cannot creep back, and `make bench-gateway` prints
//! the batched figure
//! (docs/architecture.md, what a governed action costs).

pub(crate) mod book;
pub(crate) mod claims;
mod repeats;
mod windows;

pub(crate) use claims::forget_claim;
use claims::{First, finish_idempotency, store_idempotency};
pub(crate) use repeats::count_repeat;
pub(crate) use windows::{forget_ended_windows, rate_counts};

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use policy::{
    CheckedArgs, Decision, DecisionInput, EngineVerdict, Envelope, Kit, Money, Refusal, SubjectStatus,
    ToolSpec, evaluate,
};
use serde_json::{Value, json};

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::domain::calls::{ActionResponse, Answer, Disposition, Executed, Settling, request};
use crate::domain::chain::Link;
use crate::domain::connector::{Call, Connector, ConnectorKind, Done, Failure, Full};
use crate::domain::decision::{self, Rates};
use crate::domain::ledger::leases::{self, Lease};
use crate::domain::ledger::{self, HoldEnd, NewHold};
use crate::domain::periods::{self, DayTotals, TenantClock, Window};
use crate::domain::principal::{ByAgent, Subject};
use crate::domain::replay::KitRef;
use crate::domain::shadow::ShadowChain;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::Tx;

pub(crate) type ConnectorOutcome = std::result::Result<Done, Failure>;

/// What a reservation job decided.
pub(crate) enum Reserved {
    /// The answer.
    Final(ActionResponse),
    /// A hold is reserved; the connector must be called outside the writer, then settled.
    Hold { hold: String, cost: Money, kit_version: u32 },
    /// A kit the cached ancestry used is no longer current; nothing was written.
    Stale,
}

/// One reservation, prepared outside the writer. Cheap to clone (the ancestry is shared).
#[derive(Clone)]
pub(crate) struct ReserveJob {
    pub subject: Subject,
    pub tool: ToolSpec,
    pub args: Value,
    pub args_digest: String,
    pub checked: CheckedArgs,
    pub links: Arc<Vec<Link>>,
    pub idem: Option<String>,
    pub request_digest: String,
    /// How long a parked call waits unless its approval rule says otherwise.
    pub ttl: Duration,
    /// The agent's words on why, checked; kept only if the call parks.
    pub justification: Option<String>,
    pub connector: Arc<dyn Connector>,
    /// The in-process connector's answer, asked once however often the job runs.
    pub answer: Arc<OnceLock<Option<ConnectorOutcome>>>,
    /// The lease a hold carried out after this job takes ([`crate::domain::ledger::leases`]).
    pub lease: Lease,
    /// When the call was made: the day its hold counts toward and its rate windows.
    pub now: DateTime<Utc>,
    /// The tenant's calendar and rate limit as cached; a job that finds them changed
    /// answers [`Reserved::Stale`].
    pub clock: Arc<TenantClock>,
    /// The shadows running on the kits of the chain, each as the chain's effective kits with
    /// the draft in its kit's place ([`crate::domain::shadow::ShadowChain`]).
    pub shadows: Arc<Vec<ShadowChain>>,
    /// The call's span as a W3C `traceparent`, when traced: a park keeps it for its decision.
    pub traceparent: Option<String>,
}

/// A hold a decision already holds: its amount, its platform-credit part and its day.
pub(crate) struct Own {
    pub amount: Money,
    pub credit: Money,
    /// `None` for a hold from before periods, which counts toward no period.
    pub day: Option<NaiveDate>,
}

/// What a reservation decides on, as the database has it now.
pub(crate) struct Standing {
    /// The first status in the chain that is not active (the profile's own or an
    /// ancestor's), or active.
    pub status: SubjectStatus,
    /// Whether a kit in the chain has a version newer than the one the links were built from.
    pub stale: bool,
    /// Each account's running totals, in chain order.
    pub totals: Vec<ledger::Totals>,
    /// The company's platform credit left: its balance less the credit pending holds hold.
    pub credit: Money,
    /// The tenant's calendar and rate limit.
    pub clock: TenantClock,
    /// The chain's day totals from [`Reach::days_from`] on.
    pub days: Vec<DayTotals>,
    /// The calls counted in each of [`Reach::windows`] that has a count.
    pub counts: Vec<(String, i64)>,
}

/// What a standing read reaches beyond balances: the chain's days from a date on (for period
/// limits) and the counts of some rate windows.
#[derive(Default)]
pub(crate) struct Reach<'a> {
    pub days_from: Option<NaiveDate>,
    pub windows: &'a [String],
}

/// The standing columns of one profile, its tenant's calendar and rate limit, and `kind`
/// `s`; the days and window parts fill the same twelve columns (`d`, `r`) so that one
/// statement reads them all.
const STANDING_COLUMNS: &str = "p.id, p.status, (SELECT MAX(version) FROM kits k WHERE k.tenant_id = p.tenant_id AND k.name = p.kit_name), \
     COALESCE(a.posted_units, 0), COALESCE(a.pending_units, 0), t.credit_units, t.credit_pending_units, \
     t.time_zone, t.next_time_zone, t.time_zone_from, t.rate_calls, t.rate_per, 's'";

/// The chain's [`Standing`] in one statement. Read under the tenant's lock (the caller took
/// it), which every writer of the tenant's accounts, days, rate counts, credit and profile
/// statuses takes first, so nothing read here changes before commit: no row lock is needed.
/// In a PostgreSQL batch that keeps its calls' writes, the batch's [`book`] answers it when
/// it read the chain already, with the moves of the calls before this one.
pub(crate) fn current_standing(
    c: &dyn Tx,
    tenant: &TenantId,
    links: &[Link],
    reach: &Reach,
) -> Result<Standing> {
    if let Some(s) = book::standing(tenant, links, reach) {
        return s;
    }
    let ids: Vec<&str> = links.iter().map(|l| l.profile.as_str()).collect();
    let rows = book::reading(|| standing_rows(c, tenant, &ids, reach))?;
    let read = book::Read::from_rows(&ids, reach, &rows)?;
    if !book::deferring() {
        return read.standing(links, reach);
    }
    book::remember(tenant, read);
    book::standing(tenant, links, reach).unwrap_or(Err(Error::NotFound { what: "agent profile" }))
}

/// The rows of the standing of the profiles `ids` of `tenant` ([`book::Read::from_rows`]):
/// one per profile, one per day from `reach.days_from` on, one per rate window with a count.
pub(crate) fn standing_rows(
    c: &dyn Tx,
    tenant: &TenantId,
    ids: &[&str],
    reach: &Reach,
) -> Result<Vec<crate::sql::Row>> {
    let marks = vec!["?"; ids.len()].join(", ");
    let mut sql = format!(
        "SELECT {STANDING_COLUMNS} FROM agent_profiles p JOIN tenants t ON t.id = p.tenant_id \
         LEFT JOIN budget_accounts a ON a.profile_id = p.id WHERE p.tenant_id = ? AND p.id IN ({marks})"
    );
    let from = reach.days_from.map(|d| d.to_string());
    let mut args: Vec<&dyn crate::sql::ToValue> = vec![tenant];
    args.extend(ids.iter().map(|p| p as &dyn crate::sql::ToValue));
    if let Some(from) = &from {
        sql.push_str(&format!(
            " UNION ALL SELECT profile_id, NULL, NULL, posted_units, pending_units, NULL, NULL, day, NULL, NULL, NULL, NULL, 'd' \
             FROM budget_days WHERE profile_id IN ({marks}) AND day >= ?"
        ));
        args.extend(ids.iter().map(|p| p as &dyn crate::sql::ToValue));
        args.push(from);
    }
    if !reach.windows.is_empty() {
        let keys = vec!["?"; reach.windows.len()].join(", ");
        sql.push_str(&format!(
            " UNION ALL SELECT window_key, NULL, NULL, calls, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'r' \
             FROM rate_counts WHERE tenant_id = ? AND window_key IN ({keys})"
        ));
        args.push(tenant);
        args.extend(reach.windows.iter().map(|k| k as &dyn crate::sql::ToValue));
    }
    Ok(c.rows(&sql, &args)?)
}

/// Everything a call by the first of `links` is decided on at `now`: the chain's standing,
/// the local day, each period limit's period and each matching rate window.
pub(crate) struct Facts {
    pub standing: Standing,
    pub day: NaiveDate,
    pub periods: Vec<policy::PeriodView>,
    pub windows: Vec<Window>,
}

impl Facts {
    /// Reads the facts in one statement, under the tenant's lock (the caller took it). The
    /// windows' keys come from `rate`, the tenant's rate limit as the caller knows it; the
    /// caller compares it with the one read ([`Standing::clock`]). The days and rate windows
    /// the `shadows` read too are read in the same statement.
    pub(crate) fn read(
        c: &dyn Tx,
        tenant: &TenantId,
        links: &[Link],
        rate: Option<periods::TenantRate>,
        at: (&str, DateTime<Utc>),
        shadows: &[ShadowChain],
    ) -> Result<Facts> {
        let (mut windows, keys, days_from) = Facts::reach(links, rate, at, shadows);
        let reach = Reach { days_from, windows: &keys };
        let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        let standing = current_standing(c, tenant, links, &reach)?;
        let day = standing.clock.calendar.day(at.1);
        let periods = periods::period_views(&kits, &standing.clock.calendar, day, &standing.days);
        periods::fill_counts(&mut windows, &standing.counts);
        Ok(Facts { standing, day, periods, windows })
    }

    /// How far [`Facts::read`] reads: the call's rate windows, the keys of those and of the
    /// `shadows`' windows, and the first day any period limit of the chain or a shadow needs.
    pub(crate) fn reach(
        links: &[Link],
        rate: Option<periods::TenantRate>,
        (action, now): (&str, DateTime<Utc>),
        shadows: &[ShadowChain],
    ) -> (Vec<Window>, Vec<String>, Option<NaiveDate>) {
        let mut kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        let windows = periods::rate_windows(&links[0].profile, kits[0], rate, action, now);
        let mut keys: Vec<String> =
            periods::distinct_keys(&windows).into_iter().map(|(k, _)| k.to_string()).collect();
        for s in shadows {
            kits.extend(s.kits.iter());
            let more = s.windows(&links[0].profile, None, (action, now));
            let more: Vec<String> =
                periods::distinct_keys(&more).into_iter().map(|(k, _)| k.to_string()).collect();
            keys.extend(more.into_iter().filter(|k| !keys.contains(k)).collect::<Vec<_>>());
        }
        (windows, keys, periods::first_day_needed(&kits, now.date_naive()))
    }

    /// The facts a parked call is decided on again when approved at `now`: the chain's
    /// standing read now (under the tenant's lock, taken here) with `own`, the hold it already
    /// holds, given back, so it sees the balances as if its hold were not there; the periods
    /// of the day it was reserved on; no rate window ([`Rates::CountedWhenParked`]).
    pub(crate) fn parked(
        c: &dyn Tx,
        tenant: &TenantId,
        links: &[Link],
        own: Option<Own>,
        now: DateTime<Utc>,
    ) -> Result<Facts> {
        activity::lock_tenant(c, tenant)?;
        let held_on = own.as_ref().and_then(|o| o.day);
        let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        let reach =
            Reach { days_from: held_on.and_then(|d| periods::first_day_needed(&kits, d)), windows: &[] };
        let mut standing = current_standing(c, tenant, links, &reach)?;
        if let Some(o) = &own {
            for t in &mut standing.totals {
                t.pending = t.pending.saturating_sub(o.amount);
            }
            for d in standing.days.iter_mut().filter(|d| Some(d.day) == o.day) {
                d.pending = d.pending.saturating_sub(o.amount);
            }
            standing.credit = standing.credit.checked_add(o.credit).unwrap_or(Money::MAX);
        }
        let day = held_on.unwrap_or_else(|| standing.clock.calendar.day(now));
        let periods = held_on.map_or_else(Vec::new, |d| {
            periods::period_views(&kits, &standing.clock.calendar, d, &standing.days)
        });
        Ok(Facts { standing, day, periods, windows: Vec::new() })
    }

    pub(crate) fn budgets(&self, links: &[Link]) -> Vec<policy::BudgetView> {
        let kits: Vec<&Kit> = links.iter().map(|l| &l.kit).collect();
        ledger::views(&self.standing.totals, &kits)
    }

    pub(crate) fn rates(&self) -> Vec<policy::RateView> {
        self.windows.iter().map(|w| w.view).collect()
    }

    /// The engine's input for `action` under `kit` on these facts ([`decision::input`]): the
    /// chain's status and the company's credit as read in the job, its periods, `budgets` made
    /// from them ([`Facts::budgets`]) and `rates` ([`Facts::rates`], or why none count).
    pub(crate) fn input<'a>(
        &'a self,
        kit: &'a Kit,
        action: policy::ActionRequest<'a>,
        budgets: &'a [policy::BudgetView],
        rates: Rates<'a>,
    ) -> DecisionInput<'a> {
        decision::input(kit, action, self.standing_views(budgets), rates)
    }

    /// The standing part of a decision's input, with `budgets` made from these facts.
    pub(crate) fn standing_views<'a>(&'a self, budgets: &'a [policy::BudgetView]) -> decision::Standing<'a> {
        decision::Standing {
            status: self.standing.status,
            budgets,
            credit: self.standing.credit,
            periods: &self.periods,
        }
    }

    /// The budget, period and rate views of the same standing under the shadow's kits.
    fn under(&self, shadow: &ShadowChain, profile: &ProfileId, at: (&str, DateTime<Utc>)) -> ShadowViews {
        let kits: Vec<&Kit> = shadow.kits.iter().collect();
        let periods =
            periods::period_views(&kits, &self.standing.clock.calendar, self.day, &self.standing.days);
        let mut windows = shadow.windows(profile, self.standing.clock.rate, at);
        periods::fill_counts(&mut windows, &self.standing.counts);
        ShadowViews {
            budgets: ledger::views(&self.standing.totals, &kits),
            periods,
            rates: windows.iter().map(|w| w.view).collect(),
            windows,
        }
    }
}

/// The views a shadow decides on, and its rate windows.
struct ShadowViews {
    budgets: Vec<policy::BudgetView>,
    periods: Vec<policy::PeriodView>,
    rates: Vec<policy::RateView>,
    windows: Vec<Window>,
}

/// What a job that decides a call settled on: the facts it read, the decision, and what the
/// call's entry records of both.
struct Decided<'a> {
    facts: Facts,
    decision: Decision,
    inputs: String,
    tenant: &'a TenantId,
}

impl Decided<'_> {
    /// The call as counted; a `recorded` call's refusal carries what it was decided on.
    fn counted(&self, recorded: bool) -> Counted<'_> {
        let (tenant, day, windows) = (self.tenant, self.facts.day, &self.facts.windows[..]);
        Counted { tenant, day, windows, inputs: self.inputs.clone(), recorded }
    }
}

/// What [`ReserveJob::gate`] decided about a call that holds nothing.
pub(crate) enum Gated {
    /// Let it through; it is counted in its windows. What it was decided on, for its entry.
    Allowed { inputs: String },
    /// Refused: the answer (recorded, and counted as [`ReserveJob::run`] counts a refusal).
    Refused(ActionResponse),
    /// As [`Reserved::Stale`].
    Stale,
}

impl ReserveJob {
    pub(crate) fn run(&self, c: &dyn Tx) -> Result<Reserved> {
        let facts = self.facts(c)?;
        if facts.standing.status == SubjectStatus::Active
            && let Some(replay) = self.replay(c)?
        {
            return Ok(replay);
        }
        if facts.standing.stale || facts.standing.clock != *self.clock {
            return Ok(Reserved::Stale);
        }
        let d = self.decide(c, facts)?;
        let call = d.counted(true);
        match (d.decision.verdict, d.decision.refusal) {
            (EngineVerdict::Deny, Some(r @ Refusal::RateLimited { .. })) => {
                self.rate_limited(c, &d.decision, r, &call)
            }
            (EngineVerdict::Deny, Some(r)) => self.refuse(c, &d.decision, r, &call),
            (EngineVerdict::Freeze, Some(r)) => self.park(c, &d.decision, r, &call),
            _ => self.execute(c, &d.decision, &call),
        }
    }

    /// A call that holds nothing and runs in the caller's own job (the brain's governance
    /// tools): decided exactly as [`ReserveJob::run`] decides, on the same facts (statuses,
    /// budgets, periods, rate windows, the shadow), refused and counted the same way. What a
    /// human could release (a freeze) lets it through: these tools have their own human step.
    /// A `recorded` call (one that leaves an entry when it runs) keeps what it was decided on
    /// with its refusal too, so replay sees it either way; the others keep it with neither.
    pub(crate) fn gate(&self, c: &dyn Tx, recorded: bool) -> Result<Gated> {
        let facts = self.facts(c)?;
        if facts.standing.stale || facts.standing.clock != *self.clock {
            return Ok(Gated::Stale);
        }
        let d = self.decide(c, facts)?;
        let call = d.counted(recorded);
        let answer = match (d.decision.verdict, d.decision.refusal) {
            (EngineVerdict::Deny, Some(r @ Refusal::RateLimited { .. })) => {
                self.rate_limited(c, &d.decision, r, &call)?
            }
            (EngineVerdict::Deny, Some(r)) => self.refuse(c, &d.decision, r, &call)?,
            _ => {
                call.count(c)?;
                return Ok(Gated::Allowed { inputs: call.inputs });
            }
        };
        match answer {
            Reserved::Final(resp) => Ok(Gated::Refused(resp)),
            _ => unreachable!("a refusal is final"),
        }
    }

    /// The facts this call is decided on, read under the tenant's lock.
    fn facts(&self, c: &dyn Tx) -> Result<Facts> {
        // On PostgreSQL the tenant and its accounts are locked (the accounts by reading their
        // totals) before the standing is read: a revoke holding them makes this call wait and
        // then see the revoke ([`crate::ops::revoke`]). In a batch of the tenant's jobs
        // ([`crate::Gateway::write_for`]) the tenant's lock is already held.
        activity::lock_tenant(c, &self.subject.tenant)?;
        let at = (self.tool.name.as_str(), self.now);
        Facts::read(c, &self.subject.tenant, &self.links, self.clock.rate, at, &self.shadows)
    }

    /// The engine's decision on `facts`, the shadow's recorded beside it when one runs.
    fn decide(&self, c: &dyn Tx, facts: Facts) -> Result<Decided<'_>> {
        let budgets = facts.budgets(&self.links);
        let rates = facts.rates();
        let input = facts.input(
            &self.links[0].kit,
            request(&self.tool, &self.checked),
            &budgets,
            Rates::Counted(&rates),
        );
        let decision = evaluate(&input);
        for shadow in self.shadows.iter() {
            self.shadow_decides(c, (&facts, &input), &decision, shadow)?;
        }
        let inputs = self.inputs(&facts, &budgets, &decision);
        Ok(Decided { facts, decision, inputs, tenant: &self.subject.tenant })
    }

    /// Decides the call under `shadow` on the same facts, records it when it differs from the
    /// live `decision`, and counts the call in the shadow's own rate windows when the shadow
    /// would have let it past them.
    fn shadow_decides(
        &self,
        c: &dyn Tx,
        (facts, input): (&Facts, &DecisionInput),
        decision: &Decision,
        shadow: &ShadowChain,
    ) -> Result<()> {
        let v = facts.under(shadow, &self.subject.profile, (self.tool.name.as_str(), self.now));
        let (budgets, periods, rates) = (&v.budgets, &v.periods, &v.rates);
        let standing = decision::Standing { budgets, periods, ..facts.standing_views(budgets) };
        let shadowed =
            evaluate(&decision::input(&shadow.kits[0], input.action, standing, Rates::Counted(rates)));
        crate::domain::shadow::record(c, &self.subject, &self.tool.name, (decision, &shadowed), shadow)?;
        if !matches!(shadowed.refusal, Some(Refusal::RateLimited { .. })) {
            let own: Vec<Window> = v.windows.into_iter().filter(|w| w.view.limit.is_some()).collect();
            let counted = Counted {
                tenant: &self.subject.tenant,
                day: facts.day,
                windows: &own,
                inputs: String::new(),
                recorded: false,
            };
            counted.count(c)?;
        }
        Ok(())
    }

    /// What the engine read to decide this call, and its decision, as recorded with the
    /// call's entry.
    fn inputs(&self, facts: &Facts, budgets: &[policy::BudgetView], decision: &Decision) -> String {
        let a = &self.checked;
        let inputs = crate::domain::replay::Inputs {
            kit: self.kit().name.clone(),
            kits: self
                .links
                .iter()
                .map(|l| KitRef { kit: l.kit.name.clone(), version: l.kit.version.0 })
                .collect(),
            at: self.now.timestamp(),
            day: facts.day,
            status: facts.standing.status,
            tool: self.tool.clone(),
            amount: a.amount,
            recipient: a.recipient.clone(),
            merchant: a.merchant.clone(),
            toolkit: a.toolkit.clone(),
            chain: self.links.iter().map(|l| l.profile.clone()).collect(),
            budgets: budgets.to_vec(),
            credit: facts.standing.credit,
            periods: facts.periods.clone(),
            rates: facts
                .windows
                .iter()
                .map(|w| crate::domain::replay::RecordedRate { key: w.key.clone(), view: w.view })
                .collect(),
            unbudgeted: false,
            decided: decision.into(),
        };
        serde_json::to_string(&inputs).expect("decision inputs serialize")
    }

    fn kit(&self) -> &Kit {
        &self.links[0].kit
    }

    fn actor(&self) -> &str {
        self.subject.profile.as_str()
    }

    /// The stored first answer to this Idempotency-Key, if there is one ([`claims::answer`]).
    fn replay(&self, c: &dyn Tx) -> Result<Option<Reserved>> {
        let Some(key) = &self.idem else { return Ok(None) };
        Ok(claims::answer(c, &self.subject.profile, key, &self.request_digest)?.map(Reserved::Final))
    }

    /// The reserved call as it leaves for its connector, under `hold`.
    /// What a settle of this call under `hold` records.
    fn settling<'a>(&'a self, hold: &'a str, kit_version: u32, connector: ConnectorKind) -> Settling<'a> {
        Settling {
            subject: &self.subject,
            action: &self.tool.name,
            hold,
            kit_version,
            actor: self.actor(),
            connector,
        }
    }

    pub(crate) fn carry(
        &self,
        hold: &str,
        cost: Money,
        kit_version: u32,
    ) -> crate::domain::calls::ReservedCall {
        crate::domain::calls::ReservedCall {
            subject: self.subject.clone(),
            tool: self.tool.clone(),
            args: self.args.clone(),
            hold: hold.to_string(),
            cost,
            kit_version,
            actor: self.actor().to_string(),
            action_id: crate::domain::calls::action_id(&self.subject.profile, self.idem.as_deref(), hold),
        }
    }

    fn new_hold(&self, decision: &Decision, call: &Counted) -> NewHold {
        NewHold {
            tenant: self.subject.tenant.clone(),
            chain: self.links.iter().map(|l| l.profile.clone()).collect(),
            action: self.tool.name.clone(),
            amount: decision.cost,
            credit: self.tool.price,
            kit_version: self.kit().version.0,
            day: call.day.to_string(),
        }
    }

    fn store(&self, c: &dyn Tx, first: First) -> Result<()> {
        store_idempotency(c, &self.subject.profile, self.idem.as_deref(), &self.request_digest, first)
    }

    /// A call over a rate limit: refused, and nothing else. It costs nothing, counts toward
    /// no window and no repeat, and its Idempotency-Key stays free, so the same call with
    /// the same key runs once the window has passed.
    fn rate_limited(
        &self,
        c: &dyn Tx,
        decision: &Decision,
        refusal: Refusal,
        call: &Counted,
    ) -> Result<Reserved> {
        let env = Envelope::deny(self.kit(), &request(&self.tool, &self.checked), refusal, 1, Vec::new());
        self.log_refusal(c, decision, &env, call)?;
        Ok(Reserved::Final(ActionResponse::refused(&env)))
    }

    /// Records this call's refusal `env` in the log: its reason, rule, repeat and the limit
    /// that decided, if one did.
    fn log_refusal(&self, c: &dyn Tx, decision: &Decision, env: &Envelope, call: &Counted) -> Result<()> {
        let s = &self.subject;
        let details = &env.error.details;
        activity::append(
            c,
            NewEntry::new(&s.tenant, self.actor(), Kind::Refusal)
                .by(s)
                .profile(&s.profile)
                .action(&self.tool.name)
                .verdict(Verdict::Deny)
                .amount(decision.cost)
                .kit_version(self.kit().version.0)
                .detail(json!({ "reason": env.reason, "detail": details.reason, "repeat": env.repeat, "limit": details.limit }))
                .inputs(call.recorded.then(|| call.inputs.clone())),
        )?;
        Ok(())
    }

    fn refuse(&self, c: &dyn Tx, decision: &Decision, refusal: Refusal, call: &Counted) -> Result<Reserved> {
        call.count(c)?;
        let s = &self.subject;
        let repeat = count_repeat(c, &s.profile, &self.tool.name, &self.args_digest)?;
        let env =
            Envelope::deny(self.kit(), &request(&self.tool, &self.checked), refusal, repeat, Vec::new());
        let resp = ActionResponse::refused(&env);
        self.log_refusal(c, decision, &env, call)?;
        if matches!(refusal, Refusal::HardCapExceeded { .. } | Refusal::CompanyCreditExhausted { .. }) {
            stop_runtime(c, &s.tenant, &s.profile, "budget_exhausted")?;
        }
        self.store(c, First::Answer(Disposition::Refused, &resp.body.to_string()))?;
        Ok(Reserved::Final(resp))
    }

    fn park(&self, c: &dyn Tx, decision: &Decision, refusal: Refusal, call: &Counted) -> Result<Reserved> {
        call.count(c)?;
        let s = &self.subject;
        let hold = ledger::reserve(c, &self.new_hold(decision, call))?;
        let kit = self.kit();
        let rule = decision.rule.and_then(|i| kit.limits.approve.rules.get(i).map(|r| (i, r)));
        let (quorum, ttl) = crate::domain::approvals::Quorum::of(rule, self.now, self.ttl);
        let needs = rule.map(|(_, r)| r.who());
        let opened = crate::domain::approvals::open(
            c,
            &crate::domain::approvals::Request {
                tenant: &s.tenant,
                profile: &s.profile,
                hold: Some(&hold),
                action: &self.tool.name,
                args: &self.args,
                args_digest: &self.args_digest,
                amount: decision.cost,
                kit,
                reason: refusal.detail(),
                actor: self.actor(),
                note: refusal.detail(),
                ttl,
                quorum,
                justification: self.justification.as_deref(),
                traceparent: self.traceparent.as_deref(),
                now: self.now,
            },
        )?;
        let (approval, expires) = (opened.id.clone(), opened.expires_at);
        let env = Envelope::park(kit, &request(&self.tool, &self.checked), refusal, opened.handle());
        let body = Answer::Verdict(Box::new(env));
        activity::append(
            c,
            NewEntry::new(&s.tenant, self.actor(), Kind::Park)
                .by(s)
                .profile(&s.profile)
                .action(&self.tool.name)
                .verdict(Verdict::Park)
                .amount(decision.cost)
                .kit_version(kit.version.0)
                .detail(json!({ "approval_id": approval, "hold_id": hold, "reason": refusal.detail(), "expires_at": expires,
                    "needs": needs, "justification": self.justification }))
                .inputs(Some(call.inputs.clone())),
        )?;
        self.store(c, First::Answer(Disposition::Parked, &body.to_string()))?;
        let resp = ActionResponse { disposition: Disposition::Parked, body, replayed: false };
        Ok(Reserved::Final(resp))
    }

    fn execute(&self, c: &dyn Tx, decision: &Decision, counted: &Counted) -> Result<Reserved> {
        let call = Call {
            action: self.tool.name.clone(),
            primitive: self.tool.primitive,
            args: self.args.clone(),
            reserved: decision.cost,
            price: self.tool.price,
            // Carried out in-process, if at all: no upstream sees an id.
            action_id: String::new(),
            actor: self.actor().to_string(),
        };
        let version = self.kit().version.0;
        let kind = self.connector.kind();
        let answer = match self.connector.execute_in(c, &call)? {
            Some(outcome) => Some(outcome),
            None => self.answer.get_or_init(|| self.connector.execute_now(&call)).clone(),
        };
        match answer {
            // An in-process connector answered now: settle in this same transaction, or keep
            // the writes for the batch's one write when it keeps them.
            Some(Ok(done)) if book::deferring() => {
                self.execute_kept(c, decision, counted, done, (version, kind))
            }
            Some(Ok(done)) => {
                let (hold, posted, mut writes) =
                    ledger::post_now(c, &self.new_hold(decision, counted), done.cost)?;
                writes.extend(counted.statement());
                let settling = self.settling(&hold, version, kind);
                let inputs = Some(counted.inputs.clone());
                let (resp, _) = executed(c, &settling, done.result, posted, &writes, inputs)?;
                self.store(c, First::Answer(Disposition::Executed, &resp.body.to_string()))?;
                Ok(Reserved::Final(resp))
            }
            Some(Err(failure)) => {
                counted.count(c)?;
                let hold = ledger::reserve(c, &self.new_hold(decision, counted))?;
                self.store(c, First::InFlight(&hold))?;
                crate::domain::in_flight::keep_inputs(c, &hold, &counted.inputs)?;
                let (resp, _) = settle(c, &self.settling(&hold, version, kind), Err(failure), decision.cost)?;
                Ok(Reserved::Final(resp))
            }
            None => {
                counted.count(c)?;
                let hold = ledger::reserve(c, &self.new_hold(decision, counted))?;
                leases::take(c, &hold, &self.lease)?;
                self.store(c, First::InFlight(&hold))?;
                crate::domain::in_flight::keep_inputs(c, &hold, &counted.inputs)?;
                if kind == ConnectorKind::Http {
                    crate::domain::in_flight::record(c, &self.carry(&hold, decision.cost, version))?;
                }
                Ok(Reserved::Hold { hold, cost: decision.cost, kit_version: version })
            }
        }
    }
}

impl ReserveJob {
    /// What this call will read, for its batch's one read ([`book::prefetch`]).
    pub(crate) fn want(&self) -> book::Want {
        let at = (self.tool.name.as_str(), self.now);
        let (_, windows, days_from) = Facts::reach(&self.links, self.clock.rate, at, &self.shadows);
        let profiles = self.links.iter().map(|l| l.profile.clone()).collect();
        book::Want { tenant: self.subject.tenant.clone(), profiles, days_from, windows }
    }

    /// [`ReserveJob::execute`]'s call answered in process, its writes kept for the batch's
    /// one write ([`book`]) instead of sent: the same hold, ledger entries, moves, window
    /// counts and log entry.
    fn execute_kept(
        &self,
        c: &dyn Tx,
        decision: &Decision,
        counted: &Counted,
        done: Done,
        (version, kind): (u32, ConnectorKind),
    ) -> Result<Reserved> {
        let h = self.new_hold(decision, counted);
        let (hold, posted, inserts, mut moves) = ledger::post_later(&h, done.cost, counted.day);
        let keys = periods::distinct_keys(counted.windows);
        moves.windows = keys.into_iter().map(|(k, ends)| (k.to_string(), ends)).collect();
        let settling = self.settling(&hold, version, kind);
        let (resp, entry) = executed_answer(&settling, done.result, posted, Some(counted.inputs.clone()));
        let place = book::reading(|| activity::append_later(c, entry))?;
        book::keep(book::Kept { entry: place, inserts, moves });
        self.store(c, First::Answer(Disposition::Executed, &resp.body.to_string()))?;
        Ok(Reserved::Final(resp))
    }
}

/// A call past the rate check: the local day its hold counts toward, and the windows it
/// counts in.
struct Counted<'a> {
    tenant: &'a TenantId,
    day: NaiveDate,
    windows: &'a [Window],
    /// What the call was decided on ([`crate::domain::replay::Inputs`], JSON).
    inputs: String,
    /// Whether its entry keeps `inputs` (replay decides it again).
    recorded: bool,
}

impl Counted<'_> {
    /// The upsert that counts the call in each of its windows, if it has any.
    fn statement(&self) -> Option<crate::sql::Statement> {
        windows::count_statement(self.tenant, self.windows)
    }

    /// Counts the call in its windows now.
    fn count(&self, c: &dyn Tx) -> Result<()> {
        if let Some(s) = self.statement() {
            c.exec(&s.sql, &s.args.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?;
        }
        Ok(())
    }
}

/// Settles a reserved hold with the connector's outcome: post and record on success; on
/// failure void the hold, record the outage and forget the idempotency claim (an outage is
/// retryable with the same key).
pub(crate) fn settle(
    c: &dyn Tx,
    at: &Settling,
    outcome: ConnectorOutcome,
    cost: Money,
) -> Result<(ActionResponse, Vec<Entry>)> {
    let Settling { subject: s, action: name, hold, kit_version, actor, connector: kind } = *at;
    crate::domain::in_flight::forget(c, hold)?;
    let inputs = crate::domain::in_flight::take_inputs(c, hold)?;
    match outcome {
        Ok(done) => {
            let posted = ledger::end(c, &s.tenant, hold, HoldEnd::Posted, done.cost, Some(kit_version))?;
            let (resp, e) = executed(c, at, done.result, posted, &[], inputs)?;
            finish_idempotency(c, hold, Disposition::Executed, &resp.body)?;
            Ok((resp, vec![e]))
        }
        Err(f) => {
            ledger::end(c, &s.tenant, hold, HoldEnd::Voided, Money::ZERO, Some(kit_version))?;
            let mut env = Envelope::unavailable(name, &f.detail, f.retry_after_secs, 1);
            if let Some(full) = &f.full {
                full_queue(&mut env, name, full);
            }
            if f.needs_admin {
                env.recovery.push(policy::RecoveryStep::EscalateToHuman {
                    human_action: "Tell the user this action's connection is misconfigured: an admin must fix it on the console's Connectors page (or Runtime page). Calls of other actions are not affected.".into(),
                });
            }
            let e = activity::append(
                c,
                NewEntry::new(&s.tenant, actor, Kind::Refusal)
                    .by(s)
                    .profile(&s.profile)
                    .action(name)
                    .verdict(Verdict::Unavailable)
                    .amount(cost)
                    .kit_version(kit_version)
                    .detail(
                        json!({ "hold_id": hold, "hold": "voided", "reason": f.detail, "connector": kind }),
                    )
                    .inputs(inputs),
            )?;
            forget_claim(c, hold)?;
            let disposition = if f.full.is_some() { Disposition::Full } else { Disposition::Unavailable };
            Ok((
                ActionResponse { disposition, body: Answer::Verdict(Box::new(env)), replayed: false },
                vec![e],
            ))
        }
    }
}

/// Says in `env` why the call was not queued (its queue's figure and bound) and what to wait
/// for: the oldest command in the queue.
fn full_queue(env: &mut Envelope, name: &str, full: &Full) {
    env.message = format!(
        "`{name}` was not queued: {} commands already wait for this tenant's team runtime (at most {}). Nothing was charged.",
        full.queued, full.limit
    );
    if let Some(oldest) = &full.oldest {
        env.recovery.push(policy::RecoveryStep::WaitForDelivery {
            command_id: oldest.clone(),
            human_action: "the team runtime has a backlog; poll teams.command with this command_id and send again once it is delivered. If the runtime stays unreachable, tell the user: an admin can purge the backlog on the Runtime page".into(),
        });
    }
}

/// Records a carried-out call whose hold has posted, after the ledger's `writes` not yet run,
/// and builds the agent's answer.
fn executed(
    c: &dyn Tx,
    at: &Settling,
    result: Value,
    posted: Money,
    writes: &[crate::sql::Statement],
    inputs: Option<String>,
) -> Result<(ActionResponse, Entry)> {
    let (resp, entry) = executed_answer(at, result, posted, inputs);
    Ok((resp, activity::append_after(c, writes, entry)?))
}

/// An executed call's answer and the log entry that records it.
fn executed_answer(
    at: &Settling,
    result: Value,
    posted: Money,
    inputs: Option<String>,
) -> (ActionResponse, NewEntry) {
    let Settling { subject: s, action: name, hold, kit_version, actor, connector } = *at;
    let mut detail = json!({ "hold_id": hold, "hold": "posted", "connector": connector });
    // A queued runtime command is traced from its log entry to its delivery state.
    if let Some(id) = result.get("command_id").filter(|_| connector == ConnectorKind::Runtime) {
        detail["command_id"] = id.clone();
    }
    let answer = Executed {
        ok: true,
        action: name.to_string(),
        result,
        cost: posted,
        hold_id: hold.to_string(),
        connector,
    };
    let entry = NewEntry::new(&s.tenant, actor, Kind::Action)
        .by(s)
        .profile(&s.profile)
        .action(name)
        .verdict(Verdict::Allow)
        .amount(posted)
        .kit_version(kit_version)
        .detail(detail)
        .inputs(inputs);
    let resp = ActionResponse {
        disposition: Disposition::Executed,
        body: Answer::Executed(answer),
        replayed: false,
    };
    (resp, entry)
}

/// Stops a profile's hosted runtime, recording why. Idempotent.
pub(crate) fn stop_runtime(
    c: &dyn Tx,
    tenant: &TenantId,
    profile: &ProfileId,
    reason: &str,
) -> Result<Vec<Entry>> {
    if !crate::domain::profiles::stop_running(c, tenant, profile, reason)? {
        return Ok(Vec::new());
    }
    Ok(vec![activity::append(
        c,
        NewEntry::new(tenant, "system", Kind::Profile)
            .profile(profile)
            .verdict(Verdict::RuntimeStopped)
            .detail(json!({ "reason": reason })),
    )?])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use policy::{Catalog, KitVersion};

    use super::*;
    use crate::delivery::connectors::Sandbox;
    use crate::domain::calls::{check_args, digest};
    use crate::domain::ledger::leases::Leases;
    use crate::domain::profiles::{Profile, RuntimeState, insert_profile};
    use crate::domain::tenants::{Tenant, insert_tenant};
    use crate::ids::KeyId;
    use crate::testing::{TestDb, held_open};

    /// A tenant with one agent whose kit enables cards under a $100 hard cap.
    async fn agent(db: &TestDb) -> Link {
        agent_with(db, r#"{"name":"Default","primitives":["cards"],"limits":{"budget":{"hard_cap":"100"}}}"#)
            .await
    }

    /// A tenant with one agent under the kit `kit_json` (named Default).
    async fn agent_with(db: &TestDb, kit_json: &str) -> Link {
        let t = Tenant {
            id: TenantId::generate(),
            name: "Acme".into(),
            credit: Money::ZERO,
            created_at: Utc::now(),
        };
        let p = Profile {
            id: ProfileId::generate(),
            tenant_id: t.id.clone(),
            name: "buyer".into(),
            owner: None,
            parent: None,
            kit_name: "Default".into(),
            status: SubjectStatus::Active,
            runtime: RuntimeState::Running,
            runtime_reason: None,
            created_at: Utc::now(),
        };
        let (tenant, profile) = (t.clone(), p.clone());
        db.run(move |tx| {
            insert_tenant(tx, &tenant, &Kit::default_kit(), &KeyId::generate(), &crate::secrets::mint_key())?;
            insert_profile(tx, &profile)
        })
        .await
        .unwrap();
        let mut kit = Kit::from_json(kit_json).unwrap();
        kit.version = KitVersion(Kit::default_kit().version.0);
        Link { tenant: t.id, profile: p.id, status: SubjectStatus::Active, kit }
    }

    fn charge(link: &Link, dollars: &str) -> ReserveJob {
        let args = json!({ "amount": dollars, "merchant": "acme" });
        ReserveJob {
            subject: Subject {
                tenant: link.tenant.clone(),
                profile: link.profile.clone(),
                key: KeyId::generate(),
                via: Default::default(),
                connection: None,
            },
            tool: Catalog::builtin().get("cards.charge").cloned().unwrap(),
            args_digest: digest(&args),
            request_digest: digest(&json!(["cards.charge", args])),
            checked: check_args("cards.charge", &args).unwrap(),
            args,
            links: Arc::new(vec![link.clone()]),
            idem: None,
            ttl: Duration::seconds(600),
            justification: None,
            connector: Arc::new(Sandbox::default()),
            answer: Arc::default(),
            lease: Leases::new(15).lease(),
            now: Utc::now(),
            clock: Arc::default(),
            shadows: Arc::default(),
            traceparent: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_charges_decided_in_the_job_never_overspend_a_hard_cap_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let link = agent(&db).await;
            let calls = (0..48).map(|_| {
                let (db, job) = (db.clone(), charge(&link, "7.00"));
                tokio::spawn(async move { db.run(held_open(move |tx| job.run(tx))).await })
            });
            let (mut ran, mut refused) = (0, 0);
            for c in calls.collect::<Vec<_>>() {
                let Reserved::Final(resp) = c.await.unwrap().unwrap() else {
                    panic!("the sandbox answers in the job")
                };
                match resp.disposition {
                    Disposition::Executed => ran += 1,
                    Disposition::Refused => {
                        assert_eq!(
                            resp.json()["error"]["details"]["reason"],
                            "hard_cap_exceeded",
                            "{}: {}",
                            db.name(),
                            resp.body
                        );
                        refused += 1;
                    }
                    d => panic!("{}: unexpected {d:?}", db.name()),
                }
            }
            assert_eq!((ran, refused), (14, 34), "{}: $98 of $100 ran, the rest was refused", db.name());
            let p = link.profile.clone();
            let spent = db.run(move |tx| ledger::totals(tx, std::slice::from_ref(&p))).await.unwrap()[0];
            assert_eq!(spent.posted, Money::dollars(98), "{}", db.name());
            let p = link.profile.clone();
            let state = db
                .run(move |tx| {
                    let r =
                        tx.row("SELECT runtime_state FROM agent_profiles WHERE id = ?", &[&p.as_str()])?;
                    Ok(r.expect("the profile").get::<String>(0)?)
                })
                .await
                .unwrap();
            assert_eq!(state, "stopped", "{}: a hard-cap refusal stops the runtime", db.name());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_revoke_amid_racing_calls_leaves_none_of_them_pending_on_both_engines() {
        let kit = r#"{"name":"Default","primitives":["cards"],"limits":{"approve":{"above":"5"}}}"#;
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let link = agent_with(&db, kit).await;
            let calls: Vec<_> = (0..24)
                .map(|_| {
                    let (db, job) = (db.clone(), charge(&link, "7.00"));
                    tokio::spawn(async move { db.run(held_open(move |tx| job.run(tx))).await })
                })
                .collect();
            tokio::time::sleep(std::time::Duration::from_millis(60)).await;
            let (t, p) = (link.tenant.clone(), link.profile.clone());
            let report =
                db.run(move |tx| crate::domain::revoke::revoke(tx, &t, &p, "owner", None)).await.unwrap();
            let mut parked = 0;
            for c in calls {
                let Reserved::Final(resp) = c.await.unwrap().unwrap() else {
                    panic!("parks and refusals are final")
                };
                match resp.disposition {
                    Disposition::Parked => parked += 1,
                    Disposition::Refused => {
                        assert_eq!(
                            resp.json()["reason"],
                            "agent_profile_revoked",
                            "{}: {}",
                            db.name(),
                            resp.body
                        )
                    }
                    d => panic!("{}: unexpected {d:?}", db.name()),
                }
            }
            assert!(parked > 0, "{}: some calls parked before the revoke", db.name());
            assert_eq!(
                report.approvals_denied.len(),
                parked,
                "{}: the revoke denied every parked call",
                db.name()
            );
            let p = link.profile.clone();
            let pending = db
                .run(move |tx| {
                    let q = "SELECT (SELECT COUNT(*) FROM approvals WHERE profile_id = ?1 AND status = 'pending'), \
                                    (SELECT COUNT(*) FROM holds WHERE profile_id = ?1 AND status = 'pending')";
                    let r = tx.row(q, &[&p.as_str()])?.expect("one row");
                    Ok((r.get::<i64>(0)?, r.get::<i64>(1)?))
                })
                .await
                .unwrap();
            assert_eq!(pending, (0, 0), "{}: no approval or hold outlives the revoke", db.name());
        }
    }
}
