//! The island's browser side: reading the form, showing the draft's problems as typed, asking
//! the server for the diff and the verdicts (and swapping its answer in), adding and removing
//! rows, saving and replaying. The form's fields go to the server as they are typed, URL-encoded
//! as the form posts them; the server builds the kit from them with the same
//! [`KitText::from_fields`] this side checks them with.

use super::fields::KitText;
use crate::components::browser::{all, first as find};
use policy::{KitError, KitVersion};
use wasm_bindgen::JsCast;
use web_sys::{
    Element, HtmlButtonElement, HtmlFormElement, HtmlInputElement, HtmlSelectElement, HtmlTemplateElement,
    HtmlTextAreaElement, UrlSearchParams,
};

thread_local! {
    /// How many previews have been asked for: an answer to an older one is dropped.
    static ASKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Every named field of `form` as it would be submitted, in document order, its JSON left out.
fn fields(form: &HtmlFormElement) -> Vec<(String, String)> {
    let elements = form.elements();
    let mut out = Vec::new();
    for i in 0..elements.length() {
        let Some(el) = elements.item(i) else { continue };
        if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
            match input.type_().as_str() {
                "checkbox" | "radio" if input.checked() => out.push((input.name(), input.value())),
                "checkbox" | "radio" | "submit" | "button" => (),
                _ => out.push((input.name(), input.value())),
            }
        } else if let Some(area) = el.dyn_ref::<HtmlTextAreaElement>() {
            out.push((area.name(), area.value()));
        } else if let Some(select) = el.dyn_ref::<HtmlSelectElement>() {
            out.push((select.name(), select.value()));
        }
    }
    out.retain(|(name, _)| !name.is_empty() && name != "kit_json");
    out
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
}

/// `fields` URL-encoded, as a form posts them.
fn encoded(fields: &[(String, String)]) -> String {
    let Ok(params) = UrlSearchParams::new() else { return String::new() };
    for (n, v) in fields {
        params.append(n, v);
    }
    params.to_string().into()
}

/// A request body naming the kit, its saved version and the form's fields as typed.
fn body(form: &HtmlFormElement) -> Option<UrlSearchParams> {
    let typed = fields(form);
    let params = UrlSearchParams::new().ok()?;
    params.append("name", field(&typed, "name"));
    params.append("expected_version", field(&typed, "expected_version"));
    params.append("fields", &encoded(&typed));
    Some(params)
}

/// Arms the server-rendered form and reads it.
pub fn start(root: &Element) {
    for set in all::<Element>(root, "fieldset[data-needs-script]") {
        let _ = set.remove_attribute("disabled");
    }
    if let Some(note) = find::<Element>(root, "[data-testid=editor-loading]") {
        note.remove();
    }
    if let Some(json) = find::<HtmlTextAreaElement>(root, "textarea[name=kit_json]") {
        json.set_read_only(true);
    }
    let _ = root.set_attribute("data-hydrated", "true");
    read(root);
}

/// Checks the draft as typed (its problems at once), and asks the server for the diff and the
/// verdicts of the draft and the saved version.
pub fn read(root: &Element) {
    let Some(form) = find::<HtmlFormElement>(root, "form[data-kit-form]") else { return };
    let typed = fields(&form);
    let version = KitVersion(field(&typed, "expected_version").parse().unwrap_or(1));
    let problems = KitText::from_fields(typed.iter().map(|(n, v)| (n.as_str(), v.as_str())))
        .to_kit(field(&typed, "name"), version)
        .err()
        .unwrap_or_default();
    show_problems(root, &problems);
    let _ = root.set_attribute("data-draft-ok", if problems.is_empty() { "true" } else { "false" });
    if !problems.is_empty() {
        saveable(root, false);
    }
    let (Some(params), Some(sim)) = (body(&form), find::<HtmlFormElement>(root, "form[data-sim-form]"))
    else {
        return;
    };
    params.append("sim", &encoded(&fields(&sim)));
    let asked = ASKED.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    let root = root.clone();
    leptos::task::spawn_local(async move {
        // Typing on: only the last of a burst is asked for.
        pause(120).await;
        if ASKED.with(|n| n.get()) != asked {
            return;
        }
        let answer = crate::components::browser::post_for_json("/api/kit_preview", &params).await;
        if ASKED.with(|n| n.get()) == asked {
            show_preview(&root, answer);
        }
    });
}

/// Waits `ms` milliseconds.
async fn pause(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// The draft's problems, each with its path, or nothing.
fn show_problems(root: &Element, problems: &[KitError]) {
    let (Some(list), Some(doc)) =
        (find::<Element>(root, "[data-testid=kit-errors]"), web_sys::window().and_then(|w| w.document()))
    else {
        return;
    };
    list.set_inner_html("");
    if problems.is_empty() {
        return;
    }
    let Ok(ul) = doc.create_element("ul") else { return };
    ul.set_class_name("rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200");
    for e in problems {
        let (Ok(li), Ok(code)) = (doc.create_element("li"), doc.create_element("code")) else { continue };
        code.set_class_name("text-xs");
        code.set_text_content(Some(&e.path));
        let _ = li.append_child(&code);
        let _ = li.append_with_str_1(&format!(": {}", e.message));
        let _ = ul.append_child(&li);
    }
    let _ = list.append_child(&ul);
}

/// The server's diff and verdicts in place, the JSON following the draft, and the save
/// button on when the draft is sound and differs from the saved version.
fn show_preview(root: &Element, answer: Result<wasm_bindgen::JsValue, String>) {
    let Some(panel) = find::<Element>(root, "[data-kit-preview]") else { return };
    let v = match answer {
        Ok(v) => v,
        Err(e) => {
            panel.set_text_content(Some(&format!("The preview did not come back: {e}")));
            return;
        }
    };
    panel.set_inner_html(&crate::components::browser::json_str(&v, "html").unwrap_or_default());
    if let (Some(area), Some(json)) = (
        find::<HtmlTextAreaElement>(root, "textarea[name=kit_json]"),
        crate::components::browser::json_str(&v, "kit_json").filter(|j| !j.is_empty()),
    ) {
        area.set_value(&json);
    }
    let changed = js_sys::Reflect::get(&v, &"changed".into()).ok().and_then(|c| c.as_bool()).unwrap_or(false);
    let sound = root.get_attribute("data-draft-ok").as_deref() == Some("true");
    saveable(root, changed && sound);
}

fn saveable(root: &Element, yes: bool) {
    if let Some(button) = find::<HtmlButtonElement>(root, "[data-testid=save-kit]") {
        button.set_disabled(!yes);
    }
}

/// What the save status says.
fn status(root: &Element, text: &str) {
    if let Some(s) = find::<Element>(root, "[data-testid=save-state]") {
        s.set_text_content(Some(text));
    }
}

/// "Add rule" and "Add toolkit filter" copy their row's template; "Remove" drops its row;
/// "Replay the draft" asks the server.
pub fn click(ev: &web_sys::MouseEvent, root: &Element) {
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
        replay(root);
        return;
    } else {
        return;
    }
    read(root);
}

/// Saves the draft in place, keeping it whatever the answer: the island posts the form's
/// fields to the endpoint a browser without JavaScript posts the kit's JSON to, and reads the
/// outcome from the page it lands on, `?saved=vN` or `?error=…`. The simulator's form never
/// submits; a button with its own target (starting a shadow, the replay page) posts as it says.
pub fn submit(ev: &web_sys::SubmitEvent, root: &Element) {
    if ev.submitter().is_some_and(|b| b.has_attribute("formaction")) {
        return;
    }
    ev.prevent_default();
    let form = ev.target().and_then(|t| t.dyn_into::<HtmlFormElement>().ok());
    let Some(form) = form.filter(|f| f.has_attribute("data-kit-form")) else { return };
    if root.get_attribute("data-draft-ok").as_deref() != Some("true") {
        return;
    }
    let Some(params) = body(&form) else { return };
    if find::<HtmlInputElement>(root, "input[name=confirm_refusals]").is_some_and(|c| c.checked()) {
        params.append("confirm_refusals", "yes");
    }
    status(root, "Saving…");
    saveable(root, false);
    let root = root.clone();
    leptos::task::spawn_local(async move {
        let outcome = post_save(&params).await;
        if let Ok(v) = &outcome
            && let Some(version) = find::<HtmlInputElement>(&root, "input[name=expected_version]")
        {
            version.set_value(&v.to_string());
        }
        match outcome {
            Ok(v) => status(&root, &format!("Saved as v{v}. Agents get it on their next call.")),
            Err(why) => status(&root, &why),
        }
        read(&root);
    });
}

/// Posts the save; the version saved, or why not.
async fn post_save(params: &UrlSearchParams) -> Result<u32, String> {
    let response = crate::components::browser::fetch("POST", "/api/save_kit", Some(params))
        .await
        .map_err(|e| format!("the gateway did not answer ({e}); the draft is kept, try again"))?;
    let landed = response.url();
    let query = landed.split_once('?').map(|(_, q)| q.to_string());
    let answer = query.and_then(|q| UrlSearchParams::new_with_str(&q).ok());
    let get = |key: &str| answer.as_ref().and_then(|a| a.get(key));
    if let Some(v) = get("saved").and_then(|v| v.trim_start_matches('v').parse().ok()) {
        return Ok(v);
    }
    Err(get("error").unwrap_or_else(|| {
        format!(
            "the save was not confirmed (HTTP {}); reload to see the kit's current version",
            response.status()
        )
    }))
}

/// "Replay the draft": the server decides the draft again over the last week and renders the
/// summary ([`crate::api::replay::replay_summary`]), which goes in place as it came.
fn replay(root: &Element) {
    let Some(out) = find::<Element>(root, "[data-replay-out]") else { return };
    let form = find::<HtmlFormElement>(root, "form[data-kit-form]");
    let params = form.as_ref().and_then(body);
    let (Some(params), true) = (params, root.get_attribute("data-draft-ok").as_deref() == Some("true"))
    else {
        out.set_text_content(Some("Fix the draft's problems first."));
        return;
    };
    out.set_text_content(Some("Replaying the last 7 days…"));
    leptos::task::spawn_local(async move {
        match crate::components::browser::post_for_json("/api/replay_summary", &params).await {
            Ok(html) => out.set_inner_html(&html.as_string().unwrap_or_default()),
            Err(e) => out.set_text_content(Some(&e)),
        }
    });
}
