//! The island's browser side: reading the form, adding and removing rows, saving.

use super::fields::KitText;
use super::island::{Editor, SaveState};
use super::simulate::{SimAction, SimOutcome, SimProfile, needs_server, simulate};
use crate::components::browser::{all, first as find};
use leptos::prelude::*;
use policy::{Kit, KitDiff, KitVersion, Money};
use wasm_bindgen::JsCast;
use web_sys::{
    Element, HtmlButtonElement, HtmlFormElement, HtmlInputElement, HtmlSelectElement, HtmlTemplateElement,
    HtmlTextAreaElement,
};

/// The simulator's inputs as read from its form.
#[derive(Clone)]
struct SimInput {
    profile: SimProfile,
    credit: Money,
    action: Result<SimAction, String>,
    /// The moment to decide at, in the tenant's time (`2026-12-31T23:50`); empty for now.
    at: String,
}

impl SimInput {
    fn run(&self, kit: &Kit) -> Result<SimOutcome, String> {
        simulate(kit, &self.profile, self.credit, self.action.as_ref().map_err(Clone::clone)?, (&[], &[]))
    }

    /// The verdict for `kit` into `out`: here, or for a kit with period or rate limits from
    /// the server ([`crate::api::kits::simulate_at`]); an answer that an input overtook is
    /// dropped.
    fn run_into(&self, kit: &Kit, out: RwSignal<Option<Result<SimOutcome, String>>>) {
        if !needs_server(kit) {
            out.set(Some(self.run(kit)));
            return;
        }
        let Ok(action) = self.action.clone() else {
            out.set(Some(self.run(kit)));
            return;
        };
        let asked = ASKED.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        out.set(Some(Err("deciding on the server, in the tenant's time zone…".into())));
        let (input, json) = (self.clone(), kit.to_json());
        leptos::task::spawn_local(async move {
            let answer = ask_server(&input, &json, &action).await;
            if ASKED.with(|n| n.get()) <= asked + 1 {
                out.set(Some(answer));
            }
        });
    }
}

thread_local! {
    /// How many server verdicts have been asked for: an answer older than the latest pair is
    /// stale.
    static ASKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

async fn ask_server(input: &SimInput, kit_json: &str, action: &SimAction) -> Result<SimOutcome, String> {
    let form =
        web_sys::UrlSearchParams::new().map_err(|_| "the browser cannot build the form".to_string())?;
    form.append("kit_json", kit_json);
    form.append("profile", &input.profile.id);
    form.append("at", &input.at);
    form.append("tool", &action.tool);
    form.append("amount", &action.amount.to_decimal_string());
    form.append("merchant", action.merchant.as_deref().unwrap_or(""));
    form.append("recipient", action.recipient.as_deref().unwrap_or(""));
    let v = crate::components::browser::post_for_json("/api/simulate_at", &form).await?;
    let get = |k: &str| crate::components::browser::json_str(&v, k);
    Ok(SimOutcome {
        verdict: get("verdict").ok_or("the server's answer has no verdict")?,
        reason: get("reason"),
        cost: get("cost").and_then(|c| Money::parse(&c).ok()).unwrap_or(Money::ZERO),
        envelope: get("envelope").unwrap_or_default(),
        who: get("who"),
    })
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
        } else if let Some(area) = el.dyn_ref::<HtmlTextAreaElement>() {
            out.push((
                area.name(),
                if defaults { area.default_value().unwrap_or_default() } else { area.value() },
            ));
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
        match &draft {
            Ok(k) => sim.run_into(k, s.sim_draft),
            Err(_) => s.sim_draft.set(Some(Err("fix the draft's problems first".to_string()))),
        }
        match &saved {
            Some(k) => sim.run_into(k, s.sim_saved),
            None => s.sim_saved.set(None),
        }
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
        at: field(&typed, "sim_at").to_string(),
        profile: SimProfile {
            id: attr("data-id").unwrap_or_default(),
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
    if let (Some(area), Some(json)) = (find::<HtmlTextAreaElement>(root, "textarea[name=kit_json]"), json) {
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
    } else if let Some(row) =
        target.closest("[data-remove]").ok().flatten().and_then(|b| b.closest("[data-row]").ok().flatten())
    {
        row.remove();
    } else if target.closest("[data-replay-run]").ok().flatten().is_some() {
        replay(root, s);
        return;
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
    // A button with its own target (the replay page, starting a shadow) posts as it says.
    if ev.submitter().is_some_and(|b| b.has_attribute("formaction")) {
        return;
    }
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
    let confirmed =
        find::<HtmlInputElement>(&root, "input[name=confirm_refusals]").is_some_and(|c| c.checked());
    leptos::task::spawn_local(async move {
        let outcome = post_save(&kit, confirmed).await;
        if let SaveState::Saved(v) = outcome {
            s.saved.set(Some(Kit { version: KitVersion(v), ..kit }));
        }
        s.save_state.set(outcome);
        read(&root, s);
    });
}

async fn post_save(kit: &Kit, confirmed: bool) -> SaveState {
    let Ok(form) = web_sys::UrlSearchParams::new() else {
        return SaveState::Failed("the browser cannot build the form".into());
    };
    form.append("name", &kit.name);
    form.append("expected_version", &kit.version.0.to_string());
    form.append("kit_json", &kit.to_json_pretty());
    if confirmed {
        form.append("confirm_refusals", "yes");
    }
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

/// "Replay the draft": the server decides the draft again over the last week and renders the
/// summary ([`crate::api::replay::replay_summary`]), which goes in place as it came.
fn replay(root: &Element, s: Editor) {
    let Some(out) = find::<Element>(root, "[data-replay-out]") else { return };
    let Some(Ok(kit)) = s.draft.get_untracked() else {
        out.set_text_content(Some("Fix the draft's problems first."));
        return;
    };
    out.set_text_content(Some("Replaying the last 7 days…"));
    leptos::task::spawn_local(async move {
        let Ok(form) = web_sys::UrlSearchParams::new() else { return };
        form.append("name", &kit.name);
        form.append("kit_json", &kit.to_json_pretty());
        match crate::components::browser::post_for_json("/api/replay_summary", &form).await {
            Ok(html) => out.set_inner_html(&html.as_string().unwrap_or_default()),
            Err(e) => out.set_text_content(Some(&e)),
        }
    });
}
