//! The editor's form and the simulator's inputs as the server renders them, with the saved
//! version as the fields' defaults. None of this markup becomes wasm: it reaches the island
//! as children.

use leptos::prelude::*;
use policy::{Catalog, Kit, Money, Primitive};

use super::fields::*;
use super::island::KitEditorIsland;
use super::preview::{Preview, PreviewPanel};
use super::simulate::SimProfile;
use crate::components::common::INPUT;

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
                    <label class=format!("{LABEL} sm:col-span-2")>
                        <span class="text-zinc-600 dark:text-zinc-300">"Caps per day, week or month"</span>
                        <textarea class=INPUT name=F_PERIODS rows="3" data-testid="period-limits" placeholder="month hard 1000 soft 900\nweek from sunday hard 300\nday hard 50">{text.periods}</textarea>
                        <span class="text-xs text-zinc-500 dark:text-zinc-400">"one per line, in the tenant's time zone; each must hold beside the caps above. A period starts from zero at its first midnight."</span>
                    </label>
                    <label class=LABEL>
                        <span class="text-zinc-600 dark:text-zinc-300">"Rate limits"</span>
                        <textarea class=INPUT name=F_RATES rows="3" data-testid="rate-limits" placeholder="600 per minute\n10 per second on cards.*">{text.rates}</textarea>
                        <span class="text-xs text-zinc-500 dark:text-zinc-400">"calls per second, minute or hour, per agent"</span>
                    </label>
                    <label class=format!("{LABEL} sm:col-span-3")>
                        <span class="text-zinc-600 dark:text-zinc-300">"Who approves"</span>
                        <textarea class=INPUT name=F_APPROVAL_RULES rows="3" data-testid="approval-rules" placeholder="above 30 approvers 1 window 10m\nabove 500 approvers 2 role finance window 4h escalate 1h group treasury">{text.approval_rules}</textarea>
                        <span class="text-xs text-zinc-500 dark:text-zinc-400">"one rule per line: conditions (above, action, destructive, soft_cap), then approvers, a role or group one of them must be in, the window (15m unless set) and when to escalate. A rule with above or action also parks the calls it matches; the rule needing the most approvers governs."</span>
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
                        "Every connected-app toolkit is permitted, apps registered later included (filters below still apply). Unchecked, an app is closed to agents until a row below names its toolkit."
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

                <ReplaySection name=current.name.clone() />

                <SaveControls can_edit />
            </form>

            <aside class="space-y-4 lg:col-span-2">
                <div role="alert" data-testid="kit-errors"></div>
                <p data-testid="save-state" class="text-sm" role="status"></p>
                <div class="space-y-4" data-kit-preview="" aria-live="polite">
                    <PreviewPanel preview=Preview::waiting() />
                </div>
            </aside>
            <SimulatorForm profiles credit />
        </KitEditorIsland>
    }
}

/// The simulator's inputs: who acts, what, for how much, where and when. The island posts
/// them with the draft to `/api/kit_preview`, which decides on the server.
#[component]
fn SimulatorForm(profiles: Vec<SimProfile>, credit: Money) -> impl IntoView {
    view! {
        <form class="min-w-0 rounded-lg border border-zinc-200 p-4 lg:col-span-2 dark:border-zinc-800" data-sim-form="" data-credit=credit.to_decimal_string() data-testid="simulator">
            <fieldset class="min-w-0 space-y-3" disabled=true data-needs-script="">
                <h3 class="text-sm font-semibold">"Simulator"</h3>
                <p class="text-xs text-zinc-500 dark:text-zinc-400">"Decided on the server as you type, by the same policy code the gateway runs, with the tenant's time zone and each day's spend for period and rate limits; nothing is saved."</p>
                <label class=LABEL><span class="text-xs">"As"</span>
                    <select class=INPUT name="sim_profile" data-testid="sim-profile">
                        {if profiles.is_empty() {
                            view! { <option value="" data-id="" data-name="a new agent" data-posted="0" data-pending="0">"a new agent (no spend yet)"</option> }.into_any()
                        } else {
                            profiles.into_iter().map(|p| {
                                let label = format!("{} — {} posted, {} pending", p.name, p.posted, p.pending);
                                view! {
                                    <option value=p.name.clone() data-id=p.id data-name=p.name data-posted=p.posted.to_decimal_string() data-pending=p.pending.to_decimal_string()>
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
                    <label class=format!("{LABEL} col-span-2")><span class="text-xs">"At (the tenant's time; empty for now)"</span>
                        <input class=INPUT type="datetime-local" name="sim_at" data-testid="sim-at" /></label>
                </div>
            </fieldset>
        </form>
    }
}

/// The draft replayed against the last week's calls, here or on the replay page.
#[component]
fn ReplaySection(name: String) -> impl IntoView {
    view! {
        <section class="space-y-2 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800" data-testid="kit-replay">
            <h3 class="text-sm font-semibold">"Against the last 7 days"</h3>
            <p class="text-xs text-zinc-500 dark:text-zinc-400">"The draft decided again over every call this kit's agents made in the last week, with the budget as it would have run: a lower cap refuses the calls after it would have been reached. Nothing is reserved or changed."</p>
            <div class="flex flex-wrap gap-2">
                <button type="button" class=SMALL_BUTTON data-replay-run="" data-testid="replay-run">"Replay the draft"</button>
                <button type="submit" class=SMALL_BUTTON formaction=format!("/kits/{}/replay", name) formmethod="get" formtarget="_blank" data-testid="replay-page">"Open the replay page ↗"</button>
            </div>
            <div data-replay-out="" data-testid="replay-out" aria-live="polite"></div>
        </section>
    }
}

/// Saving (and running in shadow) for an admin; a line saying why not for everyone else.
#[component]
fn SaveControls(can_edit: bool) -> impl IntoView {
    if can_edit {
        view! {
            <label class="flex items-center gap-2 text-xs text-zinc-600 dark:text-zinc-300">
                <input type="checkbox" name="confirm_refusals" value="yes" data-testid="confirm-refusals" />
                "Save even if, against the last 7 days, it would refuse calls that ran"
            </label>
            <div class="flex flex-wrap gap-2">
                <button type="submit" data-testid="save-kit"
                    class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white disabled:opacity-40 dark:bg-zinc-100 dark:text-zinc-900">
                    "Save as the next version"
                </button>
                <button type="submit" formaction="/api/start_shadow" formmethod="post" data-testid="start-shadow"
                    class="rounded border border-zinc-300 px-3 py-1.5 text-sm dark:border-zinc-700">
                    "Run the draft in shadow"
                </button>
            </div>
        }.into_any()
    } else {
        view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Only an admin can save kits; the simulator still works."</p> }.into_any()
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
        <div class="grid items-end gap-2 sm:grid-cols-5" data-row="filter">
            <label class=LABEL><span class="text-xs">"Toolkit"</span><input class=INPUT name=F_FILTER_TOOLKIT value=f.toolkit placeholder="github" /></label>
            <label class=LABEL><span class="text-xs">"Only these tools"</span><input class=INPUT name=F_FILTER_ONLY value=f.only placeholder="all" /></label>
            <label class=LABEL><span class="text-xs">"Disable"</span><input class=INPUT name=F_FILTER_DISABLE value=f.disable placeholder="none" /></label>
            <label class=LABEL><span class="text-xs">"Pin effects (tool=read|write|destructive)"</span><input class=INPUT name=F_FILTER_EFFECTS value=f.effects placeholder="issues.delete=destructive" /></label>
            <button type="button" class=SMALL_BUTTON data-remove="">"Remove"</button>
        </div>
    }
}
