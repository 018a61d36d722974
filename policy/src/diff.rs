//! KitDiff: what an edit widens and what it narrows, in words (docs/architecture.md#accountkits).
//!
//! The console shows it before a save and the gateway stores it with every kit version.
//! Each change says which way it moves authority, so a reviewer can read the widening ones
//! first.

use serde::{Deserialize, Serialize};

use crate::approval::{ApprovalRule, Window};
use crate::kit::{ApproveLimits, CanRule, Kit, PeriodLimit, RateLimit, RuleEffect};
use crate::money::Money;
use crate::primitive::Primitive;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Lets agents do more.
    Widens,
    /// Lets agents do less.
    Narrows,
    /// Neither, such as a rename.
    Neutral,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KitChange {
    pub direction: Direction,
    pub text: String,
}

/// Every difference between two kits, widening changes first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KitDiff {
    pub changes: Vec<KitChange>,
}

/// What moving the effect pins of one toolkit's tools does: a pin raised or added narrows
/// (more of those calls park), one lowered or removed widens.
fn pin_changes(
    toolkit: &str,
    old: &crate::kit::ToolFilter,
    new: &crate::kit::ToolFilter,
    push: &mut impl FnMut(Direction, String),
) {
    // The old kit's pinned tools, then those only the new one pins: no set to build (in the
    // console's wasm a set would bring a sort of its own).
    let added = new.effects.iter().filter(|(t, _)| old.effects.get(t).is_none());
    for (tool, _) in old.effects.iter().chain(added) {
        let (o, n) = (old.effects.get(tool), new.effects.get(tool));
        let text = |e: Option<crate::Effect>| e.map_or("unpinned", |e| e.as_str());
        let direction = match (o, n) {
            (a, b) if a == b => continue,
            (None, Some(_)) => Direction::Narrows,
            (Some(_), None) => Direction::Widens,
            (Some(a), Some(b)) if b > a => Direction::Narrows,
            _ => Direction::Widens,
        };
        push(direction, format!("pins `{toolkit}` tool `{tool}` {} (was {})", text(n), text(o)));
    }
}

impl KitDiff {
    pub fn between(old: &Kit, new: &Kit) -> KitDiff {
        let mut d = Vec::new();
        let mut push = |direction, text: String| d.push(KitChange { direction, text });
        if old.name != new.name {
            push(Direction::Neutral, format!("renames the kit from \"{}\" to \"{}\"", old.name, new.name));
        }
        for p in Primitive::ALL {
            match (old.primitives.contains(p), new.primitives.contains(p)) {
                (false, true) => push(Direction::Widens, format!("enables primitive `{p}`")),
                (true, false) => push(Direction::Narrows, format!("disables primitive `{p}`")),
                _ => {}
            }
        }
        match (old.toolkits.allow_all, new.toolkits.allow_all) {
            (false, true) => push(Direction::Widens, "permits every toolkit".into()),
            (true, false) => push(Direction::Narrows, "permits only the listed toolkits".into()),
            _ => {}
        }
        for (name, f) in &new.toolkits.filters {
            match old.toolkits.filters.get(name) {
                None if new.toolkits.allow_all => {
                    push(Direction::Narrows, format!("filters the tools of toolkit `{name}`"))
                }
                None => push(Direction::Widens, format!("permits toolkit `{name}`")),
                Some(of) if of != f => {
                    if of.only != f.only || of.disable != f.disable {
                        push(Direction::Neutral, format!("changes the tool filter of toolkit `{name}`"));
                    }
                    pin_changes(name, of, f, &mut push);
                }
                Some(_) => {}
            }
        }
        for name in old.toolkits.filters.keys().filter(|n| !new.toolkits.filters.contains_key(*n)) {
            if new.toolkits.allow_all {
                push(Direction::Widens, format!("removes the tool filter of toolkit `{name}`"));
            } else {
                push(Direction::Narrows, format!("no longer permits toolkit `{name}`"));
            }
        }
        for r in new.can.iter().filter(|r| !old.can.contains(r)) {
            push(Direction::Narrows, format!("adds {}", describe_rule(r)));
        }
        for r in old.can.iter().filter(|r| !new.can.contains(r)) {
            push(Direction::Widens, format!("removes {}", describe_rule(r)));
        }
        cap_change(&mut push, "hard cap", old.limits.budget.hard_cap, new.limits.budget.hard_cap);
        cap_change(&mut push, "soft cap", old.limits.budget.soft_cap, new.limits.budget.soft_cap);
        period_changes(&mut push, &old.limits.budget.periods, &new.limits.budget.periods);
        rate_changes(&mut push, &old.limits.rate, &new.limits.rate);
        approve_changes(&mut push, &old.limits.approve, &new.limits.approve);
        // Widens first, then narrows, then the rest, each in the order found. (Grouping by
        // hand rather than a stable sort keeps the sort's code out of the browser's wasm.)
        let changes = [Direction::Widens, Direction::Narrows, Direction::Neutral]
            .into_iter()
            .flat_map(|dir| d.iter().filter(move |c| c.direction == dir).cloned())
            .collect();
        KitDiff { changes }
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    pub fn widens(&self) -> impl Iterator<Item = &KitChange> {
        self.changes.iter().filter(|c| c.direction == Direction::Widens)
    }

    pub fn narrows(&self) -> impl Iterator<Item = &KitChange> {
        self.changes.iter().filter(|c| c.direction == Direction::Narrows)
    }
}

/// A limit: higher widens, lower narrows, absent means unlimited.
fn cap_change(push: &mut impl FnMut(Direction, String), what: &str, old: Option<Money>, new: Option<Money>) {
    match (old, new) {
        (Some(o), Some(n)) if n > o => push(Direction::Widens, format!("raises {what} from {o} to {n}")),
        (Some(o), Some(n)) if n < o => push(Direction::Narrows, format!("lowers {what} from {o} to {n}")),
        (None, Some(n)) => push(Direction::Narrows, format!("sets a {what} of {n}")),
        (Some(o), None) => push(Direction::Widens, format!("removes the {what} of {o}")),
        _ => {}
    }
}

/// Period limits are matched by period (and week start); their caps change like the
/// lifetime ones.
fn period_changes(push: &mut impl FnMut(Direction, String), old: &[PeriodLimit], new: &[PeriodLimit]) {
    let same = |a: &PeriodLimit, b: &PeriodLimit| a.every == b.every && a.week_start() == b.week_start();
    let none = |p: &PeriodLimit| PeriodLimit { hard_cap: None, soft_cap: None, ..*p };
    for n in new {
        let o = old.iter().find(|o| same(o, n)).copied().unwrap_or_else(|| none(n));
        let label = n.adjective();
        cap_change(push, &format!("{label} hard cap"), o.hard_cap, n.hard_cap);
        cap_change(push, &format!("{label} soft cap"), o.soft_cap, n.soft_cap);
    }
    for o in old.iter().filter(|o| !new.iter().any(|n| same(o, n))) {
        let label = o.adjective();
        cap_change(push, &format!("{label} hard cap"), o.hard_cap, None);
        cap_change(push, &format!("{label} soft cap"), o.soft_cap, None);
    }
}

/// Rate limits are matched by action pattern and unit: more calls widen, fewer narrow.
fn rate_changes(push: &mut impl FnMut(Direction, String), old: &[RateLimit], new: &[RateLimit]) {
    let same = |a: &RateLimit, b: &RateLimit| a.action == b.action && a.per == b.per;
    for n in new {
        let what = format!("the rate limit on `{}` per {}", n.action, n.per.as_str());
        match old.iter().find(|o| same(o, n)) {
            None => push(Direction::Narrows, format!("sets {what} to {} calls", n.calls)),
            Some(o) if n.calls > o.calls => {
                push(Direction::Widens, format!("raises {what} from {} to {} calls", o.calls, n.calls))
            }
            Some(o) if n.calls < o.calls => {
                push(Direction::Narrows, format!("lowers {what} from {} to {} calls", o.calls, n.calls))
            }
            Some(_) => {}
        }
    }
    for o in old.iter().filter(|o| !new.iter().any(|n| same(o, n))) {
        push(
            Direction::Widens,
            format!("removes the rate limit of {} calls per {} on `{}`", o.calls, o.per.as_str(), o.action),
        );
    }
}

/// What changes in `limits.approve`: the threshold, the always list, the rules and
/// destructive tools.
fn approve_changes(push: &mut impl FnMut(Direction, String), old: &ApproveLimits, new: &ApproveLimits) {
    cap_change(push, "approval threshold", old.above, new.above);
    for a in new.always.iter().filter(|a| !old.always.contains(a)) {
        push(Direction::Narrows, format!("requires approval for `{a}`"));
    }
    for a in old.always.iter().filter(|a| !new.always.contains(a)) {
        push(Direction::Widens, format!("removes approval for `{a}`"));
    }
    approval_rule_changes(push, &old.rules, &new.rules);
    match (old.destructive, new.destructive) {
        (true, false) => push(Direction::Widens, "lets destructive tools run without approval".into()),
        (false, true) => push(Direction::Narrows, "requires approval for destructive tools".into()),
        _ => {}
    }
}

/// Approval rules are matched by their conditions: fewer approvers or a longer window widen
/// (a call is released more easily, or waits longer for its one approver), more or shorter
/// narrow, another role or group is neutral.
fn approval_rule_changes(
    push: &mut impl FnMut(Direction, String),
    old: &[ApprovalRule],
    new: &[ApprovalRule],
) {
    let same = |a: &ApprovalRule, b: &ApprovalRule| {
        (a.above, &a.action, a.destructive, a.soft_cap) == (b.above, &b.action, b.destructive, b.soft_cap)
    };
    let default = crate::approval::DEFAULT_WINDOW_SECS;
    for n in new {
        let what = describe_approval_rule(n);
        let Some(o) = old.iter().find(|o| same(o, n)) else {
            push(Direction::Narrows, format!("adds an approval rule: {what} need {}", n.who()));
            continue;
        };
        if n.approvers < o.approvers {
            push(
                Direction::Widens,
                format!("lowers the approvers {what} from {} to {}", o.approvers, n.approvers),
            );
        } else if n.approvers > o.approvers {
            push(
                Direction::Narrows,
                format!("raises the approvers {what} from {} to {}", o.approvers, n.approvers),
            );
        }
        let (ow, nw) = (o.window_secs(default), n.window_secs(default));
        if nw != ow {
            let dir = if nw > ow { Direction::Widens } else { Direction::Narrows };
            let verb = if nw > ow { "lengthens" } else { "shortens" };
            push(dir, format!("{verb} the approval window {what} from {} to {}", Window(ow), Window(nw)));
        }
        if (&o.role, &o.group) != (&n.role, &n.group) || o.escalate != n.escalate {
            push(Direction::Neutral, format!("changes who approves {what}: {}", n.who()));
        }
    }
    for o in old.iter().filter(|o| !new.iter().any(|n| same(o, n))) {
        push(
            Direction::Widens,
            format!("removes the approval rule {}: {}", describe_approval_rule(o), o.who()),
        );
    }
}

/// "for calls of at least 500.0000 on `cards.*`": a rule's conditions in words.
fn describe_approval_rule(r: &ApprovalRule) -> String {
    let mut s = "for calls".to_string();
    if let Some(m) = r.above {
        s.push_str(&format!(" of at least {m}"));
    }
    if let Some(a) = &r.action {
        s.push_str(&format!(" of `{a}`"));
    }
    if r.destructive {
        s.push_str(" that are destructive");
    }
    if r.soft_cap {
        s.push_str(" that cross a soft cap");
    }
    s
}

fn describe_rule(r: &CanRule) -> String {
    let mut s = match r.effect {
        RuleEffect::Deny => format!("a rule denying `{}`", r.action),
        RuleEffect::Allow => format!("a rule allowing `{}`", r.action),
    };
    let mut conds = Vec::new();
    if let Some(m) = r.max_amount {
        conds.push(format!("up to {m}"));
    }
    if let Some(l) = &r.recipients {
        conds.push(format!("only to {}", l.join(", ")));
    }
    if let Some(l) = &r.merchants {
        conds.push(format!("only at {}", l.join(", ")));
    }
    if !conds.is_empty() {
        s.push(' ');
        s.push_str(&conds.join(", "));
    }
    s
}
