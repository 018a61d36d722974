//! The editor's fields as typed ([`KitText`]): read from a kit to fill the form, read from
//! the submitted fields in document order, and turned into a kit with every problem named by
//! its path. The server renders the field names below and the island reads them back.

use policy::kit::{ApproveLimits, BudgetLimits, Limits, ToolFilter, Toolkits};
use policy::{CanRule, Effect, Kit, KitError, KitVersion, Money, Primitive, PrimitiveSet, RuleEffect};

// The form's field names: the server renders them and `KitText::from_fields` reads them.
pub(super) const F_PRIMITIVE: &str = "primitive";
pub(super) const F_HARD_CAP: &str = "hard_cap";
pub(super) const F_SOFT_CAP: &str = "soft_cap";
pub(super) const F_APPROVE_ABOVE: &str = "approve_above";
pub(super) const F_ALWAYS: &str = "always";
pub(super) const F_DESTRUCTIVE: &str = "destructive";
pub(super) const F_ALLOW_ALL: &str = "allow_all";
pub(super) const F_RULE_ACTION: &str = "rule_action";
pub(super) const F_RULE_EFFECT: &str = "rule_effect";
pub(super) const F_RULE_MAX: &str = "rule_max";
pub(super) const F_RULE_MERCHANTS: &str = "rule_merchants";
pub(super) const F_RULE_RECIPIENTS: &str = "rule_recipients";
pub(super) const F_FILTER_TOOLKIT: &str = "filter_toolkit";
pub(super) const F_FILTER_ONLY: &str = "filter_only";
pub(super) const F_FILTER_DISABLE: &str = "filter_disable";
pub(super) const F_FILTER_EFFECTS: &str = "filter_effects";
pub(super) const F_PERIODS: &str = "period_limits";
pub(super) const F_RATES: &str = "rate_limits";
pub(super) const F_APPROVAL_RULES: &str = "approval_rules";

/// One can rule as typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleText {
    pub action: String,
    pub allow: bool,
    pub max_amount: String,
    pub merchants: String,
    pub recipients: String,
}

/// One toolkit filter as typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FilterText {
    pub toolkit: String,
    pub only: String,
    pub disable: String,
    /// Pinned effects, `tool=effect` comma-separated (`issues.delete=destructive`).
    pub effects: String,
}

/// The editor's fields as typed, before they are a kit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KitText {
    pub primitives: PrimitiveSet,
    pub hard_cap: String,
    pub soft_cap: String,
    pub approve_above: String,
    pub always: String,
    pub destructive: bool,
    pub allow_all: bool,
    pub rules: Vec<RuleText>,
    pub filters: Vec<FilterText>,
    /// Period limits, one per line ([`super::limits_text`]).
    pub periods: String,
    /// Rate limits, one per line.
    pub rates: String,
    /// Approval rules, one per line.
    pub approval_rules: String,
}

fn money_text(m: Option<Money>) -> String {
    m.map(Money::to_decimal_string).unwrap_or_default()
}

fn list_text(l: &[String]) -> String {
    l.join(", ")
}

/// Comma-separated items, trimmed, empty ones dropped.
fn items(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// An empty field means "no condition".
fn opt_items(s: &str) -> Option<Vec<String>> {
    let v = items(s);
    (!v.is_empty()).then_some(v)
}

/// `tool=effect` pairs, comma-separated; each effect is read, write or destructive.
fn pins(toolkit: &str, s: &str, errs: &mut Vec<KitError>) -> policy::kit::Pins {
    let mut pinned = policy::kit::Pins::default();
    for item in items(s) {
        let parsed = item.split_once('=').and_then(|(tool, effect)| {
            let effect = match effect.trim() {
                "read" => Effect::Read,
                "write" => Effect::Write,
                "destructive" => Effect::Destructive,
                _ => return None,
            };
            Some((tool.trim().to_string(), effect)).filter(|(t, _)| !t.is_empty())
        });
        match parsed {
            Some((tool, effect)) => {
                pinned.insert(tool, effect);
            }
            None => errs.push(KitError {
                path: format!("toolkits.filters.{toolkit}.effects"),
                message: format!(
                    "\"{item}\" is not tool=effect, where the effect is read, write or destructive"
                ),
            }),
        }
    }
    pinned
}

/// An empty field means "no limit"; anything else must be an amount.
fn money_field(path: &str, s: &str, errs: &mut Vec<KitError>) -> Option<Money> {
    if s.trim().is_empty() {
        return None;
    }
    match Money::parse(s) {
        Ok(m) => Some(m),
        Err(e) => {
            errs.push(KitError {
                path: path.into(),
                message: format!("\"{}\" is not an amount: {e}", s.trim()),
            });
            None
        }
    }
}

impl KitText {
    pub fn of(kit: &Kit) -> KitText {
        KitText {
            primitives: kit.primitives,
            hard_cap: money_text(kit.limits.budget.hard_cap),
            soft_cap: money_text(kit.limits.budget.soft_cap),
            approve_above: money_text(kit.limits.approve.above),
            always: list_text(&kit.limits.approve.always),
            destructive: kit.limits.approve.destructive,
            allow_all: kit.toolkits.allow_all,
            periods: super::limits_text::periods_text(&kit.limits.budget.periods),
            rates: super::limits_text::rates_text(&kit.limits.rate),
            approval_rules: super::limits_text::approval_rules_text(&kit.limits.approve.rules),
            rules: kit
                .can
                .iter()
                .map(|r| RuleText {
                    action: r.action.clone(),
                    allow: r.effect == RuleEffect::Allow,
                    max_amount: money_text(r.max_amount),
                    merchants: r.merchants.as_deref().map(list_text).unwrap_or_default(),
                    recipients: r.recipients.as_deref().map(list_text).unwrap_or_default(),
                })
                .collect(),
            filters: kit
                .toolkits
                .filters
                .iter()
                .map(|(name, f)| FilterText {
                    toolkit: name.clone(),
                    only: f.only.as_deref().map(list_text).unwrap_or_default(),
                    disable: list_text(&f.disable),
                    effects: f
                        .effects
                        .iter()
                        .map(|(t, e)| format!("{t}={}", e.as_str()))
                        .collect::<Vec<_>>()
                        .join(", "),
                })
                .collect(),
        }
    }

    /// The fields as a form submits them, in document order: each rule's and each toolkit
    /// filter's fields start with its first one (`rule_action`, `filter_toolkit`). Names this
    /// form does not use are ignored.
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> KitText {
        let mut t = KitText::default();
        for (name, value) in fields {
            let v = value.to_string();
            match name {
                F_PRIMITIVE => {
                    if let Some(p) = Primitive::parse(value) {
                        t.primitives.insert(p);
                    }
                }
                F_HARD_CAP => t.hard_cap = v,
                F_SOFT_CAP => t.soft_cap = v,
                F_APPROVE_ABOVE => t.approve_above = v,
                F_ALWAYS => t.always = v,
                F_PERIODS => t.periods = v,
                F_RATES => t.rates = v,
                F_APPROVAL_RULES => t.approval_rules = v,
                F_DESTRUCTIVE => t.destructive = true,
                F_ALLOW_ALL => t.allow_all = true,
                F_RULE_ACTION => t.rules.push(RuleText { action: v, allow: true, ..Default::default() }),
                F_FILTER_TOOLKIT => t.filters.push(FilterText { toolkit: v, ..Default::default() }),
                _ => {
                    if let Some(r) = t.rules.last_mut() {
                        match name {
                            F_RULE_EFFECT => r.allow = value == "allow",
                            F_RULE_MAX => r.max_amount = v.clone(),
                            F_RULE_MERCHANTS => r.merchants = v.clone(),
                            F_RULE_RECIPIENTS => r.recipients = v.clone(),
                            _ => (),
                        }
                    }
                    if let Some(f) = t.filters.last_mut() {
                        match name {
                            F_FILTER_ONLY => f.only = v,
                            F_FILTER_DISABLE => f.disable = v,
                            F_FILTER_EFFECTS => f.effects = v,
                            _ => (),
                        }
                    }
                }
            }
        }
        t
    }

    /// The kit these fields describe, with this name and version, or every problem with it:
    /// amounts that do not parse, then whatever [`Kit::validate`] finds.
    pub fn to_kit(&self, name: &str, version: KitVersion) -> Result<Kit, Vec<KitError>> {
        let mut errs = Vec::new();
        let hard_cap = money_field("limits.budget.hard_cap", &self.hard_cap, &mut errs);
        let soft_cap = money_field("limits.budget.soft_cap", &self.soft_cap, &mut errs);
        let above = money_field("limits.approve.above", &self.approve_above, &mut errs);
        let periods = super::limits_text::parse_periods(&self.periods, &mut errs);
        let rate = super::limits_text::parse_rates(&self.rates, &mut errs);
        let approval_rules = super::limits_text::parse_approval_rules(&self.approval_rules, &mut errs);
        let can = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| CanRule {
                action: r.action.trim().to_string(),
                effect: if r.allow { RuleEffect::Allow } else { RuleEffect::Deny },
                max_amount: money_field(&format!("can[{i}].max_amount"), &r.max_amount, &mut errs),
                merchants: opt_items(&r.merchants),
                recipients: opt_items(&r.recipients),
            })
            .collect();
        let mut filters = std::collections::BTreeMap::new();
        for f in &self.filters {
            let name = f.toolkit.trim().to_string();
            if filters.contains_key(&name) {
                errs.push(KitError {
                    path: "toolkits.filters".into(),
                    message: format!("toolkit \"{name}\" is listed twice; merge its filters into one row"),
                });
            }
            let effects = pins(&name, &f.effects, &mut errs);
            filters
                .insert(name, ToolFilter { only: opt_items(&f.only), disable: items(&f.disable), effects });
        }
        let kit = Kit {
            name: name.to_string(),
            version,
            primitives: self.primitives,
            toolkits: Toolkits { allow_all: self.allow_all, filters },
            can,
            limits: Limits {
                budget: BudgetLimits { hard_cap, soft_cap, periods },
                approve: ApproveLimits {
                    above,
                    always: items(&self.always),
                    destructive: self.destructive,
                    rules: approval_rules,
                },
                rate,
            },
        };
        if let Err(e) = kit.validate() {
            errs.extend(e.0);
        }
        if errs.is_empty() { Ok(kit) } else { Err(errs) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::components::kit_editor::sample_kit as kit;

    #[test]
    fn the_form_round_trips_a_kit() {
        let k = kit();
        assert_eq!(KitText::of(&k).to_kit(&k.name, k.version), Ok(k));
    }

    #[test]
    fn the_fields_a_form_submits_are_the_kit_they_show() {
        let fields = [
            ("name", "Buyers"),
            (F_PRIMITIVE, "cards"),
            (F_PRIMITIVE, "email"),
            (F_PRIMITIVE, "no-such-primitive"),
            (F_HARD_CAP, "500"),
            (F_SOFT_CAP, "400"),
            (F_APPROVE_ABOVE, "50"),
            (F_ALWAYS, ""),
            (F_RULE_ACTION, "cards.charge"),
            (F_RULE_EFFECT, "allow"),
            (F_RULE_MAX, "100"),
            (F_RULE_MERCHANTS, "globex-parts"),
            (F_RULE_RECIPIENTS, ""),
            (F_RULE_ACTION, "email.send"),
            (F_RULE_EFFECT, "allow"),
            (F_RULE_MAX, ""),
            (F_RULE_MERCHANTS, ""),
            (F_RULE_RECIPIENTS, "a@example.test, b@example.test"),
            (F_RULE_ACTION, "trading.*"),
            (F_RULE_EFFECT, "deny"),
            (F_RULE_MAX, ""),
            (F_RULE_MERCHANTS, ""),
            (F_RULE_RECIPIENTS, ""),
            (F_ALLOW_ALL, "on"),
            (F_FILTER_TOOLKIT, "github"),
            (F_FILTER_ONLY, ""),
            (F_FILTER_DISABLE, "delete_repo"),
            (F_FILTER_EFFECTS, "list_repos=read, merge=destructive"),
        ];
        let t = KitText::from_fields(fields);
        assert_eq!(t.rules.len(), 3);
        assert!(t.rules[0].allow && t.rules[1].allow && !t.rules[2].allow);
        assert_eq!(t.rules[1].recipients, "a@example.test, b@example.test");
        assert!(!t.destructive, "an unchecked box submits nothing");
        let k = t.to_kit("Buyers", KitVersion(3)).unwrap();
        assert_eq!(k.version, KitVersion(3));
        assert_eq!(k.limits.budget.hard_cap, Some(Money::parse("500").unwrap()));
        assert_eq!(
            k.can[1].recipients.as_deref(),
            Some(&["a@example.test".to_string(), "b@example.test".to_string()][..])
        );
        assert_eq!(k.toolkits.filters["github"].disable, vec!["delete_repo".to_string()]);
        assert_eq!(
            k.toolkits.effect("github", "merge", Some(Effect::Read)),
            Effect::Destructive,
            "a pin holds"
        );
        assert_eq!(k.toolkits.effect("github", "list_repos", Some(Effect::Write)), Effect::Write, "raised");
        assert_eq!(
            k.toolkits.effect("github", "list_repos", None),
            Effect::Read,
            "the pin, when none declared"
        );
        assert_eq!(k.toolkits.effect("github", "other", None), Effect::Destructive, "unpinned, undeclared");
        assert!(k.toolkits.allow_all);
        assert_eq!(KitText::of(&k).filters[0].effects, "list_repos=read, merge=destructive", "reads back");
        let mut bad = KitText::of(&k);
        bad.filters[0].effects = "merge=harmless".into();
        let errs = bad.to_kit("Buyers", KitVersion(3)).unwrap_err();
        assert_eq!(errs[0].path, "toolkits.filters.github.effects");
    }

    #[test]
    fn bad_amounts_and_invalid_kits_name_their_field() {
        let k = kit();
        let mut t = KitText::of(&k);
        t.hard_cap = "lots".into();
        t.soft_cap = "600".into();
        let errs = t.to_kit(&k.name, k.version).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].path, "limits.budget.hard_cap");
        t.hard_cap = "500".into();
        let errs = t.to_kit(&k.name, k.version).unwrap_err();
        assert_eq!(errs[0].path, "limits.budget.soft_cap");
    }
}
