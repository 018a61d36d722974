//! The AccountKit editor: forms for primitives, toolkits, can rules and limits that validate
//! as you type, the `KitDiff` of the draft against the saved version in words, a simulator,
//! and save with an optimistic-concurrency check.
//!
//! Everything it decides, it decides with `policy` compiled to wasm: the draft is a [`Kit`]
//! checked by [`Kit::validate`], the diff is [`KitDiff::between`], and the simulator runs
//! [`policy::evaluate`] and builds the [`Envelope`] the gateway would return, with no round
//! trip. Only saving calls the server, which validates again and refuses a stale version with
//! `kit_version_conflict`. Without JavaScript the same form posts the kit as JSON from its
//! text area.
//!
//! How it ships: the form and the simulator's inputs are server-rendered HTML, passed to the
//! [`KitEditorIsland`] as children, so their markup never becomes wasm. The island reads the
//! fields through the DOM on every input (the saved version from the fields' defaults, the
//! draft from their values), parses them with [`KitText::from_fields`], the same function the
//! unit tests drive, and renders only what changes: the problems, the diff, the save state and
//! the simulator's verdicts. It takes no serialized props, so no JSON deserializer ships.

use leptos::prelude::*;
use policy::kit::{ApproveLimits, BudgetLimits, Limits, ToolFilter, Toolkits};
use policy::{
    ActionRequest, ApprovalHandle, BudgetView, CanRule, Catalog, DecisionInput, Direction, EngineVerdict,
    Envelope, Kit, KitDiff, KitError, KitVersion, Money, Primitive, PrimitiveSet, RuleEffect, SubjectStatus,
};
use serde::{Deserialize, Serialize};

use crate::components::common::INPUT;

/// A profile the simulator can act as: its spend so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimProfile {
    pub name: String,
    pub posted: Money,
    pub pending: Money,
}

// The form's field names: the server renders them and `KitText::from_fields` reads them.
const F_PRIMITIVE: &str = "primitive";
const F_HARD_CAP: &str = "hard_cap";
const F_SOFT_CAP: &str = "soft_cap";
const F_APPROVE_ABOVE: &str = "approve_above";
const F_ALWAYS: &str = "always";
const F_DESTRUCTIVE: &str = "destructive";
const F_ALLOW_ALL: &str = "allow_all";
const F_RULE_ACTION: &str = "rule_action";
const F_RULE_EFFECT: &str = "rule_effect";
const F_RULE_MAX: &str = "rule_max";
const F_RULE_MERCHANTS: &str = "rule_merchants";
const F_RULE_RECIPIENTS: &str = "rule_recipients";
const F_FILTER_TOOLKIT: &str = "filter_toolkit";
const F_FILTER_ONLY: &str = "filter_only";
const F_FILTER_DISABLE: &str = "filter_disable";

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
            filters.insert(name, ToolFilter { only: opt_items(&f.only), disable: items(&f.disable) });
        }
        let kit = Kit {
            name: name.to_string(),
            version,
            primitives: self.primitives,
            toolkits: Toolkits { allow_all: self.allow_all, filters },
            can,
            limits: Limits {
                budget: BudgetLimits { hard_cap, soft_cap },
                approve: ApproveLimits { above, always: items(&self.always), destructive: self.destructive },
            },
        };
        if let Err(e) = kit.validate() {
            errs.extend(e.0);
        }
        if errs.is_empty() { Ok(kit) } else { Err(errs) }
    }
}

/// What the simulator shows for one action.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutcome {
    /// `allow`, `park` or `deny`.
    pub verdict: &'static str,
    pub reason: Option<String>,
    pub cost: Money,
    /// The envelope the agent would get (for `allow`, what executing reserves).
    pub envelope: String,
}

/// A sample action for the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct SimAction {
    pub tool: String,
    pub amount: Money,
    pub merchant: Option<String>,
    pub recipient: Option<String>,
}

/// What the simulator shows for an allowed action: it executes at once, so there is no
/// envelope; this is what executing reserves.
#[derive(Serialize)]
struct AllowPreview<'a> {
    ok: bool,
    verdict: &'static str,
    action: &'a str,
    hold: Money,
    note: &'static str,
}

/// Decides `action` for `profile` under `kit`, exactly as the gateway's engine would, and
/// builds the envelope the agent would receive.
pub fn simulate(
    kit: &Kit,
    profile: &SimProfile,
    credit: Money,
    action: &SimAction,
) -> Result<SimOutcome, String> {
    let catalog = Catalog::builtin();
    let tool = catalog.get(&action.tool).ok_or_else(|| format!("unknown tool {}", action.tool))?;
    let request = ActionRequest {
        tool,
        amount: action.amount,
        recipient: action.recipient.as_deref(),
        merchant: action.merchant.as_deref(),
        toolkit: None,
    };
    let budgets = [BudgetView::from_kit(kit, profile.posted, profile.pending)];
    let decision = policy::evaluate(&DecisionInput {
        subject: SubjectStatus::Active,
        kit,
        action: request,
        budgets: &budgets,
        company_credit: credit,
    });
    let pretty = |e: &Envelope| serde_json::to_string_pretty(e).unwrap_or_default();
    Ok(match (decision.verdict, decision.refusal) {
        (EngineVerdict::Deny, Some(r)) => SimOutcome {
            verdict: "deny",
            reason: Some(r.detail().to_string()),
            cost: decision.cost,
            envelope: pretty(&Envelope::deny(kit, &request, r, 1, Vec::new())),
        },
        (EngineVerdict::Freeze, Some(r)) => {
            let handle = ApprovalHandle {
                approval_id: "apr_… (issued when the agent calls)".into(),
                expires_at: "(when the approval window ends)".into(),
            };
            SimOutcome {
                verdict: "park",
                reason: Some(r.detail().to_string()),
                cost: decision.cost,
                envelope: pretty(&Envelope::park(kit, &request, r, handle)),
            }
        }
        _ => SimOutcome {
            verdict: "allow",
            reason: None,
            cost: decision.cost,
            envelope: serde_json::to_string_pretty(&AllowPreview {
                ok: true,
                verdict: "allow",
                action: &action.tool,
                hold: decision.cost,
                note: "executes at once; the hold settles to what the call really cost",
            })
            .unwrap_or_default(),
        },
    })
}

/// What one save returned, as the island shows it. (The server only renders `Idle`.)
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq)]
enum SaveState {
    Idle,
    Saving,
    Saved(u32),
    Failed(String),
}

/// The island's state, all of it computed in one place ([`dom::read`]) from the form: `None`
/// until the island has read the form after hydrating (and on the server, which renders the
/// placeholders the browser starts from).
#[derive(Clone, Copy)]
struct Editor {
    hydrated: RwSignal<bool>,
    saved: RwSignal<Option<Kit>>,
    draft: RwSignal<Option<Result<Kit, Vec<KitError>>>>,
    diff: RwSignal<Option<KitDiff>>,
    sim_draft: RwSignal<Option<Result<SimOutcome, String>>>,
    sim_saved: RwSignal<Option<Result<SimOutcome, String>>>,
    save_state: RwSignal<SaveState>,
}

const LABEL: &str = "flex flex-col gap-1 text-sm";
const SMALL_BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

/// The editor as the server renders it: the kit's form and the simulator's inputs, with the
/// saved version as the fields' defaults, inside the island that brings them to life. The
/// fields stay disabled until the island has hydrated, so nothing typed before then is lost;
/// without JavaScript the kit saves from its JSON.
#[component]
pub fn KitEditor(current: Kit, profiles: Vec<SimProfile>, credit: Money, can_edit: bool) -> impl IntoView {
    let text = KitText::of(&current);
    let json = current.to_json_pretty();
    let money_input = |label: &'static str,
                       hint: &'static str,
                       name: &'static str,
                       value: String,
                       testid: &'static str| {
        view! {
            <label class=LABEL>
                <span class="text-zinc-600 dark:text-zinc-300">{label}</span>
                <input class=INPUT inputmode="decimal" placeholder="no limit" name=name value=value data-testid=testid />
                <span class="text-xs text-zinc-500 dark:text-zinc-400">{hint}</span>
            </label>
        }
    };
    view! {
        <KitEditorIsland>
            <form method="post" action="/api/save_kit" class="space-y-5 lg:col-span-3 lg:row-span-2" data-kit-form="">
                <input type="hidden" name="name" value=current.name.clone() />
                <input type="hidden" name="expected_version" value=current.version.0.to_string() />
                <p class="rounded border border-zinc-200 p-2 text-sm text-zinc-600 dark:border-zinc-800 dark:text-zinc-300" data-testid="editor-loading">
                    "The form and the simulator start once the page's script has loaded. Without JavaScript, edit the kit as JSON below and save."
                </p>
                <fieldset class="space-y-2" disabled=true data-needs-script="">
                    <legend class="text-sm font-semibold">"Primitives"</legend>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400">"What the agent may use at all. brain is opt-in."</p>
                    <div class="flex flex-wrap gap-3">
                        {Primitive::ALL.into_iter().map(|p| view! {
                            <label class="flex items-center gap-1 text-sm">
                                <input type="checkbox" name=F_PRIMITIVE value=p.as_str() data-primitive=p.as_str() checked=text.primitives.contains(p) />
                                {p.as_str()}
                            </label>
                        }).collect_view()}
                    </div>
                </fieldset>

                <fieldset class="grid gap-3 sm:grid-cols-3" disabled=true data-needs-script="">
                    <legend class="mb-2 text-sm font-semibold">"Limits"</legend>
                    {money_input("Hard cap", "never exceeded, real spend plus credits", F_HARD_CAP, text.hard_cap, "hard-cap")}
                    {money_input("Soft cap", "crossing it parks for approval", F_SOFT_CAP, text.soft_cap, "soft-cap")}
                    {money_input("Approve at or above", "actions costing this much park", F_APPROVE_ABOVE, text.approve_above, "approve-above")}
                    <label class=format!("{LABEL} sm:col-span-2")>
                        <span class="text-zinc-600 dark:text-zinc-300">"Always ask for"</span>
                        <input class=INPUT name=F_ALWAYS value=text.always placeholder="e.g. domains.purchase, formation.*" />
                        <span class="text-xs text-zinc-500 dark:text-zinc-400">"actions or patterns that always park, comma-separated"</span>
                    </label>
                    <label class="flex items-center gap-2 text-sm">
                        <input type="checkbox" name=F_DESTRUCTIVE checked=text.destructive />
                        "Destructive tools park"
                    </label>
                </fieldset>

                <fieldset class="space-y-2" disabled=true data-needs-script="">
                    <legend class="text-sm font-semibold">"Can rules"</legend>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400">"Every rule that matches an action must be satisfied. Conditions are optional; leave a field empty for none."</p>
                    <div class="space-y-2" data-rows="rule">
                        {text.rules.into_iter().map(|r| view! { <RuleFields r /> }).collect_view()}
                    </div>
                    <template data-template="rule"><RuleFields r=RuleText { allow: true, ..Default::default() } /></template>
                    <button type="button" class=SMALL_BUTTON data-add="rule" data-testid="add-rule">"Add rule"</button>
                </fieldset>

                <fieldset class="space-y-2" disabled=true data-needs-script="">
                    <legend class="text-sm font-semibold">"Toolkits"</legend>
                    <label class="flex items-center gap-2 text-sm">
                        <input type="checkbox" name=F_ALLOW_ALL checked=text.allow_all />
                        "Every connected-app toolkit is permitted (filters below still apply)"
                    </label>
                    <div class="space-y-2" data-rows="filter">
                        {text.filters.into_iter().map(|f| view! { <FilterFields f /> }).collect_view()}
                    </div>
                    <template data-template="filter"><FilterFields f=FilterText::default() /></template>
                    <button type="button" class=SMALL_BUTTON data-add="filter">"Add toolkit filter"</button>
                </fieldset>

                <details class="text-sm">
                    <summary class="cursor-pointer text-zinc-600 dark:text-zinc-300">"The kit as JSON"</summary>
                    <p class="mt-1 text-xs text-zinc-500 dark:text-zinc-400">"Without JavaScript, edit the kit here and save. With it, this follows the form above."</p>
                    <textarea name="kit_json" rows="14" class=format!("{INPUT} mt-1 block w-full font-mono text-xs")>{json}</textarea>
                </details>

                {if can_edit {
                    view! {
                        <button type="submit" data-testid="save-kit"
                            class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white disabled:opacity-40 dark:bg-zinc-100 dark:text-zinc-900">
                            "Save as the next version"
                        </button>
                    }.into_any()
                } else {
                    view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Only an admin can save kits; the simulator still works."</p> }.into_any()
                }}
            </form>

            <form class="min-w-0 rounded-lg border border-zinc-200 p-4 lg:col-span-2 dark:border-zinc-800" data-sim-form="" data-credit=credit.to_decimal_string() data-testid="simulator">
                <fieldset class="min-w-0 space-y-3" disabled=true data-needs-script="">
                    <h3 class="text-sm font-semibold">"Simulator"</h3>
                    <p class="text-xs text-zinc-500 dark:text-zinc-400">"Decided in your browser by the same policy code the gateway runs. Nothing is sent."</p>
                    <label class=LABEL><span class="text-xs">"As"</span>
                        <select class=INPUT name="sim_profile" data-testid="sim-profile">
                            {if profiles.is_empty() {
                                view! { <option value="" data-name="a new agent" data-posted="0" data-pending="0">"a new agent (no spend yet)"</option> }.into_any()
                            } else {
                                profiles.into_iter().map(|p| {
                                    let label = format!("{} — {} posted, {} pending", p.name, p.posted, p.pending);
                                    view! {
                                        <option value=p.name.clone() data-name=p.name data-posted=p.posted.to_decimal_string() data-pending=p.pending.to_decimal_string()>
                                            {label}
                                        </option>
                                    }
                                }).collect_view().into_any()
                            }}
                        </select></label>
                    <div class="grid grid-cols-2 gap-2">
                        <label class=LABEL><span class="text-xs">"Action"</span>
                            <select class=INPUT name="sim_tool" data-testid="sim-tool">
                                {Catalog::builtin().iter().map(|t| t.name.clone()).filter(|n| n.contains('.')).map(|n| {
                                    let selected = n == "cards.charge";
                                    let label = n.clone();
                                    view! { <option value=n selected=selected>{label}</option> }
                                }).collect_view()}
                            </select></label>
                        <label class=LABEL><span class="text-xs">"Amount ($)"</span><input class=INPUT name="sim_amount" data-testid="sim-amount" value="48" /></label>
                        <label class=LABEL><span class="text-xs">"Merchant"</span><input class=INPUT name="sim_merchant" data-testid="sim-merchant" value="globex-parts" /></label>
                        <label class=LABEL><span class="text-xs">"Recipient"</span><input class=INPUT name="sim_recipient" /></label>
                    </div>
                </fieldset>
            </form>
        </KitEditorIsland>
    }
}

#[component]
fn RuleFields(r: RuleText) -> impl IntoView {
    view! {
        <div class="grid items-end gap-2 rounded border border-zinc-200 p-2 sm:grid-cols-6 dark:border-zinc-800" data-testid="rule" data-row="rule">
            <label class=format!("{LABEL} sm:col-span-2")><span class="text-xs">"Action"</span>
                <input class=INPUT name=F_RULE_ACTION value=r.action placeholder="cards.charge, cards.* or *" /></label>
            <label class=LABEL><span class="text-xs">"Effect"</span>
                <select class=INPUT name=F_RULE_EFFECT>
                    <option value="allow" selected=r.allow>"allow"</option>
                    <option value="deny" selected=!r.allow>"deny"</option>
                </select></label>
            <label class=LABEL><span class="text-xs">"Max amount"</span>
                <input class=INPUT name=F_RULE_MAX value=r.max_amount placeholder="none" /></label>
            <label class=LABEL><span class="text-xs">"Merchants"</span>
                <input class=INPUT name=F_RULE_MERCHANTS value=r.merchants placeholder="any" /></label>
            <label class=LABEL><span class="text-xs">"Recipients"</span>
                <input class=INPUT name=F_RULE_RECIPIENTS value=r.recipients placeholder="any" /></label>
            <button type="button" class=SMALL_BUTTON data-remove="">"Remove"</button>
        </div>
    }
}

#[component]
fn FilterFields(f: FilterText) -> impl IntoView {
    view! {
        <div class="grid items-end gap-2 sm:grid-cols-4" data-row="filter">
            <label class=LABEL><span class="text-xs">"Toolkit"</span><input class=INPUT name=F_FILTER_TOOLKIT value=f.toolkit placeholder="github" /></label>
            <label class=LABEL><span class="text-xs">"Only these tools"</span><input class=INPUT name=F_FILTER_ONLY value=f.only placeholder="all" /></label>
            <label class=LABEL><span class="text-xs">"Disable"</span><input class=INPUT name=F_FILTER_DISABLE value=f.disable placeholder="none" /></label>
            <button type="button" class=SMALL_BUTTON data-remove="">"Remove"</button>
        </div>
    }
}

/// The editor's island: reads the server-rendered form (its children) on every input, and
/// renders the problems, the diff, the save state and the simulator's verdicts beside it.
#[island]
fn KitEditorIsland(children: Children) -> impl IntoView {
    let s = Editor {
        hydrated: RwSignal::new(false),
        saved: RwSignal::new(None),
        draft: RwSignal::new(None),
        diff: RwSignal::new(None),
        sim_draft: RwSignal::new(None),
        sim_saved: RwSignal::new(None),
        save_state: RwSignal::new(SaveState::Idle),
    };
    let root = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get() {
            dom::start(&root, s);
        }
    });
    #[allow(unused_variables)]
    let on_input = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            dom::read(&root, s);
        }
    };
    #[allow(unused_variables)]
    let on_click = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            dom::click(&ev, &root, s);
        }
    };
    #[allow(unused_variables)]
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = root.get_untracked() {
            dom::submit(&ev, &root, s);
        }
    };
    view! {
        <div node_ref=root class="grid gap-6 lg:grid-cols-5" data-testid="kit-editor" data-hydrated=move || s.hydrated.get().to_string()
            on:input=on_input on:change=on_input on:click=on_click on:submit=on_submit>
            {children()}
            <aside class="space-y-4 lg:col-span-2">
                <div role="alert" data-testid="kit-errors">
                    {move || s.draft.get().and_then(Result::err).map(|errs| view! {
                        <ul class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">
                            {errs.into_iter().map(|e| view! { <li><code class="text-xs">{e.path}</code>": "{e.message}</li> }).collect_view()}
                        </ul>
                    })}
                </div>
                <section data-testid="kit-diff">
                    <h3 class="text-sm font-semibold">"What this edit changes"</h3>
                    {move || match s.diff.get() {
                        None => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Shown as you edit, once the page's script has loaded."</p> }.into_any(),
                        Some(d) if d.is_empty() => view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Nothing yet: the draft is the saved version."</p> }.into_any(),
                        Some(d) => view! { <DiffList diff=d /> }.into_any(),
                    }}
                </section>
                <p data-testid="save-state" class="text-sm">
                    {move || match s.save_state.get() {
                        SaveState::Idle => view! { <span></span> }.into_any(),
                        SaveState::Saving => view! { <span class="text-zinc-500 dark:text-zinc-400">"Saving…"</span> }.into_any(),
                        SaveState::Saved(v) => view! { <span class="text-emerald-700 dark:text-emerald-400">{format!("Saved as v{v}. Agents get it on their next call.")}</span> }.into_any(),
                        SaveState::Failed(e) => view! { <span class="text-red-700 dark:text-red-400" role="alert">{e}</span> }.into_any(),
                    }}
                </p>
                <section class="space-y-2 rounded-lg border border-zinc-200 p-4 dark:border-zinc-800">
                    <h3 class="text-sm font-semibold">"Simulated verdict"</h3>
                    <div class="grid grid-cols-2 gap-2 text-sm">
                        <div>
                            <p class="text-xs text-zinc-500 dark:text-zinc-400">"Draft"</p>
                            <SimVerdict outcome=s.sim_draft testid="sim-verdict" />
                        </div>
                        <div>
                            <p class="text-xs text-zinc-500 dark:text-zinc-400">{move || s.saved.with(|k| k.as_ref().map(|k| format!("Saved ({})", k.version)).unwrap_or_else(|| "Saved".into()))}</p>
                            <SimVerdict outcome=s.sim_saved testid="sim-verdict-saved" />
                        </div>
                    </div>
                    <pre class="max-h-80 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800" data-testid="sim-envelope">
                        {move || match s.sim_draft.get() { Some(Ok(o)) => o.envelope, Some(Err(e)) => e, None => String::new() }}
                    </pre>
                </section>
            </aside>
        </div>
    }
}

/// The browser side: reading the form, adding and removing rows, saving.
#[cfg(feature = "hydrate")]
mod dom {
    use super::*;
    use crate::components::browser::{all, first as find};
    use wasm_bindgen::JsCast;
    use web_sys::{
        Element, HtmlButtonElement, HtmlFormElement, HtmlInputElement, HtmlSelectElement,
        HtmlTemplateElement, HtmlTextAreaElement,
    };

    /// The simulator's inputs as read from its form.
    struct SimInput {
        profile: SimProfile,
        credit: Money,
        action: Result<SimAction, String>,
    }

    impl SimInput {
        fn run(&self, kit: &Kit) -> Result<SimOutcome, String> {
            simulate(kit, &self.profile, self.credit, self.action.as_ref().map_err(Clone::clone)?)
        }
    }

    /// Every named field of `form` as it would be submitted, in document order: as typed, or
    /// (`defaults`) as the server rendered it.
    fn fields(form: &HtmlFormElement, defaults: bool) -> Vec<(String, String)> {
        let elements = form.elements();
        let mut out = Vec::new();
        for i in 0..elements.length() {
            let Some(el) = elements.item(i) else { continue };
            if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
                let name = input.name();
                match input.type_().as_str() {
                    "checkbox" | "radio" => {
                        if if defaults { input.default_checked() } else { input.checked() } {
                            out.push((name, input.value()));
                        }
                    }
                    "submit" | "button" => (),
                    _ => out.push((name, if defaults { input.default_value() } else { input.value() })),
                }
            } else if let Some(select) = el.dyn_ref::<HtmlSelectElement>() {
                let value = if defaults {
                    let options = select.options();
                    (0..options.length())
                        .filter_map(|i| options.item(i)?.dyn_into::<web_sys::HtmlOptionElement>().ok())
                        .find(|o| o.default_selected())
                        .or_else(|| options.item(0)?.dyn_into().ok())
                        .map(|o| o.value())
                        .unwrap_or_default()
                } else {
                    select.value()
                };
                out.push((select.name(), value));
            }
        }
        out.retain(|(name, _)| !name.is_empty());
        out
    }

    fn pairs(fields: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
        fields.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
        fields.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
    }

    /// Arms the server-rendered form and reads the saved version from its defaults.
    pub fn start(root: &Element, s: Editor) {
        for set in all::<Element>(root, "fieldset[data-needs-script]") {
            let _ = set.remove_attribute("disabled");
        }
        if let Some(note) = find::<Element>(root, "[data-testid=editor-loading]") {
            note.remove();
        }
        if let Some(json) = find::<HtmlTextAreaElement>(root, "textarea[name=kit_json]") {
            json.set_read_only(true);
        }
        let Some(form) = find::<HtmlFormElement>(root, "form[data-kit-form]") else { return };
        let served = fields(&form, true);
        let version = KitVersion(field(&served, "expected_version").parse().unwrap_or(1));
        s.saved.set(KitText::from_fields(pairs(&served)).to_kit(field(&served, "name"), version).ok());
        read(root, s);
        s.hydrated.set(true);
    }

    /// Reads the draft and the simulator's inputs from the form as typed, and works out
    /// everything the island shows from them; keeps the save button and the JSON in step.
    pub fn read(root: &Element, s: Editor) {
        let Some(form) = find::<HtmlFormElement>(root, "form[data-kit-form]") else { return };
        let typed = fields(&form, false);
        let saved = s.saved.get_untracked();
        let version = saved.as_ref().map_or(KitVersion(1), |k| k.version);
        let draft = KitText::from_fields(pairs(&typed)).to_kit(field(&typed, "name"), version);
        let diff = match (&saved, &draft) {
            (Some(saved), Ok(draft)) => Some(KitDiff::between(saved, draft)),
            _ => None,
        };
        let unsaveable = diff.as_ref().is_none_or(KitDiff::is_empty);
        follow(root, unsaveable, draft.as_ref().ok().map(Kit::to_json_pretty));
        if let Some(sim) = sim_input(root) {
            s.sim_draft.set(Some(match &draft {
                Ok(k) => sim.run(k),
                Err(_) => Err("fix the draft's problems first".to_string()),
            }));
            s.sim_saved.set(saved.as_ref().map(|k| sim.run(k)));
        }
        s.diff.set(diff);
        s.draft.set(Some(draft));
    }

    /// The simulator's inputs as typed, with the chosen profile's spend from its option.
    fn sim_input(root: &Element) -> Option<SimInput> {
        let sim = find::<HtmlFormElement>(root, "form[data-sim-form]")?;
        let typed = fields(&sim, false);
        let money = |s: Option<String>| s.and_then(|s| Money::parse(&s).ok()).unwrap_or(Money::ZERO);
        let chosen = find::<HtmlSelectElement>(root, "select[name=sim_profile]")
            .and_then(|select| select.selected_options().item(0));
        let attr = |name: &str| chosen.as_ref().and_then(|o| o.get_attribute(name));
        let amount = field(&typed, "sim_amount").trim();
        let opt = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
        Some(SimInput {
            profile: SimProfile {
                name: attr("data-name").unwrap_or_else(|| "a new agent".into()),
                posted: money(attr("data-posted")),
                pending: money(attr("data-pending")),
            },
            credit: money(sim.get_attribute("data-credit")),
            action: if amount.is_empty() { Ok(Money::ZERO) } else { Money::parse(amount) }
                .map_err(|e| format!("the amount is not an amount: {e}"))
                .map(|amount| SimAction {
                    tool: field(&typed, "sim_tool").to_string(),
                    amount,
                    merchant: opt(field(&typed, "sim_merchant")),
                    recipient: opt(field(&typed, "sim_recipient")),
                }),
        })
    }

    /// Keeps the save button and the JSON view in step with the draft.
    fn follow(root: &Element, unsaveable: bool, json: Option<String>) {
        if let Some(button) = find::<HtmlButtonElement>(root, "[data-testid=save-kit]") {
            button.set_disabled(unsaveable);
        }
        if let (Some(area), Some(json)) = (find::<HtmlTextAreaElement>(root, "textarea[name=kit_json]"), json)
        {
            area.set_value(&json);
        }
    }

    /// "Add rule" and "Add toolkit filter" copy their row's template; "Remove" drops its row.
    pub fn click(ev: &web_sys::MouseEvent, root: &Element, s: Editor) {
        let Some(target) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        if let Some(add) = target.closest("[data-add]").ok().flatten() {
            let kind = add.get_attribute("data-add").unwrap_or_default();
            let template = find::<HtmlTemplateElement>(root, &format!("template[data-template={kind}]"));
            let rows = find::<Element>(root, &format!("[data-rows={kind}]"));
            if let (Some(template), Some(rows)) = (template, rows)
                && let Ok(row) = template.content().clone_node_with_deep(true)
            {
                let _ = rows.append_child(&row);
            }
        } else if let Some(row) = target
            .closest("[data-remove]")
            .ok()
            .flatten()
            .and_then(|b| b.closest("[data-row]").ok().flatten())
        {
            row.remove();
        } else {
            return;
        }
        read(root, s);
    }

    /// Saves the draft in place, keeping it whatever the answer: the island posts the same
    /// form a browser without JavaScript posts (with the JSON following the draft) and reads
    /// the outcome from the page it lands on, `?saved=vN` or `?error=…`. The simulator's form
    /// never submits.
    pub fn submit(ev: &web_sys::SubmitEvent, root: &Element, s: Editor) {
        ev.prevent_default();
        let is_kit = ev
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .is_some_and(|f| f.has_attribute("data-kit-form"));
        let Some(Ok(kit)) = s.draft.get_untracked() else { return };
        if !is_kit {
            return;
        }
        s.save_state.set(SaveState::Saving);
        follow(root, true, None);
        let root = root.clone();
        leptos::task::spawn_local(async move {
            let outcome = post_save(&kit).await;
            if let SaveState::Saved(v) = outcome {
                s.saved.set(Some(Kit { version: KitVersion(v), ..kit }));
            }
            s.save_state.set(outcome);
            read(&root, s);
        });
    }

    async fn post_save(kit: &Kit) -> SaveState {
        let Ok(form) = web_sys::UrlSearchParams::new() else {
            return SaveState::Failed("the browser cannot build the form".into());
        };
        form.append("name", &kit.name);
        form.append("expected_version", &kit.version.0.to_string());
        form.append("kit_json", &kit.to_json_pretty());
        let response = match crate::components::browser::fetch("POST", "/api/save_kit", Some(&form)).await {
            Ok(r) => r,
            Err(e) => {
                return SaveState::Failed(format!(
                    "the gateway did not answer ({e}); the draft is kept, try again"
                ));
            }
        };
        let landed = response.url();
        let query = landed.split_once('?').map(|(_, q)| q.to_string());
        let answer = query.and_then(|q| web_sys::UrlSearchParams::new_with_str(&q).ok());
        let get = |key: &str| answer.as_ref().and_then(|a| a.get(key));
        if let Some(v) = get("saved").and_then(|v| v.trim_start_matches('v').parse().ok()) {
            SaveState::Saved(v)
        } else if let Some(why) = get("error") {
            SaveState::Failed(why)
        } else {
            SaveState::Failed(format!(
                "the save was not confirmed (HTTP {}); reload to see the kit's current version",
                response.status()
            ))
        }
    }
}

#[component]
fn SimVerdict(outcome: RwSignal<Option<Result<SimOutcome, String>>>, testid: &'static str) -> impl IntoView {
    move || match outcome.get() {
        Some(Ok(o)) => {
            let colour = match o.verdict {
                "allow" => "text-emerald-700 dark:text-emerald-400",
                "park" => "text-amber-700 dark:text-amber-400",
                _ => "text-red-700 dark:text-red-400",
            };
            view! {
                <p>
                    <span class=format!("font-semibold {colour}") data-testid=testid>{o.verdict}</span>
                    {o.reason.map(|r| view! { <span class="ml-1 font-mono text-xs">{r}</span> })}
                </p>
                <p class="text-xs text-zinc-500 dark:text-zinc-400">{format!("cost {}", o.cost)}</p>
            }
            .into_any()
        }
        Some(Err(e)) => {
            view! { <p class="text-xs text-zinc-500 dark:text-zinc-400" data-testid=testid>{e}</p> }
                .into_any()
        }
        None => view! { <p class="text-xs text-zinc-500 dark:text-zinc-400" data-testid=testid>"—"</p> }
            .into_any(),
    }
}

/// A `KitDiff` in words: what widens, then what narrows.
#[component]
pub fn DiffList(diff: KitDiff) -> impl IntoView {
    view! {
        <ul class="text-sm">
            {diff.changes.into_iter().map(|c| {
                let (mark, class) = match c.direction {
                    Direction::Widens => ("▲ widens", "text-amber-700 dark:text-amber-400"),
                    Direction::Narrows => ("▼ narrows", "text-emerald-700 dark:text-emerald-400"),
                    Direction::Neutral => ("•", "text-zinc-500 dark:text-zinc-400"),
                };
                view! { <li><span class=format!("mr-1 {class}")>{mark}</span>{c.text}</li> }
            }).collect_view()}
        </ul>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kit() -> Kit {
        Kit::from_json(
            r#"{"name":"Buyers","primitives":["cards","email"],"can":[{"action":"cards.charge","effect":"allow","max_amount":"100","merchants":["globex-parts"]}],
                "limits":{"budget":{"hard_cap":"500","soft_cap":"400"},"approve":{"above":"50"}}}"#,
        )
        .unwrap()
    }

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
        assert!(k.toolkits.allow_all);
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

    #[test]
    fn lowering_the_hard_cap_changes_the_simulated_verdict() {
        let k = kit();
        let p = SimProfile { name: "bot".into(), posted: Money::parse("460").unwrap(), pending: Money::ZERO };
        let charge = SimAction {
            tool: "cards.charge".into(),
            amount: Money::parse("30").unwrap(),
            merchant: Some("globex-parts".into()),
            recipient: None,
        };
        let credit = Money::parse("1000").unwrap();
        // 460 + 30 crosses the soft cap of 400: it parks.
        assert_eq!(simulate(&k, &p, credit, &charge).unwrap().verdict, "park");
        let mut t = KitText::of(&k);
        t.hard_cap = "480".into();
        t.soft_cap = String::new();
        let lower = t.to_kit(&k.name, k.version).unwrap();
        let out = simulate(&lower, &p, credit, &charge).unwrap();
        assert_eq!((out.verdict, out.reason.as_deref()), ("deny", Some("hard_cap_exceeded")));
        assert!(out.envelope.contains("\"reason\": \"budget_exceeded\""), "{}", out.envelope);
        assert!(KitDiff::between(&k, &lower).narrows().count() > 0);
    }
}
