//! Sub-agent narrowing (docs/architecture.md#accountkits): a child's kit is derived from its parent's and
//! can only
//! narrow it.
//!
//! Guarantee (property-tested): for any action and budget, if the derived kit allows or
//! freezes an action, the parent's kit does not deny it. Can rules combine by union because
//! every matching rule must be satisfied, so more rules only ever refuse more. Caps take the
//! lower of the two; the child's spend is also counted against the parent's pool by the
//! gateway, so a child's budget is shared with the parent, never added to it.

use std::collections::BTreeMap;

use crate::kit::{ApproveLimits, BudgetLimits, Kit, Limits, Pin, Pins, ToolFilter, Toolkits};
use crate::money::Money;

/// The kit a sub-agent runs under: `requested` narrowed by `parent`.
pub fn derive_child(parent: &Kit, requested: &Kit) -> Kit {
    let hard_cap = min_opt(parent.limits.budget.hard_cap, requested.limits.budget.hard_cap);
    let soft_cap = min_opt(parent.limits.budget.soft_cap, requested.limits.budget.soft_cap);
    let soft_cap = match (soft_cap, hard_cap) {
        (Some(s), Some(h)) if s > h => Some(h),
        (s, _) => s,
    };
    let mut always = parent.limits.approve.always.clone();
    for a in &requested.limits.approve.always {
        if !always.contains(a) {
            always.push(a.clone());
        }
    }
    let mut can = parent.can.clone();
    can.extend(requested.can.iter().filter(|r| !parent.can.contains(r)).cloned());
    Kit {
        name: requested.name.clone(),
        version: requested.version,
        primitives: parent.primitives.intersect(requested.primitives),
        toolkits: narrow_toolkits(&parent.toolkits, &requested.toolkits),
        can,
        limits: Limits {
            budget: BudgetLimits {
                hard_cap,
                soft_cap,
                periods: union(&parent.limits.budget.periods, &requested.limits.budget.periods),
            },
            approve: ApproveLimits {
                above: min_opt(parent.limits.approve.above, requested.limits.approve.above),
                always,
                destructive: parent.limits.approve.destructive || requested.limits.approve.destructive,
                rules: union(&parent.limits.approve.rules, &requested.limits.approve.rules),
            },
            rate: union(&parent.limits.rate, &requested.limits.rate),
        },
    }
}

/// Every limit of both sides, each once: each must hold, so more of them only refuse more.
fn union<T: Clone + PartialEq>(parent: &[T], requested: &[T]) -> Vec<T> {
    let mut all = parent.to_vec();
    all.extend(requested.iter().filter(|l| !parent.contains(l)).cloned());
    all
}

fn min_opt(a: Option<Money>, b: Option<Money>) -> Option<Money> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn narrow_toolkits(parent: &Toolkits, child: &Toolkits) -> Toolkits {
    let allow_all = parent.allow_all && child.allow_all;
    let mut filters = BTreeMap::new();
    let names = parent.filters.keys().chain(child.filters.keys());
    for name in names {
        if filters.contains_key(name) {
            continue;
        }
        let (p, c) = (parent.filters.get(name), child.filters.get(name));
        // A toolkit survives only if both sides permit it.
        if (p.is_none() && !parent.allow_all) || (c.is_none() && !child.allow_all) {
            continue;
        }
        filters.insert(name.clone(), narrow_filter(p, c));
    }
    Toolkits { allow_all, filters }
}

fn narrow_filter(p: Option<&ToolFilter>, c: Option<&ToolFilter>) -> ToolFilter {
    let empty = ToolFilter::default();
    let (p, c) = (p.unwrap_or(&empty), c.unwrap_or(&empty));
    let only = match (&p.only, &c.only) {
        (Some(a), Some(b)) => Some(a.iter().filter(|t| b.contains(t)).cloned().collect()),
        (Some(a), None) => Some(a.clone()),
        (None, b) => b.clone(),
    };
    let mut disable = p.disable.clone();
    disable.extend(c.disable.iter().filter(|t| !p.disable.contains(t)).cloned());
    // A pin can only raise a tool's effect, so the narrower kit keeps the higher of the two,
    // part by part: a `read` pin on one side of a tool the other leaves unpinned (gated
    // `destructive` when the app declares nothing) keeps that `destructive`.
    let mut effects = Pins::default();
    for (tool, _) in p.effects.iter().chain(c.effects.iter()) {
        let (mine, theirs) = (c.effects.pin(tool), p.effects.pin(tool));
        let kept = mine.unwrap_or(Pin::NONE).max(theirs.unwrap_or(Pin::NONE));
        effects.insert_pin(tool.to_string(), kept);
    }
    ToolFilter { only, disable, effects }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Effect;

    fn kit_pinning(pin: Option<Effect>) -> Kit {
        let mut filter = ToolFilter::default();
        if let Some(e) = pin {
            filter.effects.insert("issues.create".into(), e);
        }
        let mut kit = Kit::default_kit();
        kit.toolkits.filters.insert("tracker".into(), filter);
        kit
    }

    /// Every pin a parent and a child may set (or not), for every annotation an app may give:
    /// the derived kit gates the tool at least as high as the parent and as the child.
    #[test]
    fn a_derived_kit_never_gates_a_tool_lower_than_its_parent_or_its_own_kit() {
        let pins = [None, Some(Effect::Read), Some(Effect::Write), Some(Effect::Destructive)];
        for parent in pins {
            for child in pins {
                let (p, c) = (kit_pinning(parent), kit_pinning(child));
                let derived = derive_child(&p, &c);
                for declared in pins {
                    let gate = |k: &Kit| k.toolkits.effect("tracker", "issues.create", declared);
                    let want = gate(&p).max(gate(&c));
                    assert_eq!(
                        gate(&derived),
                        want,
                        "parent {parent:?}, child {child:?}, declared {declared:?}"
                    );
                }
            }
        }
    }
}
