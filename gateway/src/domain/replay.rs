//! Decision inputs on record, and deciding them again under a draft kit
//! (docs/architecture.md#replay-and-shadow).
//!
//! Every governed call the deciding job decides carries its [`Inputs`] onto the activity
//! entry that records it (covered by the entry's hash): exactly what `policy::evaluate` read,
//! and nothing else of the arguments. [`Replayer`] feeds recorded calls, oldest first, to the
//! same engine under a draft and says which would have been decided otherwise.
//!
//! Budget state is replayed, not only read back. Each call is decided on the totals it was
//! decided on, corrected by what the draft's different verdicts of the calls before it moved:
//! a call the draft refuses no longer counts toward the totals of the calls after it, a call
//! it lets run counts from then on, so a lower cap refuses the calls after the point where it
//! would have been reached. What a call holds over time (its footprint):
//! - ran: its cost, for good (a call whose connector failed holds nothing, under any kit);
//! - parked: its cost until the human decision the record has (for good if approved or still
//!   waiting); a call the draft parks that the record did not is assumed never approved, so
//!   it holds its cost until its approval window would have ended;
//! - refused: nothing.
//!
//! A call is decided under the effective kits of its chain as the draft makes them: each
//! level's own kit at the version the call was decided under, the draft in place of the kit
//! it drafts wherever that kit is on the chain, each narrowed by the levels above it, as the
//! deciding job narrows them ([`crate::domain::chain::narrowed`]). So replaying a parent's kit
//! replays its descendants' calls, and a child's calls are decided under its parent's
//! narrowing. Calls recorded before the chain's kits were kept ([`Inputs::kits`]) are
//! decided under the draft at their own level, and their ancestors' caps as recorded. A
//! period limit the draft adds that the recorded kit lacked counts what the draft let the
//! replayed calls of its period spend (calls before the range are not seen); a rate limit the
//! draft adds likewise counts the replayed calls. The tenant's own rate limit is as recorded.
//!
//! Invariant (property-tested): replaying the kit a call was decided under changes nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use policy::{
    ActionRequest, BudgetView, Decision, DecisionInput, EngineVerdict, Kit, Money, Period, PeriodView,
    RateView, Refusal, SubjectStatus, ToolSpec, evaluate,
};
use serde::{Deserialize, Serialize};

use crate::domain::decision::{self, Rates};
use crate::domain::periods::{self, Calendar};
use crate::ids::ProfileId;

/// One rate window the call counted toward, by its key in `rate_counts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedRate {
    pub key: String,
    pub view: RateView,
}

/// What the engine decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    pub verdict: EngineVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    pub cost: Money,
}

impl From<&Decision> for Decided {
    fn from(d: &Decision) -> Decided {
        Decided { verdict: d.verdict, refusal: d.refusal, cost: d.cost }
    }
}

/// One level's own kit, by name and version.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KitRef {
    pub kit: String,
    pub version: u32,
}

/// What the engine read to decide one governed call, and what it decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// The acting profile's kit, by name; the entry has its version.
    pub kit: String,
    /// Each level's own kit, the acting profile's first, as the call was decided (empty for
    /// calls recorded before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kits: Vec<KitRef>,
    /// When it was decided (seconds since 1970), and the tenant's local day then.
    pub at: i64,
    pub day: NaiveDate,
    pub status: SubjectStatus,
    /// The action as the catalog classified it: name, primitive, effect, price.
    pub tool: ToolSpec,
    pub amount: Money,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<(String, String)>,
    /// The profiles whose budgets the call counts against: its own, then each ancestor.
    pub chain: Vec<ProfileId>,
    pub budgets: Vec<BudgetView>,
    pub credit: Money,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periods: Vec<PeriodView>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<RecordedRate>,
    /// Decided on the kit and standing alone, with no budget, period or rate (a brain
    /// writeback recorded before brain tools were decided as every call is): replayed the
    /// same way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unbudgeted: bool,
    pub decided: Decided,
}

impl Inputs {
    pub fn request(&self) -> ActionRequest<'_> {
        ActionRequest {
            tool: &self.tool,
            amount: self.amount,
            recipient: self.recipient.as_deref(),
            merchant: self.merchant.as_deref(),
            toolkit: self.toolkit.as_ref().map(|(k, t)| (k.as_str(), t.as_str())),
        }
    }

    /// The decision input as recorded, under `kit`, counting `rates`.
    pub fn input<'a>(&'a self, kit: &'a Kit, rates: Rates<'a>) -> DecisionInput<'a> {
        decision::input(kit, self.request(), self.standing(), rates)
    }

    /// The standing the call was decided on, as recorded.
    pub fn standing(&self) -> decision::Standing<'_> {
        decision::Standing {
            status: self.status,
            budgets: &self.budgets,
            credit: self.credit,
            periods: &self.periods,
        }
    }
}

/// What became of a recorded call after it was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Ran (or was refused: a refusal has no fate).
    Ran,
    /// Allowed, but its connector failed: nothing was spent.
    Failed,
    /// Parked, then approved or still waiting: its cost stays counted.
    Held,
    /// Parked, then denied or expired at this time (seconds since 1970).
    Released(i64),
}

/// One recorded call to decide again.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub seq: i64,
    pub inputs: Inputs,
    pub fate: Fate,
}

/// How a verdict reads in a replay: `allow`, `park` or `deny`.
pub fn verdict_word(v: EngineVerdict) -> &'static str {
    match v {
        EngineVerdict::Allow => "allow",
        EngineVerdict::Freeze => "park",
        EngineVerdict::Deny => "deny",
    }
}

/// One side of a changed call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Side {
    /// `allow`, `park` or `deny`.
    pub verdict: String,
    /// The envelope's reason (`budget_exceeded`, `approval_required`, …), if refused or parked.
    pub reason: Option<String>,
    /// Its detail (`hard_cap_exceeded`, `merchant_not_allowed`, …).
    pub detail: Option<String>,
}

impl Side {
    pub(crate) fn of(d: &Decided) -> Side {
        Side {
            verdict: verdict_word(d.verdict).to_string(),
            reason: d.refusal.map(|r| r.reason().to_string()),
            detail: d.refusal.map(|r| r.detail().to_string()),
        }
    }
}

/// A call the draft decides otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Change {
    /// The call's activity entry.
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub profile_id: ProfileId,
    pub action: String,
    pub amount: Money,
    pub was: Side,
    pub would_be: Side,
}

/// How many calls moved from one verdict to another, and their money.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Transition {
    pub from: String,
    pub to: String,
    pub calls: u64,
    pub amount: Money,
}

/// The money a draft moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Moved {
    /// Spend that ran and the draft would refuse.
    pub refused: Money,
    /// Spend that ran and the draft would park for a human.
    pub parked: Money,
    /// Spend that was refused or parked and the draft would let run.
    pub ran: Money,
}

/// A replay's totals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Summary {
    /// Recorded calls decided again.
    pub calls: u64,
    /// Of which the draft decides otherwise (verdict or reason).
    pub changed: u64,
    pub transitions: Vec<Transition>,
    pub money: Moved,
}

impl Summary {
    fn count(&mut self, was: &Decided, now: &Decided) {
        self.count_words(verdict_word(was.verdict), verdict_word(now.verdict), was.cost);
    }

    /// Counts one call that went `from` one verdict `to` another (`allow`, `park`, `deny`).
    pub fn count_words(&mut self, from: &str, to: &str, amount: Money) {
        self.changed += 1;
        match self.transitions.iter_mut().find(|t| t.from == from && t.to == to) {
            Some(t) => {
                t.calls += 1;
                t.amount = plus(t.amount, amount);
            }
            None => self.transitions.push(Transition { from: from.into(), to: to.into(), calls: 1, amount }),
        }
        let m = &mut self.money;
        match (from, to) {
            ("allow", "deny") => m.refused = plus(m.refused, amount),
            ("allow", "park") => m.parked = plus(m.parked, amount),
            ("deny" | "park", "allow") => m.ran = plus(m.ran, amount),
            _ => {}
        }
    }
}

/// The `LIKE` pattern (escape `\\`) of the recorded inputs of calls decided under kit `name`:
/// [`Inputs`] is written with its kit first.
pub fn kit_prefix(name: &str) -> String {
    format!("{}%", kit_key(name))
}

/// The `LIKE` pattern (escape `\\`) of the recorded inputs of calls whose chain has kit `name`
/// at any level: the acting kit comes first (`{"kit":…,`), and each level's is a [`KitRef`]
/// (`{"kit":…,"version"`). The text cannot occur inside a string value, where a quote is
/// escaped.
pub fn kit_in_chain(name: &str) -> String {
    format!("%{}%", kit_key(name))
}

/// `{"kit":"<name>",` with `LIKE`'s own characters escaped.
fn kit_key(name: &str) -> String {
    let quoted = serde_json::to_string(name).expect("a name serializes");
    let escaped = quoted.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("{{\"kit\":{escaped},")
}

impl Inputs {
    /// Whether kit `name` is on the call's chain, at any level.
    pub fn has_kit(&self, name: &str) -> bool {
        self.kit == name || self.kits.iter().any(|k| k.kit == name)
    }
}

/// A running amount whose parts may end at given times.
#[derive(Default)]
struct Running {
    sum: i64,
    ends: BinaryHeap<Reverse<(i64, i64)>>,
}

impl Running {
    fn add(&mut self, amount: i64, until: Option<i64>) {
        self.sum += amount;
        if let Some(t) = until {
            self.ends.push(Reverse((t, amount)));
        }
    }

    fn at(&mut self, t: i64) -> i64 {
        while let Some(Reverse((end, amount))) = self.ends.peek().copied() {
            if end > t {
                break;
            }
            self.ends.pop();
            self.sum -= amount;
        }
        self.sum
    }
}

/// What a call holds: an amount, until a time or for good.
#[derive(Clone, Copy)]
struct Footprint {
    amount: i64,
    credit: i64,
    until: Option<i64>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Pot {
    Total(ProfileId),
    Period(ProfileId, Period, i64),
    Credit,
}

/// A rate window's replayed count: the draft's count minus the record's over the replayed
/// calls, and the draft's own count, with when the window ends.
#[derive(Default)]
struct Count {
    delta: i64,
    draft: i64,
    ends_at: i64,
}

/// Decides recorded calls again, oldest first, each under its chain's effective kits as the
/// draft makes them (the caller's, per call: [`Replayer::step`]).
pub struct Replayer<'a> {
    calendar: &'a Calendar,
    /// How long a parked call waits unless its approval rule says otherwise, in seconds.
    ttl: i64,
    delta: HashMap<Pot, Running>,
    spent: HashMap<Pot, Running>,
    counts: HashMap<String, Count>,
    pub summary: Summary,
}

impl<'a> Replayer<'a> {
    pub fn new(calendar: &'a Calendar, ttl: i64) -> Replayer<'a> {
        Replayer {
            calendar,
            ttl,
            delta: HashMap::new(),
            spent: HashMap::new(),
            counts: HashMap::new(),
            summary: Summary::default(),
        }
    }

    /// Decides `call` again under `kits`, its chain's effective kits under the draft, the
    /// acting level's first (one kit alone for a call recorded without its chain's); the
    /// change, if the draft decides it otherwise.
    pub fn step(&mut self, call: &Recorded, kits: &[Kit]) -> Option<Change> {
        let i = &call.inputs;
        if self.counts.len() > 4_096 {
            self.counts.retain(|_, c| c.ends_at >= i.at);
        }
        if i.unbudgeted {
            return self.step_unbudgeted(call, &kits[0]);
        }
        let budgets = self.budgets(i, kits);
        let (periods, draft_pots) = self.periods(i, kits);
        let (rates, draft_keys) = self.rates(i, &kits[0]);
        let credit = shifted(i.credit, -self.delta_at(&Pot::Credit, i.at));
        let standing = decision::Standing { budgets: &budgets, credit, periods: &periods, ..i.standing() };
        let d = evaluate(&decision::input(&kits[0], i.request(), standing, Rates::Counted(&rates)));
        let now = Decided::from(&d);
        self.summary.calls += 1;
        let (was_fp, now_fp) = (self.record_footprint(call), self.draft_footprint(call, &d, &kits[0]));
        for pot in &draft_pots {
            self.spent
                .entry(pot.clone())
                .or_default()
                .add(now_fp.map_or(0, |f| f.amount), now_fp.and_then(|f| f.until));
        }
        self.count_rates(i, &now, &draft_keys);
        if same(&now, &i.decided) {
            return None;
        }
        self.move_money(i, &draft_pots, was_fp, now_fp);
        Some(self.changed(call, &now))
    }

    /// A call decided on the kit and standing alone: no budget moves.
    fn step_unbudgeted(&mut self, call: &Recorded, kit: &Kit) -> Option<Change> {
        let i = &call.inputs;
        let d = evaluate(&i.input(kit, Rates::NotDecidedThen));
        self.summary.calls += 1;
        let now = Decided::from(&d);
        (!same(&now, &i.decided)).then(|| self.changed(call, &now))
    }

    /// Counts `call`, which the draft decides `now` instead, and says how.
    fn changed(&mut self, call: &Recorded, now: &Decided) -> Change {
        let i = &call.inputs;
        self.summary.count(&i.decided, now);
        Change {
            seq: call.seq,
            at: DateTime::from_timestamp(i.at, 0).unwrap_or_default(),
            profile_id: i.chain[0].clone(),
            action: i.tool.name.clone(),
            amount: i.decided.cost,
            was: Side::of(&i.decided),
            would_be: Side::of(now),
        }
    }

    fn delta_at(&mut self, pot: &Pot, t: i64) -> i64 {
        self.delta.get_mut(pot).map_or(0, |r| r.at(t))
    }

    /// The budget views as recorded, corrected by what the draft moved; each level's caps are
    /// its kit's in `kits` (as recorded for a level past them).
    fn budgets(&mut self, i: &Inputs, kits: &[Kit]) -> Vec<BudgetView> {
        let mut out = Vec::with_capacity(i.budgets.len());
        for (level, b) in i.budgets.iter().enumerate() {
            let d = self.delta_at(&Pot::Total(i.chain[level].clone()), i.at);
            let (posted, pending) = moved((b.posted, b.pending), d);
            let mut v = BudgetView { posted, pending, ..*b };
            if let Some(kit) = kits.get(level) {
                v.hard_cap = kit.limits.budget.hard_cap;
                v.soft_cap = kit.limits.budget.soft_cap;
            }
            out.push(v);
        }
        out
    }

    /// The period views of each level's kit in `kits`, then those of the levels past them as
    /// recorded, each corrected; and the pots they count in.
    fn periods(&mut self, i: &Inputs, kits: &[Kit]) -> (Vec<PeriodView>, Vec<Pot>) {
        let (mut out, mut pots) = (Vec::new(), Vec::new());
        for (level, kit) in kits.iter().enumerate().take(i.chain.len()) {
            self.level_periods(i, (level, kit), &mut out, &mut pots);
        }
        for p in i.periods.iter().filter(|p| p.budget >= kits.len()) {
            let pot = Pot::Period(i.chain[p.budget].clone(), p.every, p.resets_at);
            let (posted, pending) = moved((p.posted, p.pending), self.delta_at(&pot, i.at));
            out.push(PeriodView { posted, pending, ..*p });
            pots.push(pot);
        }
        (out, pots)
    }

    /// The period views of one level's kit, corrected, and their pots.
    fn level_periods(
        &mut self,
        i: &Inputs,
        (level, kit): (usize, &Kit),
        out: &mut Vec<PeriodView>,
        pots: &mut Vec<Pot>,
    ) {
        for (n, limit) in kit.limits.budget.periods.iter().enumerate() {
            let (_, end) = periods::period_dates(limit, i.day);
            let resets_at = self.calendar.start_of(end).timestamp();
            let pot = Pot::Period(i.chain[level].clone(), limit.every, resets_at);
            let recorded = i
                .periods
                .iter()
                .find(|p| p.budget == level && p.every == limit.every && p.resets_at == resets_at);
            let (posted, pending) = match recorded {
                Some(p) => moved((p.posted, p.pending), self.delta_at(&pot, i.at)),
                None => {
                    (Money::ZERO, shifted(Money::ZERO, self.spent.get_mut(&pot).map_or(0, |r| r.at(i.at))))
                }
            };
            let (hard_cap, soft_cap) = (limit.hard_cap, limit.soft_cap);
            out.push(PeriodView {
                budget: level,
                limit: n,
                every: limit.every,
                posted,
                pending,
                hard_cap,
                soft_cap,
                resets_at,
            });
            pots.push(pot);
        }
    }

    /// The acting kit's rate windows for the action, then the tenant's as recorded, each
    /// counted.
    fn rates(&mut self, i: &Inputs, kit: &Kit) -> (Vec<RateView>, Vec<String>) {
        let at = DateTime::from_timestamp(i.at, 0).unwrap_or_default();
        let mut windows = periods::rate_windows(&i.chain[0], kit, None, &i.tool.name, at);
        windows.extend(i.rates.iter().filter(|r| r.view.limit.is_none()).map(|r| periods::Window {
            key: r.key.clone(),
            ends_at: i.at + i64::from(r.view.retry_after),
            view: r.view,
        }));
        let mut views = Vec::with_capacity(windows.len());
        let mut keys = Vec::with_capacity(windows.len());
        for w in windows {
            let c = self.counts.get(&w.key);
            let used = match i.rates.iter().find(|r| r.key == w.key) {
                Some(r) => i64::from(r.view.used) + c.map_or(0, |c| c.delta),
                None => c.map_or(0, |c| c.draft),
            };
            views.push(RateView { used: u32::try_from(used.max(0)).unwrap_or(u32::MAX), ..w.view });
            self.counts.entry(w.key.clone()).or_default().ends_at = w.ends_at;
            if !keys.contains(&w.key) {
                keys.push(w.key);
            }
        }
        (views, keys)
    }

    /// Counts the call in the windows the draft counts it in, and takes it out of those the
    /// record counted it in.
    fn count_rates(&mut self, i: &Inputs, now: &Decided, draft_keys: &[String]) {
        let counted = |d: &Decided| !matches!(d.refusal, Some(Refusal::RateLimited { .. }));
        if counted(now) {
            for k in draft_keys {
                let c = self.counts.entry(k.clone()).or_default();
                c.delta += 1;
                c.draft += 1;
            }
        }
        if counted(&i.decided) {
            let mut seen: Vec<&str> = Vec::with_capacity(i.rates.len());
            for r in &i.rates {
                if seen.contains(&r.key.as_str()) {
                    continue;
                }
                seen.push(&r.key);
                let c = self.counts.entry(r.key.clone()).or_default();
                c.delta -= 1;
                c.ends_at = c.ends_at.max(i.at + i64::from(r.view.retry_after));
            }
        }
    }

    /// What the record's call held.
    fn record_footprint(&self, call: &Recorded) -> Option<Footprint> {
        let i = &call.inputs;
        let until = match (i.decided.verdict, call.fate) {
            (EngineVerdict::Deny, _) | (_, Fate::Failed) => return None,
            (_, Fate::Released(t)) => Some(t),
            _ => None,
        };
        Some(Footprint { amount: i.decided.cost.units(), credit: i.tool.price.units(), until })
    }

    /// What the draft's decision `d` of the call would have held.
    fn draft_footprint(&self, call: &Recorded, d: &Decision, kit: &Kit) -> Option<Footprint> {
        let i = &call.inputs;
        let until = match d.verdict {
            EngineVerdict::Deny => return None,
            EngineVerdict::Allow if call.fate == Fate::Failed => return None,
            EngineVerdict::Allow => None,
            EngineVerdict::Freeze if i.decided.verdict == EngineVerdict::Freeze => match call.fate {
                Fate::Released(t) => Some(t),
                _ => None,
            },
            EngineVerdict::Freeze => {
                let rule = d.rule.and_then(|r| kit.limits.approve.rules.get(r));
                Some(i.at + rule.and_then(|r| r.window).map_or(self.ttl, |w| i64::from(w.secs())))
            }
        };
        Some(Footprint { amount: d.cost.units(), credit: i.tool.price.units(), until })
    }

    /// Moves the difference between the record's footprint and the draft's into the totals
    /// of every budget and period the call counts in.
    fn move_money(&mut self, i: &Inputs, draft_pots: &[Pot], was: Option<Footprint>, now: Option<Footprint>) {
        let mut recorded_pots: Vec<Pot> = i.chain.iter().map(|p| Pot::Total(p.clone())).collect();
        recorded_pots
            .extend(i.periods.iter().map(|p| Pot::Period(i.chain[p.budget].clone(), p.every, p.resets_at)));
        let mut draft_side: Vec<Pot> = i.chain.iter().map(|p| Pot::Total(p.clone())).collect();
        draft_side.extend(draft_pots.iter().cloned());
        let (recorded_pots, draft_side) = (unique(recorded_pots), unique(draft_side));
        if let Some(f) = now {
            for pot in draft_side {
                self.delta.entry(pot).or_default().add(f.amount, f.until);
            }
            self.delta.entry(Pot::Credit).or_default().add(f.credit, f.until);
        }
        if let Some(f) = was {
            for pot in recorded_pots {
                self.delta.entry(pot).or_default().add(-f.amount, f.until);
            }
            self.delta.entry(Pot::Credit).or_default().add(-f.credit, f.until);
        }
    }
}

/// `pots` with each pot once, in order: two limits of one period (a parent's day limit merged
/// into its child's kit beside the child's own) count a call in that period once.
fn unique(pots: Vec<Pot>) -> Vec<Pot> {
    let mut out: Vec<Pot> = Vec::with_capacity(pots.len());
    for p in pots {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A recorded (posted, pending) moved by `units` as one total, never below zero: what the
/// draft adds is pending; what it gives back comes off pending first, then off posted (a call
/// the record ran and settled is in posted; the engine reads only the sum).
fn moved((posted, pending): (Money, Money), units: i64) -> (Money, Money) {
    if units >= 0 {
        return (posted, shifted(pending, units));
    }
    let from_pending = units.max(-pending.units());
    (shifted(posted, units - from_pending), shifted(pending, from_pending))
}

/// `m` moved by `units`, never below zero.
fn shifted(m: Money, units: i64) -> Money {
    Money::from_units(m.units().saturating_add(units).max(0)).unwrap_or(Money::MAX)
}

fn plus(a: Money, b: Money) -> Money {
    a.checked_add(b).unwrap_or(Money::MAX)
}

/// Whether two decisions are the same for a replay: the same verdict, for the same reason (a
/// refusal's detail, such as `hard_cap_exceeded`; not the figures it quotes).
pub(crate) fn same(a: &Decided, b: &Decided) -> bool {
    a.verdict == b.verdict && a.refusal.map(Refusal::detail) == b.refusal.map(Refusal::detail)
}
