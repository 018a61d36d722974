//! AccountKit: the policy a tenant declares (docs/architecture.md#accountkits).
//!
//! Guarantees: a [`Kit`] obtained from [`Kit::from_json`] or [`Kit::validate`] is well formed:
//! no unknown fields or primitives, no negative money, a soft cap no higher than the hard cap,
//! and action names that name a known primitive. Errors name the JSON path of the problem.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::catalog::Effect;
use crate::money::Money;
use crate::primitive::{Primitive, PrimitiveSet};

/// A kit version: 1 for the first save, one more for each edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct KitVersion(pub u32);

impl KitVersion {
    pub const FIRST: KitVersion = KitVersion(1);
    pub fn next(self) -> KitVersion {
        KitVersion(self.0.saturating_add(1))
    }
}

impl fmt::Display for KitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// The policy a tenant declares for its agents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Kit {
    #[cfg_attr(feature = "openapi", schema(schema_with = kit_name_schema))]
    pub name: String,
    #[serde(default = "first_version")]
    pub version: KitVersion,
    /// Enabled primitives. `brain` is opt-in: a kit without it refuses brain tools.
    pub primitives: PrimitiveSet,
    #[serde(default)]
    pub toolkits: Toolkits,
    /// Capability rules. Every rule that matches an action must be satisfied.
    #[serde(default)]
    pub can: Vec<CanRule>,
    #[serde(default)]
    pub limits: Limits,
}

fn first_version() -> KitVersion {
    KitVersion::FIRST
}

/// Which connected-app toolkits an agent may use, per-tool filters, and the effects the kit
/// pins. A connected app is closed to agents until a kit names its toolkit in `filters` (or
/// sets `allow_all`, which opens every app, present and future).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Toolkits {
    /// When true every toolkit is permitted, including apps registered later (filters still
    /// apply); when false, the default, only the toolkits named in `filters` are.
    #[serde(default)]
    pub allow_all: bool,
    #[serde(default)]
    pub filters: BTreeMap<String, ToolFilter>,
}

impl Toolkits {
    /// Whether `tool` of connected app `toolkit` is permitted: the one rule a call
    /// ([`crate::evaluate`]) and a listing both apply.
    pub fn permits(&self, toolkit: &str, tool: &str) -> bool {
        match self.filters.get(toolkit) {
            None => self.allow_all,
            Some(f) => f.permits(tool),
        }
    }

    /// The effect a connected app's `tool` is gated as. With a pin, the pin, raised by what the
    /// tool's annotations `declared` if that is higher, never lowered: an upstream that calls a
    /// destructive tool read-only cannot talk its way past a pin. Without one, what it
    /// declared, and `destructive` when it declared nothing (the MCP schema's default).
    pub fn effect(&self, toolkit: &str, tool: &str, declared: Option<Effect>) -> Effect {
        let pin = self.filters.get(toolkit).and_then(|f| f.effects.pin(tool));
        pin.unwrap_or(Pin::NONE).gate(declared)
    }
}

/// Per-tool enable/disable filter for one toolkit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolFilter {
    /// When set, only these tools of the toolkit are enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
    /// Tools that are disabled even if `only` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable: Vec<String>,
    /// The least effect each named tool is gated as, whatever the app's annotations say
    /// (`{"issues.delete": "destructive"}`).
    #[serde(default, skip_serializing_if = "Pins::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, String>))]
    pub effects: Pins,
}

impl ToolFilter {
    pub fn permits(&self, tool: &str) -> bool {
        self.only.as_ref().is_none_or(|o| o.iter().any(|t| t == tool))
            && !self.disable.iter().any(|t| t == tool)
    }
}

/// The effects a filter pins, by tool name: a map in JSON (`{"issues.delete": "destructive"}`),
/// held as a list kept in name order. A `BTreeMap<String, Effect>` would bring a B-tree of its
/// own into the console's wasm (about 2 KB gzipped, over its budget) for maps of a few
/// entries. A tool named twice in one map is an error, not a silent last-wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins(Vec<(String, Pin)>);

/// How a filter gates one tool: the least effect whatever the app's annotations say
/// (`floor`), and the effect when they say nothing (`unannotated`, never below `floor`). A
/// kit's own pin sets both to the effect it names; a derived kit keeps the higher of each of
/// its parent's and its own, so a narrower kit never gates a tool lower than either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    pub floor: Effect,
    pub unannotated: Effect,
}

impl Pin {
    /// No pin: what the app declares, `destructive` when it declares nothing.
    pub const NONE: Pin = Pin { floor: Effect::Read, unannotated: Effect::Destructive };

    /// A kit's own pin to `effect`.
    pub const fn of(effect: Effect) -> Pin {
        Pin { floor: effect, unannotated: effect }
    }

    /// The higher of each part: gates every tool at least as high as either.
    pub fn max(self, other: Pin) -> Pin {
        Pin { floor: self.floor.max(other.floor), unannotated: self.unannotated.max(other.unannotated) }
    }

    /// The effect a tool whose annotations `declared` this is gated as.
    pub fn gate(self, declared: Option<Effect>) -> Effect {
        declared.map_or(self.unannotated, |d| d.max(self.floor))
    }
}

impl Pins {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The effect `tool` is pinned to, as a kit names it (a derived kit's floor).
    pub fn get(&self, tool: &str) -> Option<Effect> {
        self.pin(tool).map(|p| p.floor)
    }

    /// How `tool` is gated, if it is pinned.
    pub fn pin(&self, tool: &str) -> Option<Pin> {
        self.find(tool).ok().map(|i| self.0[i].1)
    }

    /// Pins `tool` to `effect`, replacing its pin if it had one; the old pin, if any.
    pub fn insert(&mut self, tool: String, effect: Effect) -> Option<Effect> {
        self.insert_pin(tool, Pin::of(effect)).map(|p| p.floor)
    }

    /// Sets how `tool` is gated, replacing what it had; that, if anything.
    pub fn insert_pin(&mut self, tool: String, pin: Pin) -> Option<Pin> {
        match self.find(&tool) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, pin)),
            Err(i) => {
                self.0.insert(i, (tool, pin));
                None
            }
        }
    }

    /// The pins in tool-name order, as a kit names them.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Effect)> {
        self.0.iter().map(|(t, p)| (t.as_str(), p.floor))
    }

    fn find(&self, tool: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(t, _)| t.as_str().cmp(tool))
    }
}

impl FromIterator<(String, Effect)> for Pins {
    /// Later pins of the same tool replace earlier ones.
    fn from_iter<I: IntoIterator<Item = (String, Effect)>>(iter: I) -> Self {
        let mut pins = Pins::default();
        for (tool, effect) in iter {
            pins.insert(tool, effect);
        }
        pins
    }
}

impl Serialize for Pins {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Pins {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Pins;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of tool names to read, write or destructive")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Pins, A::Error> {
                let mut pins = Pins::default();
                while let Some((tool, effect)) = map.next_entry::<String, Effect>()? {
                    if pins.get(&tool).is_some() {
                        let msg = format!("tool `{tool}` is pinned twice");
                        return Err(serde::de::Error::custom(msg));
                    }
                    pins.insert(tool, effect);
                }
                Ok(pins)
            }
        }
        d.deserialize_map(Visit)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RuleEffect {
    Allow,
    Deny,
}

/// A capability rule for one action (`cards.charge`), a primitive (`cards.*`) or all (`*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CanRule {
    pub action: String,
    pub effect: RuleEffect,
    /// Allow only at or below this amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_amount: Option<Money>,
    /// Allow only these recipients (email, sms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<String>>,
    /// Allow only these merchants (cards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchants: Option<Vec<String>>,
}

impl CanRule {
    /// Whether this rule speaks about `action`.
    pub fn matches(&self, action: &str) -> bool {
        action_pattern_matches(&self.action, action)
    }
}

pub use crate::pattern::action_pattern_matches;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default)]
    pub budget: BudgetLimits,
    #[serde(default)]
    pub approve: ApproveLimits,
    /// Call-rate limits: every one that matches an action must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate: Vec<RateLimit>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BudgetLimits {
    /// The combined ceiling: real spend plus platform credits. Absent means no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_cap: Option<Money>,
    /// Crossing it routes the action to approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_cap: Option<Money>,
    /// Caps per day, week or month in the tenant's time zone, beside the lifetime caps above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periods: Vec<PeriodLimit>,
}

/// A calendar period a budget limit counts over, in the tenant's time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Day,
    Week,
    Month,
}

impl Period {
    pub const fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }
}

/// A day of the week, for the day a `week` period starts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

impl Weekday {
    pub const ALL: [Weekday; 7] = [
        Weekday::Monday,
        Weekday::Tuesday,
        Weekday::Wednesday,
        Weekday::Thursday,
        Weekday::Friday,
        Weekday::Saturday,
        Weekday::Sunday,
    ];

    /// Days after Monday: Monday is 0, Sunday 6.
    pub const fn from_monday(self) -> u32 {
        self as u32
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Weekday::Monday => "monday",
            Weekday::Tuesday => "tuesday",
            Weekday::Wednesday => "wednesday",
            Weekday::Thursday => "thursday",
            Weekday::Friday => "friday",
            Weekday::Saturday => "saturday",
            Weekday::Sunday => "sunday",
        }
    }
}

/// A budget limit over a calendar period: what is posted and pending within one period may
/// not pass `hard_cap`, and crossing `soft_cap` waits for a human.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PeriodLimit {
    pub every: Period,
    /// The day a week starts on (`week` only); Monday unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub week_starts: Option<Weekday>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_cap: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_cap: Option<Money>,
}

impl PeriodLimit {
    /// The day its weeks start on: Monday unless set.
    pub fn week_start(&self) -> Weekday {
        self.week_starts.unwrap_or(Weekday::Monday)
    }

    /// "monthly", "weekly (from sunday)", "daily": how diffs and messages name it.
    pub fn adjective(&self) -> String {
        let base = match self.every {
            Period::Day => "daily",
            Period::Week => "weekly",
            Period::Month => "monthly",
        };
        match self.week_starts {
            Some(d) if self.every == Period::Week && d != Weekday::Monday => {
                format!("{base} (from {})", d.as_str())
            }
            _ => base.to_string(),
        }
    }

    /// "month", "week from sunday", "day": how the console and messages name it.
    pub fn label(&self) -> String {
        match (self.every, self.week_starts) {
            (Period::Week, Some(d)) if d != Weekday::Monday => format!("week from {}", d.as_str()),
            (p, _) => p.as_str().to_string(),
        }
    }
}

/// The unit a rate limit counts calls over: fixed windows aligned to the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RateUnit {
    Second,
    Minute,
    Hour,
}

impl RateUnit {
    pub const fn seconds(self) -> i64 {
        match self {
            RateUnit::Second => 1,
            RateUnit::Minute => 60,
            RateUnit::Hour => 3600,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            RateUnit::Second => "second",
            RateUnit::Minute => "minute",
            RateUnit::Hour => "hour",
        }
    }
}

/// The most calls any rate limit may allow per window.
pub const MAX_RATE_CALLS: u32 = 1_000_000;

/// At most `calls` calls per `per` of the actions `action` matches (`*`, `cards.*`,
/// `web.read`), counted per profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    #[serde(default = "every_action")]
    pub action: String,
    pub calls: u32,
    pub per: RateUnit,
}

fn every_action() -> String {
    "*".to_string()
}

impl RateLimit {
    /// Checks `calls` against its bounds: at least one, at most [`MAX_RATE_CALLS`].
    pub fn check_calls(calls: u32) -> Result<(), String> {
        if calls == 0 || calls > MAX_RATE_CALLS {
            return Err(format!(
                "a rate limit allows 1 to {MAX_RATE_CALLS} calls per window, not {calls}; to stop calls altogether, use a deny rule"
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApproveLimits {
    /// Actions whose cost is at or above this park for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<Money>,
    /// Actions (or patterns) that always park.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<String>,
    /// Tools declared `destructive` park unless this is false.
    #[serde(default = "yes")]
    pub destructive: bool,
    /// Who must approve which parked calls, and within what window ([`crate::approval`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::approval::ApprovalRule>,
}

fn yes() -> bool {
    true
}

impl Default for ApproveLimits {
    fn default() -> Self {
        ApproveLimits { above: None, always: Vec::new(), destructive: true, rules: Vec::new() }
    }
}

/// The longest kit name.
pub const MAX_KIT_NAME_LEN: usize = 80;

/// A kit's name in the API document: what [`Kit::validate`] accepts.
#[cfg(feature = "openapi")]
fn kit_name_schema() -> utoipa::openapi::Object {
    crate::args::name_schema(MAX_KIT_NAME_LEN)
}

/// One problem in a kit, at a JSON path such as `limits.budget.soft_cap`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KitError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for KitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem found in a kit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid kit: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct KitErrors(pub Vec<KitError>);

impl Kit {
    /// The permissive kit every tenant starts with: every primitive but the opt-in `brain`,
    /// no rules and no caps. No connected app is open until the kit names its toolkit.
    pub fn default_kit() -> Kit {
        Kit {
            name: "Default".to_string(),
            version: KitVersion::FIRST,
            primitives: Primitive::ALL.into_iter().filter(|p| *p != Primitive::Brain).collect(),
            toolkits: Toolkits::default(),
            can: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// Parses and validates a kit from JSON. Structural errors (unknown fields, unknown
    /// primitives, negative or over-precise money) and semantic ones carry their JSON path.
    pub fn from_json(json: &str) -> Result<Kit, KitErrors> {
        let de = &mut serde_json::Deserializer::from_str(json);
        let kit: Kit = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            KitErrors(vec![KitError {
                path: if path == "." { "$".to_string() } else { path },
                message: strip_position(&e.into_inner().to_string()),
            }])
        })?;
        kit.validate()?;
        Ok(kit)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a kit always serializes")
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a kit always serializes")
    }

    /// The semantic checks that types alone cannot express.
    pub fn validate(&self) -> Result<(), KitErrors> {
        let mut errs = Vec::new();
        let mut err = |path: String, message: String| errs.push(KitError { path, message });
        if self.name.trim().is_empty() {
            err("name".into(), "a kit needs a name".into());
        } else if self.name.chars().count() > MAX_KIT_NAME_LEN || !crate::args::is_plain_line(&self.name) {
            err(
                "name".into(),
                format!(
                    "a kit name is one line of at most {MAX_KIT_NAME_LEN} characters, without control characters"
                ),
            );
        }
        if self.version.0 == 0 {
            err("version".into(), "versions start at 1".into());
        }
        let b = &self.limits.budget;
        if let (Some(soft), Some(hard)) = (b.soft_cap, b.hard_cap)
            && soft > hard
        {
            err(
                "limits.budget.soft_cap".into(),
                format!("soft cap {soft} is above the hard cap {hard}; lower it or raise the hard cap"),
            );
        }
        for (i, p) in b.periods.iter().enumerate() {
            check_period(p, &format!("limits.budget.periods[{i}]"), &mut err);
        }
        check_rates(&self.limits.rate, &mut err);
        for (i, rule) in self.can.iter().enumerate() {
            if let Err(m) = check_action_pattern(&rule.action) {
                err(format!("can[{i}].action"), m);
            }
            for (field, list) in [("recipients", &rule.recipients), ("merchants", &rule.merchants)] {
                if list.as_ref().is_some_and(Vec::is_empty) {
                    err(format!("can[{i}].{field}"), "list at least one, or leave the field out".into());
                }
            }
            if rule.effect == RuleEffect::Deny
                && (rule.max_amount.is_some() || rule.recipients.is_some() || rule.merchants.is_some())
            {
                err(
                    format!("can[{i}]"),
                    "a deny rule takes no conditions; use an allow rule with conditions instead".into(),
                );
            }
        }
        for (i, a) in self.limits.approve.always.iter().enumerate() {
            if let Err(m) = check_action_pattern(a) {
                err(format!("limits.approve.always[{i}]"), m);
            }
        }
        for (i, r) in self.limits.approve.rules.iter().enumerate() {
            let path = format!("limits.approve.rules[{i}]");
            crate::approval::check_rule(r, &path, check_action_pattern, &mut err);
        }
        for name in self.toolkits.filters.keys() {
            if name.trim().is_empty() {
                err("toolkits.filters".into(), "toolkit names must not be empty".into());
            }
        }
        if errs.is_empty() { Ok(()) } else { Err(KitErrors(errs)) }
    }

    /// The can rules that speak about `action`.
    pub fn rules_for<'a>(&'a self, action: &'a str) -> impl Iterator<Item = (usize, &'a CanRule)> + 'a {
        self.can.iter().enumerate().filter(move |(_, r)| r.matches(action))
    }
}

/// A period limit's own checks: a cap to enforce, a soft cap no higher than its hard cap, and
/// a week start only on weeks.
/// Each rate limit's pattern and bound, and one limit per action pattern and unit: two would
/// count the same calls in the same window.
fn check_rates(rates: &[RateLimit], err: &mut impl FnMut(String, String)) {
    for (i, r) in rates.iter().enumerate() {
        if let Err(m) = check_action_pattern(&r.action) {
            err(format!("limits.rate[{i}].action"), m);
        }
        if let Err(m) = RateLimit::check_calls(r.calls) {
            err(format!("limits.rate[{i}].calls"), m);
        }
        let earlier = rates[..i].iter().position(|o| o.action == r.action && o.per == r.per);
        if let Some(j) = earlier {
            err(
                format!("limits.rate[{i}]"),
                format!(
                    "limits.rate[{j}] already limits `{}` per {}; keep one limit per action pattern and unit",
                    r.action,
                    r.per.as_str()
                ),
            );
        }
    }
}

fn check_period(p: &PeriodLimit, path: &str, err: &mut impl FnMut(String, String)) {
    if p.hard_cap.is_none() && p.soft_cap.is_none() {
        err(path.to_string(), "a period limit needs a hard_cap, a soft_cap or both".into());
    }
    if let (Some(soft), Some(hard)) = (p.soft_cap, p.hard_cap)
        && soft > hard
    {
        err(
            format!("{path}.soft_cap"),
            format!(
                "soft cap {soft} is above this {}'s hard cap {hard}; lower it or raise the hard cap",
                p.every.as_str()
            ),
        );
    }
    if p.week_starts.is_some() && p.every != Period::Week {
        err(
            format!("{path}.week_starts"),
            format!(
                "week_starts belongs to a `week` limit, not a `{}` one; remove it or set every to week",
                p.every.as_str()
            ),
        );
    }
}

/// Action families named otherwise than their primitive: the runtime tools (`teams.comment`
/// and the rest) belong to `tasks`.
const FAMILIES: [&str; 1] = ["teams"];

/// Action names are `*`, `primitive.*`, `primitive.verb` (or a family's, such as `teams.*`),
/// or a `naive_*` tool name.
fn check_action_pattern(p: &str) -> Result<(), String> {
    if p == "*" || (p.starts_with("naive_") && p.len() > 6) {
        return Ok(());
    }
    let Some((prim, verb)) = p.split_once('.') else {
        return Err(format!("`{p}` is not an action; write `primitive.verb`, `primitive.*` or `*`"));
    };
    if Primitive::parse(prim).is_none() && !FAMILIES.contains(&prim) {
        return Err(format!("unknown primitive `{prim}` in `{p}`"));
    }
    if verb.is_empty() || !verb.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'*') {
        return Err(format!("`{p}` has no valid verb after the primitive"));
    }
    Ok(())
}

/// serde_json appends " at line L column C"; the path already says where.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_paths(json: &str) -> Vec<String> {
        Kit::from_json(json).unwrap_err().0.into_iter().map(|e| e.path).collect()
    }

    #[test]
    fn default_kit_leaves_brain_off_and_round_trips() {
        let k = Kit::default_kit();
        assert!(!k.primitives.contains(Primitive::Brain));
        assert!(k.primitives.contains(Primitive::Tasks));
        assert_eq!(Kit::from_json(&k.to_json()).unwrap(), k);
    }

    #[test]
    fn rules_may_name_the_runtime_tools() {
        let k = Kit::from_json(
            r#"{"name":"K","primitives":["tasks"],"can":[{"action":"teams.unblock","effect":"deny"},{"action":"teams.*","effect":"allow"}]}"#,
        );
        assert!(k.is_ok(), "{k:?}");
        assert!(
            Kit::from_json(r#"{"name":"K","primitives":[],"can":[{"action":"team.x","effect":"deny"}]}"#)
                .is_err()
        );
    }

    #[test]
    fn unknown_field_names_its_path() {
        assert_eq!(
            err_paths(r#"{"name":"K","primitives":[],"limits":{"budget":{"hard":"1"}}}"#),
            ["limits.budget.hard"]
        );
        assert_eq!(err_paths(r#"{"name":"K","primitives":[],"colour":1}"#), ["colour"]);
    }

    #[test]
    fn unknown_primitive_and_negative_money_name_their_path() {
        let e = Kit::from_json(r#"{"name":"K","primitives":["cards","warp"]}"#).unwrap_err();
        assert_eq!(e.0[0].path, "primitives");
        assert!(e.0[0].message.contains("unknown primitive `warp`"), "{}", e.0[0].message);
        assert_eq!(
            err_paths(r#"{"name":"K","primitives":[],"limits":{"budget":{"hard_cap":"-5"}}}"#),
            ["limits.budget.hard_cap"]
        );
        assert_eq!(
            err_paths(
                r#"{"name":"K","primitives":[],"can":[{"action":"cards.charge","effect":"allow","max_amount":"0.00001"}]}"#
            ),
            ["can[0].max_amount"]
        );
    }

    #[test]
    fn soft_cap_above_hard_cap_is_an_error() {
        let e = err_paths(
            r#"{"name":"K","primitives":[],"limits":{"budget":{"hard_cap":"10","soft_cap":"20"}}}"#,
        );
        assert_eq!(e, ["limits.budget.soft_cap"]);
    }

    #[test]
    fn action_names_are_checked() {
        let e = err_paths(
            r#"{"name":"K","primitives":[],"can":[{"action":"warp.go","effect":"deny"},{"action":"cards","effect":"deny"}],"limits":{"approve":{"always":["x"]}}}"#,
        );
        assert_eq!(e, ["can[0].action", "can[1].action", "limits.approve.always[0]"]);
    }

    #[test]
    fn patterns() {
        assert!(action_pattern_matches("*", "cards.charge"));
        assert!(action_pattern_matches("cards.*", "cards.charge"));
        assert!(!action_pattern_matches("cards.*", "email.send"));
        assert!(action_pattern_matches("email.send", "email.send"));
        assert!(!action_pattern_matches("email.sen", "email.send"));
    }
}
