//! Approval rules (docs/architecture.md#approvals): who must approve a parked call, and how
//! long it may wait.
//!
//! A kit's `limits.approve.rules` each say which parked calls they govern (by amount, action
//! pattern, destructive effect, soft-cap crossing: every condition given must hold) and what
//! releasing one takes: `approvers` distinct people, optionally one of them holding a role or
//! in a named group, within a window, with an optional escalation part way through. A rule
//! that names an amount or an action also parks the calls it matches. When several rules
//! match, the one needing the most approvers governs (the first listed among equals): a rule
//! can only ever ask for more. Pure: the gateway counts votes and fires escalations.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::money::Money;
use crate::pattern::action_pattern_matches;

/// The shortest and the longest approval window (and escalation delay), in seconds.
pub const MIN_WINDOW_SECS: u32 = 60;
pub const MAX_WINDOW_SECS: u32 = 7 * 24 * 3600;
/// The window of a parked call no rule sets a window for, unless the gateway is configured
/// otherwise.
pub const DEFAULT_WINDOW_SECS: u32 = 15 * 60;
/// The most approvers a rule may require.
pub const MAX_APPROVERS: u8 = 10;
/// The console roles a rule may name.
pub const ROLES: [&str; 4] = ["admin", "approver", "reviewer", "finance"];
/// The longest group name.
pub const MAX_GROUP_NAME_LEN: usize = 64;

/// One approval rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Calls costing at least this much (and more than nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<Money>,
    /// Actions this pattern matches (`*`, `cards.*`, `email.send`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Only calls of destructive tools.
    #[serde(default, skip_serializing_if = "is_false")]
    pub destructive: bool,
    /// Only calls that cross a soft cap.
    #[serde(default, skip_serializing_if = "is_false")]
    pub soft_cap: bool,
    /// How many distinct people must approve: 1 to [`MAX_APPROVERS`].
    #[serde(default = "one")]
    pub approvers: u8,
    /// One of the approvers must hold this role (`finance`, `admin`…); naming it also lets
    /// its holders decide these calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Or: one of the approvers must be in this group of console users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// How long the call waits before it expires into a denial ("30m", "4h", "2d").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "4h"))]
    pub window: Option<Window>,
    /// Notify again, and widen who may decide, part way through the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate: Option<Escalation>,
}

/// What happens when a call has waited `after` without being decided: the approvers are
/// notified again (`approval.escalated`) and the named role or group may also decide it,
/// standing in for the rule's own role or group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1h"))]
    pub after: Window,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u8 {
    1
}

impl ApprovalRule {
    /// Whether the rule governs a parked call of `action` costing `cost`.
    pub fn matches(&self, action: &str, cost: Money, destructive: bool, soft_cap_crossed: bool) -> bool {
        self.above.is_none_or(|a| cost >= a && !cost.is_zero())
            && self.action.as_deref().is_none_or(|p| action_pattern_matches(p, action))
            && (!self.destructive || destructive)
            && (!self.soft_cap || soft_cap_crossed)
    }

    /// Whether matching alone parks a call: the rule speaks of an amount or an action.
    pub fn parks(&self) -> bool {
        self.above.is_some() || self.action.is_some()
    }

    /// The window in seconds, `default` unless set.
    pub fn window_secs(&self, default: u32) -> u32 {
        self.window.map_or(default, |w| w.0)
    }

    /// "2 approvers, one of them finance": who must approve, in words.
    pub fn who(&self) -> String {
        let n = match self.approvers {
            1 => "1 approver".to_string(),
            n => format!("{n} approvers"),
        };
        match (&self.role, &self.group, self.approvers) {
            (Some(r), _, 1) => format!("{n} with role {r}"),
            (None, Some(g), 1) => format!("{n} from group {g}"),
            (Some(r), _, _) => format!("{n}, one of them with role {r}"),
            (None, Some(g), _) => format!("{n}, one of them from group {g}"),
            (None, None, _) => n,
        }
    }
}

/// The rule governing a parked call: among the rules that match, the one needing the most
/// approvers, the first listed among equals. Allocation-free.
pub fn governing_rule(
    rules: &[ApprovalRule],
    action: &str,
    cost: Money,
    destructive: bool,
    soft_cap_crossed: bool,
) -> Option<usize> {
    let mut best: Option<(usize, u8)> = None;
    for (i, r) in rules.iter().enumerate() {
        if r.matches(action, cost, destructive, soft_cap_crossed) && best.is_none_or(|(_, n)| r.approvers > n)
        {
            best = Some((i, r.approvers));
        }
    }
    best.map(|(i, _)| i)
}

/// A length of time, written as a whole number of minutes, hours or days: "90m", "4h", "2d".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window(pub u32);

impl Window {
    pub const fn secs(self) -> u32 {
        self.0
    }

    /// Reads "90m", "4h" or "2d".
    pub fn parse(s: &str) -> Result<Window, String> {
        let bad = || format!("`{s}` is not a duration; write minutes, hours or days such as 30m, 4h or 2d");
        let s = s.trim();
        let (digits, unit) = s.split_at(s.len().saturating_sub(1));
        let scale = match unit {
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(bad()),
        };
        let n: u32 = digits.parse().map_err(|_| bad())?;
        n.checked_mul(scale).map(Window).ok_or_else(bad)
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            s if s % 86_400 == 0 && s > 0 => write!(f, "{}d", s / 86_400),
            s if s % 3600 == 0 && s > 0 => write!(f, "{}h", s / 3600),
            s => write!(f, "{}m", s / 60),
        }
    }
}

impl Serialize for Window {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Window, D::Error> {
        let s = String::deserialize(d)?;
        Window::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A group name: 1 to [`MAX_GROUP_NAME_LEN`] lowercase letters, digits, `-` and `_`.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_GROUP_NAME_LEN
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a group name: use 1 to {MAX_GROUP_NAME_LEN} lowercase letters, digits, - and _"
        ))
    }
}

/// A rule's own checks, each reported at its JSON path under `path`.
pub(crate) fn check_rule(
    r: &ApprovalRule,
    path: &str,
    check_pattern: fn(&str) -> Result<(), String>,
    err: &mut impl FnMut(String, String),
) {
    if !r.parks() && !r.destructive && !r.soft_cap {
        err(
            path.to_string(),
            "a rule needs a condition: above, action, destructive or soft_cap (use action \"*\" for every parked call)"
                .into(),
        );
    }
    if let Some(p) = &r.action
        && let Err(m) = check_pattern(p)
    {
        err(format!("{path}.action"), m);
    }
    if r.approvers == 0 || r.approvers > MAX_APPROVERS {
        err(
            format!("{path}.approvers"),
            format!("a rule requires 1 to {MAX_APPROVERS} approvers, not {}", r.approvers),
        );
    }
    check_who(&r.role, &r.group, path, err);
    let window = r.window_secs(DEFAULT_WINDOW_SECS);
    if let Some(w) = r.window {
        check_window(w, &format!("{path}.window"), err);
    }
    if let Some(e) = &r.escalate {
        check_who(&e.role, &e.group, &format!("{path}.escalate"), err);
        if e.after.0 < MIN_WINDOW_SECS || e.after.0 >= window {
            err(
                format!("{path}.escalate.after"),
                format!(
                    "escalation comes at least 1m after the call parks and before its window of {} ends",
                    Window(window)
                ),
            );
        }
    }
}

fn check_who(
    role: &Option<String>,
    group: &Option<String>,
    path: &str,
    err: &mut impl FnMut(String, String),
) {
    if role.is_some() && group.is_some() {
        err(format!("{path}.group"), "name a role or a group, not both".into());
    }
    if let Some(r) = role
        && !ROLES.contains(&r.as_str())
    {
        err(format!("{path}.role"), format!("unknown role `{r}`; the roles are {}", ROLES.join(", ")));
    }
    if let Some(g) = group
        && let Err(m) = check_group_name(g)
    {
        err(format!("{path}.group"), m);
    }
}

fn check_window(w: Window, path: &str, err: &mut impl FnMut(String, String)) {
    if w.0 < MIN_WINDOW_SECS || w.0 > MAX_WINDOW_SECS {
        err(path.to_string(), format!("a window is 1m to 7d, not {w}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> ApprovalRule {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn windows_read_and_write_in_their_largest_whole_unit() {
        for (s, secs, back) in
            [("90m", 5400, "90m"), ("4h", 14_400, "4h"), ("2d", 172_800, "2d"), ("60m", 3600, "1h")]
        {
            let w = Window::parse(s).unwrap();
            assert_eq!((w.0, w.to_string()), (secs, back.to_string()));
        }
        for bad in ["", "4", "h", "4x", "-1h", "1.5h", "99999999d"] {
            assert!(Window::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_rule_needing_most_approvers_governs_and_the_first_among_equals() {
        let rules = [
            rule(r#"{"above":"30.00","window":"10m"}"#),
            rule(r#"{"above":"500.00","approvers":2,"role":"finance","window":"4h"}"#),
            rule(r#"{"action":"cards.*","approvers":2}"#),
        ];
        let m = |s: &str| Money::parse(s).unwrap();
        assert_eq!(governing_rule(&rules, "cards.charge", m("5000.00"), false, false), Some(1));
        assert_eq!(governing_rule(&rules, "email.send", m("40.00"), false, false), Some(0));
        assert_eq!(governing_rule(&rules, "cards.charge", m("40.00"), false, false), Some(2));
        assert_eq!(governing_rule(&rules, "email.send", m("10.00"), false, false), None);
        assert_eq!(rules[1].who(), "2 approvers, one of them with role finance");
    }

    #[test]
    fn conditions_all_hold_for_a_rule_to_match() {
        let r = rule(r#"{"above":"100.00","destructive":true,"soft_cap":true}"#);
        let m = Money::parse("200.00").unwrap();
        assert!(r.matches("x.y", m, true, true));
        assert!(!r.matches("x.y", m, false, true));
        assert!(!r.matches("x.y", m, true, false));
        assert!(!r.matches("x.y", Money::parse("50.00").unwrap(), true, true));
    }
}
