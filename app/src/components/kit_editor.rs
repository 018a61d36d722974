//! The AccountKit editor island: forms for primitives, toolkits, can rules and limits that
//! validate as you type, the `KitDiff` of the draft against the saved version in words, a
//! simulator, and save with an optimistic-concurrency check.
//!
//! Everything the island decides, it decides with `policy` compiled to wasm: the draft is a
//! [`Kit`] checked by [`Kit::validate`], the diff is [`KitDiff::between`], and the simulator
//! runs [`policy::evaluate`] and builds the [`Envelope`] the gateway would return, with no
//! round trip. Only saving calls the server, which validates again and refuses a stale
//! version with `kit_version_conflict`. Without JavaScript the same form posts the kit as
//! JSON from its text area.

use leptos::prelude::*;
use policy::kit::{ApproveLimits, BudgetLimits, Limits, ToolFilter, Toolkits};
use policy::{
    ActionRequest, ApprovalHandle, BudgetView, CanRule, Catalog, DecisionInput, Direction, EngineVerdict,
    Envelope, Kit, KitDiff, KitError, Money, Primitive, PrimitiveSet, RuleEffect, SubjectStatus,
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

    /// The kit these fields describe, named and versioned like `base`, or every problem with
    /// it: amounts that do not parse, then whatever [`Kit::validate`] finds.
    pub fn to_kit(&self, base: &Kit) -> Result<Kit, Vec<KitError>> {
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
            name: base.name.clone(),
            version: base.version,
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
            envelope: serde_json::to_string_pretty(&serde_json::json!({
                "ok": true,
                "verdict": "allow",
                "action": action.tool,
                "hold": decision.cost,
                "note": "executes at once; the hold settles to what the call really cost",
            }))
            .unwrap_or_default(),
        },
    })
}

/// What one save returned, as the island shows it.
#[derive(Clone, Debug, PartialEq)]
enum SaveState {
    Idle,
    Saving,
    Saved(u32),
    Failed(String),
}

#[derive(Clone, Copy)]
struct RuleRow {
    id: u32,
    action: RwSignal<String>,
    allow: RwSignal<bool>,
    max_amount: RwSignal<String>,
    merchants: RwSignal<String>,
    recipients: RwSignal<String>,
}

impl RuleRow {
    fn new(id: u32, r: RuleText) -> RuleRow {
        RuleRow {
            id,
            action: RwSignal::new(r.action),
            allow: RwSignal::new(r.allow),
            max_amount: RwSignal::new(r.max_amount),
            merchants: RwSignal::new(r.merchants),
            recipients: RwSignal::new(r.recipients),
        }
    }
    fn text(&self) -> RuleText {
        RuleText {
            action: self.action.get(),
            allow: self.allow.get(),
            max_amount: self.max_amount.get(),
            merchants: self.merchants.get(),
            recipients: self.recipients.get(),
        }
    }
}

#[derive(Clone, Copy)]
struct FilterRow {
    id: u32,
    toolkit: RwSignal<String>,
    only: RwSignal<String>,
    disable: RwSignal<String>,
}

impl FilterRow {
    fn new(id: u32, f: FilterText) -> FilterRow {
        FilterRow {
            id,
            toolkit: RwSignal::new(f.toolkit),
            only: RwSignal::new(f.only),
            disable: RwSignal::new(f.disable),
        }
    }
    fn text(&self) -> FilterText {
        FilterText { toolkit: self.toolkit.get(), only: self.only.get(), disable: self.disable.get() }
    }
}

const LABEL: &str = "flex flex-col gap-1 text-sm";
const SMALL_BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

/// Lazy: its code (with `policy`) is a separate wasm chunk, fetched only on pages that show it.
#[island(lazy)]
pub fn KitEditor(current: Kit, profiles: Vec<SimProfile>, credit: Money, can_edit: bool) -> impl IntoView {
    let initial_json = current.to_json_pretty();
    let saved = RwSignal::new(current.clone());
    let init = KitText::of(&current);
    let next_id = StoredValue::new(0u32);
    let fresh_id = move || {
        next_id.update_value(|n| *n += 1);
        next_id.get_value()
    };
    let prims = RwSignal::new(init.primitives);
    let hard = RwSignal::new(init.hard_cap);
    let soft = RwSignal::new(init.soft_cap);
    let above = RwSignal::new(init.approve_above);
    let always = RwSignal::new(init.always);
    let destructive = RwSignal::new(init.destructive);
    let allow_all = RwSignal::new(init.allow_all);
    let rules =
        RwSignal::new(init.rules.into_iter().map(|r| RuleRow::new(fresh_id(), r)).collect::<Vec<_>>());
    let filters =
        RwSignal::new(init.filters.into_iter().map(|f| FilterRow::new(fresh_id(), f)).collect::<Vec<_>>());

    let draft = Memo::new(move |_| {
        KitText {
            primitives: prims.get(),
            hard_cap: hard.get(),
            soft_cap: soft.get(),
            approve_above: above.get(),
            always: always.get(),
            destructive: destructive.get(),
            allow_all: allow_all.get(),
            rules: rules.get().iter().map(RuleRow::text).collect(),
            filters: filters.get().iter().map(FilterRow::text).collect(),
        }
        .to_kit(&saved.get())
    });
    let diff = Memo::new(move |_| draft.get().ok().map(|k| KitDiff::between(&saved.get(), &k)));
    let draft_json = move || draft.get().map(|k| k.to_json_pretty()).unwrap_or_default();

    // The simulator's inputs.
    let profiles = StoredValue::new(profiles);
    let sim_profile = RwSignal::new(0usize);
    let sim_tool = RwSignal::new("cards.charge".to_string());
    let sim_amount = RwSignal::new("48".to_string());
    let sim_merchant = RwSignal::new("globex-parts".to_string());
    let sim_recipient = RwSignal::new(String::new());
    let sim_action = Memo::new(move |_| {
        let amount = if sim_amount.get().trim().is_empty() {
            Money::ZERO
        } else {
            Money::parse(&sim_amount.get()).map_err(|e| format!("the amount is not an amount: {e}"))?
        };
        let opt = |s: String| (!s.trim().is_empty()).then(|| s.trim().to_string());
        Ok::<_, String>(SimAction {
            tool: sim_tool.get(),
            amount,
            merchant: opt(sim_merchant.get()),
            recipient: opt(sim_recipient.get()),
        })
    });
    let run = move |kit: &Kit| {
        let action = sim_action.get()?;
        let profile = profiles.with_value(|p| p.get(sim_profile.get()).cloned()).unwrap_or(SimProfile {
            name: "a new agent".into(),
            posted: Money::ZERO,
            pending: Money::ZERO,
        });
        simulate(kit, &profile, credit, &action)
    };
    let sim_draft = Memo::new(move |_| match draft.get() {
        Ok(k) => run(&k),
        Err(_) => Err("fix the draft's problems first".to_string()),
    });
    let sim_saved = Memo::new(move |_| run(&saved.get()));

    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let save_state = RwSignal::new(SaveState::Idle);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Ok(kit) = draft.get_untracked() else { return };
        let expected = saved.with_untracked(|k| k.version.0);
        save_state.set(SaveState::Saving);
        leptos::task::spawn_local(async move {
            use crate::api::kits::{SaveOutcome, save_kit_draft};
            match save_kit_draft(kit.name.clone(), expected, kit.to_json()).await {
                Ok(SaveOutcome::Saved(v)) => {
                    saved.set(Kit { version: policy::KitVersion(v), ..kit });
                    save_state.set(SaveState::Saved(v));
                }
                Ok(SaveOutcome::Refused(why)) => save_state.set(SaveState::Failed(why)),
                Err(e) => save_state.set(SaveState::Failed(crate::components::common::error_text(&e))),
            }
        });
    };

    let money_input = move |label: &'static str,
                            hint: &'static str,
                            sig: RwSignal<String>,
                            testid: &'static str| {
        view! {
            <label class=LABEL>
                <span class="text-zinc-600 dark:text-zinc-300">{label}</span>
                <input class=INPUT inputmode="decimal" placeholder="no limit" bind:value=sig data-testid=testid />
                <span class="text-xs text-zinc-500">{hint}</span>
            </label>
        }
    };

    view! {
        <div class="grid gap-6 lg:grid-cols-5" data-testid="kit-editor" data-hydrated=move || hydrated.get().to_string()>
            <form method="post" action="/api/save_kit" class="space-y-5 lg:col-span-3" on:submit=on_submit>
                <input type="hidden" name="name" value=current.name.clone() />
                <input type="hidden" name="expected_version" prop:value=move || saved.with(|k| k.version.0.to_string()) value=current.version.0.to_string() />

                {move || (!hydrated.get()).then(|| view! {
                    <p class="rounded border border-zinc-200 p-2 text-sm text-zinc-600 dark:border-zinc-800 dark:text-zinc-300" data-testid="editor-loading">
                        "The form and the simulator start once the page's script has loaded. Without JavaScript, edit the kit as JSON below and save."
                    </p>
                })}
                <fieldset class="space-y-2" disabled=move || !hydrated.get()>
                    <legend class="text-sm font-semibold">"Primitives"</legend>
                    <p class="text-xs text-zinc-500">"What the agent may use at all. brain is opt-in."</p>
                    <div class="flex flex-wrap gap-3">
                        {Primitive::ALL.into_iter().map(|p| view! {
                            <label class="flex items-center gap-1 text-sm">
                                <input type="checkbox" data-primitive=p.as_str()
                                    checked=current.primitives.contains(p)
                                    prop:checked=move || prims.get().contains(p)
                                    on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        prims.update(|s| if on { s.insert(p) } else { s.remove(p) });
                                    } />
                                {p.as_str()}
                            </label>
                        }).collect_view()}
                    </div>
                </fieldset>

                <fieldset class="grid gap-3 sm:grid-cols-3" disabled=move || !hydrated.get()>
                    <legend class="mb-2 text-sm font-semibold">"Limits"</legend>
                    {money_input("Hard cap", "never exceeded, real spend plus credits", hard, "hard-cap")}
                    {money_input("Soft cap", "crossing it parks for approval", soft, "soft-cap")}
                    {money_input("Approve at or above", "actions costing this much park", above, "approve-above")}
                    <label class=format!("{LABEL} sm:col-span-2")>
                        <span class="text-zinc-600 dark:text-zinc-300">"Always ask for"</span>
                        <input class=INPUT placeholder="e.g. domains.purchase, formation.*" bind:value=always />
                        <span class="text-xs text-zinc-500">"actions or patterns that always park, comma-separated"</span>
                    </label>
                    <label class="flex items-center gap-2 text-sm">
                        <input type="checkbox" bind:checked=destructive />
                        "Destructive tools park"
                    </label>
                </fieldset>

                <fieldset class="space-y-2" disabled=move || !hydrated.get()>
                    <legend class="text-sm font-semibold">"Can rules"</legend>
                    <p class="text-xs text-zinc-500">"Every rule that matches an action must be satisfied. Conditions are optional; leave a field empty for none."</p>
                    <For each=move || rules.get() key=|r| r.id let:r>
                        <div class="grid items-end gap-2 rounded border border-zinc-200 p-2 sm:grid-cols-6 dark:border-zinc-800" data-testid="rule">
                            <label class=format!("{LABEL} sm:col-span-2")><span class="text-xs">"Action"</span>
                                <input class=INPUT bind:value=r.action placeholder="cards.charge, cards.* or *" /></label>
                            <label class=LABEL><span class="text-xs">"Effect"</span>
                                <select class=INPUT prop:value=move || if r.allow.get() { "allow" } else { "deny" }
                                    on:change=move |ev| r.allow.set(event_target_value(&ev) == "allow")>
                                    <option value="allow" selected=r.allow.get_untracked()>"allow"</option>
                                    <option value="deny" selected=!r.allow.get_untracked()>"deny"</option>
                                </select></label>
                            <label class=LABEL><span class="text-xs">"Max amount"</span>
                                <input class=INPUT bind:value=r.max_amount placeholder="none" /></label>
                            <label class=LABEL><span class="text-xs">"Merchants"</span>
                                <input class=INPUT bind:value=r.merchants placeholder="any" /></label>
                            <label class=LABEL><span class="text-xs">"Recipients"</span>
                                <input class=INPUT bind:value=r.recipients placeholder="any" /></label>
                            <button type="button" class=SMALL_BUTTON on:click=move |_| rules.update(|v| v.retain(|x| x.id != r.id))>"Remove"</button>
                        </div>
                    </For>
                    <button type="button" class=SMALL_BUTTON data-testid="add-rule"
                        on:click=move |_| rules.update(|v| v.push(RuleRow::new(fresh_id(), RuleText { allow: true, ..Default::default() })))>
                        "Add rule"
                    </button>
                </fieldset>

                <fieldset class="space-y-2" disabled=move || !hydrated.get()>
                    <legend class="text-sm font-semibold">"Toolkits"</legend>
                    <label class="flex items-center gap-2 text-sm">
                        <input type="checkbox" bind:checked=allow_all />
                        "Every connected-app toolkit is permitted (filters below still apply)"
                    </label>
                    <For each=move || filters.get() key=|f| f.id let:f>
                        <div class="grid items-end gap-2 sm:grid-cols-4">
                            <label class=LABEL><span class="text-xs">"Toolkit"</span><input class=INPUT bind:value=f.toolkit placeholder="github" /></label>
                            <label class=LABEL><span class="text-xs">"Only these tools"</span><input class=INPUT bind:value=f.only placeholder="all" /></label>
                            <label class=LABEL><span class="text-xs">"Disable"</span><input class=INPUT bind:value=f.disable placeholder="none" /></label>
                            <button type="button" class=SMALL_BUTTON on:click=move |_| filters.update(|v| v.retain(|x| x.id != f.id))>"Remove"</button>
                        </div>
                    </For>
                    <button type="button" class=SMALL_BUTTON on:click=move |_| filters.update(|v| v.push(FilterRow::new(fresh_id(), FilterText::default())))>
                        "Add toolkit filter"
                    </button>
                </fieldset>

                <div role="alert" data-testid="kit-errors">
                    {move || draft.get().err().map(|errs| view! {
                        <ul class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">
                            {errs.into_iter().map(|e| view! { <li><code class="text-xs">{e.path}</code>": "{e.message}</li> }).collect_view()}
                        </ul>
                    })}
                </div>

                <section data-testid="kit-diff">
                    <h3 class="text-sm font-semibold">"What this edit changes"</h3>
                    {move || match diff.get() {
                        None => view! { <p class="text-sm text-zinc-500">"—"</p> }.into_any(),
                        Some(d) if d.is_empty() => view! { <p class="text-sm text-zinc-500">"Nothing yet: the draft is the saved version."</p> }.into_any(),
                        Some(d) => view! { <DiffList diff=d /> }.into_any(),
                    }}
                </section>

                <details class="text-sm">
                    <summary class="cursor-pointer text-zinc-600 dark:text-zinc-300">"The kit as JSON"</summary>
                    <p class="mt-1 text-xs text-zinc-500">
                        {move || if hydrated.get() { "Follows the form above." } else { "Without JavaScript, edit the kit here and save." }}
                    </p>
                    <textarea name="kit_json" rows="14" class=format!("{INPUT} mt-1 block w-full font-mono text-xs")
                        readonly=move || hydrated.get() prop:value=draft_json>{initial_json}</textarea>
                </details>

                <div class="flex flex-wrap items-center gap-3">
                    {if can_edit {
                        view! {
                            <button type="submit" data-testid="save-kit"
                                disabled=move || hydrated.get() && (draft.with(|d| d.is_err()) || diff.with(|d| d.as_ref().is_some_and(KitDiff::is_empty)))
                                class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white disabled:opacity-40 dark:bg-zinc-100 dark:text-zinc-900">
                                {move || format!("Save as v{}", saved.with(|k| k.version.0 + 1))}
                            </button>
                        }.into_any()
                    } else {
                        view! { <p class="text-sm text-zinc-500">"Only an admin can save kits; the simulator still works."</p> }.into_any()
                    }}
                    <span data-testid="save-state" class="text-sm">
                        {move || match save_state.get() {
                            SaveState::Idle => view! { <span></span> }.into_any(),
                            SaveState::Saving => view! { <span class="text-zinc-500">"Saving…"</span> }.into_any(),
                            SaveState::Saved(v) => view! { <span class="text-emerald-700 dark:text-emerald-400">{format!("Saved as v{v}. Agents get it on their next call.")}</span> }.into_any(),
                            SaveState::Failed(e) => view! { <span class="text-red-700 dark:text-red-400" role="alert">{e}</span> }.into_any(),
                        }}
                    </span>
                </div>
            </form>

            <fieldset class="space-y-3 rounded-lg border border-zinc-200 p-4 lg:col-span-2 dark:border-zinc-800" data-testid="simulator" disabled=move || !hydrated.get()>
                <h3 class="text-sm font-semibold">"Simulator"</h3>
                <p class="text-xs text-zinc-500">"Decided in your browser by the same policy code the gateway runs. Nothing is sent."</p>
                <label class=LABEL><span class="text-xs">"As"</span>
                    <select class=INPUT data-testid="sim-profile" on:change=move |ev| sim_profile.set(event_target_value(&ev).parse().unwrap_or(0))>
                        {profiles.with_value(|ps| if ps.is_empty() {
                            view! { <option value="0">"a new agent (no spend yet)"</option> }.into_any()
                        } else {
                            ps.iter().enumerate().map(|(i, p)| view! {
                                <option value=i.to_string()>{format!("{} — {} posted, {} pending", p.name, p.posted, p.pending)}</option>
                            }).collect_view().into_any()
                        })}
                    </select></label>
                <div class="grid grid-cols-2 gap-2">
                    <label class=LABEL><span class="text-xs">"Action"</span>
                        <select class=INPUT data-testid="sim-tool" prop:value=sim_tool on:change=move |ev| sim_tool.set(event_target_value(&ev))>
                            {Catalog::builtin().iter().map(|t| t.name.clone()).filter(|n| n.contains('.')).map(|n| {
                                let selected = n == "cards.charge";
                                let label = n.clone();
                                view! { <option value=n selected=selected>{label}</option> }
                            }).collect_view()}
                        </select></label>
                    <label class=LABEL><span class="text-xs">"Amount ($)"</span><input class=INPUT data-testid="sim-amount" bind:value=sim_amount /></label>
                    <label class=LABEL><span class="text-xs">"Merchant"</span><input class=INPUT data-testid="sim-merchant" bind:value=sim_merchant /></label>
                    <label class=LABEL><span class="text-xs">"Recipient"</span><input class=INPUT bind:value=sim_recipient /></label>
                </div>
                <div class="grid grid-cols-2 gap-2 text-sm">
                    <div>
                        <p class="text-xs text-zinc-500">"Draft"</p>
                        <SimVerdict outcome=sim_draft testid="sim-verdict" />
                    </div>
                    <div>
                        <p class="text-xs text-zinc-500">{move || format!("Saved ({})", saved.with(|k| k.version))}</p>
                        <SimVerdict outcome=sim_saved testid="sim-verdict-saved" />
                    </div>
                </div>
                <pre class="max-h-80 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-800" data-testid="sim-envelope">
                    {move || match sim_draft.get() { Ok(o) => o.envelope, Err(e) => e }}
                </pre>
            </fieldset>
        </div>
    }
}

#[component]
fn SimVerdict(outcome: Memo<Result<SimOutcome, String>>, testid: &'static str) -> impl IntoView {
    move || match outcome.get() {
        Ok(o) => {
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
                <p class="text-xs text-zinc-500">{format!("cost {}", o.cost)}</p>
            }
            .into_any()
        }
        Err(e) => view! { <p class="text-xs text-zinc-500" data-testid=testid>{e}</p> }.into_any(),
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
                    Direction::Neutral => ("•", "text-zinc-500"),
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
        assert_eq!(KitText::of(&k).to_kit(&k), Ok(k));
    }

    #[test]
    fn bad_amounts_and_invalid_kits_name_their_field() {
        let k = kit();
        let mut t = KitText::of(&k);
        t.hard_cap = "lots".into();
        t.soft_cap = "600".into();
        let errs = t.to_kit(&k).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].path, "limits.budget.hard_cap");
        t.hard_cap = "500".into();
        let errs = t.to_kit(&k).unwrap_err();
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
        let lower = t.to_kit(&k).unwrap();
        let out = simulate(&lower, &p, credit, &charge).unwrap();
        assert_eq!((out.verdict, out.reason.as_deref()), ("deny", Some("hard_cap_exceeded")));
        assert!(out.envelope.contains("\"reason\": \"budget_exceeded\""), "{}", out.envelope);
        assert!(KitDiff::between(&k, &lower).narrows().count() > 0);
    }
}
