//! The console's live regions in the browser.
//!
//! [`subscribe`] opens one `EventSource` on `/console/events` per island that needs it and
//! reports each new activity row's kind, agent and verdict. The browser reconnects on its own
//! with `Last-Event-ID`, and the server replays what was missed, so a dropped connection loses
//! nothing. Rows are parsed by the browser's own `JSON.parse`.
//!
//! [`refresher`] re-renders a live region from the server: it fetches the page the island is
//! on and swaps in the fresh copy of its `[data-swap]` element. The rows' markup is written
//! once, on the server, and never ships as wasm. Refreshes coalesce: while one is in flight,
//! any number of further requests become one more fetch after it, so a burst of events costs
//! two page renders at most. What the user was typing survives a swap: each field that differs
//! from what the server rendered is found again by its row's `data-swap-key` and its name, and
//! gets its text and, if it had it, the focus back.
//!
//! On the server both do nothing: pages render from the log.

use leptos::prelude::NodeRef;

/// What an island needs to know of an activity row to decide whether its region changed.
/// The fields are the row's names as the server wrote them (`policy::activity`'s `as_str`);
/// islands compare them with names taken from the same types, so the browser ships no parser
/// for the closed sets (it would cost the wasm budget and decide nothing more). A row without
/// a kind is not reported.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveEvent {
    pub kind: String,
    pub agent: Option<String>,
    pub verdict: Option<String>,
    pub transport: Option<String>,
}

/// Calls `on_event` with every activity row from now on, until the island is cleaned up.
/// `on_state` hears whether the stream is connected.
#[allow(unused_variables)]
pub fn subscribe(on_event: impl Fn(LiveEvent) + 'static, on_state: impl Fn(bool) + 'static) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        let Ok(source) = web_sys::EventSource::new("/console/events") else { return };
        let on_state = std::rc::Rc::new(on_state);
        let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |m: web_sys::MessageEvent| {
            let Some(row) = m.data().as_string().and_then(|d| js_sys::JSON::parse(&d).ok()) else { return };
            let get = |key: &str| js_sys::Reflect::get(&row, &key.into()).ok().and_then(|v| v.as_string());
            let Some(kind) = get("kind") else { return };
            on_event(LiveEvent {
                kind,
                agent: get("agent"),
                verdict: get("verdict"),
                transport: get("transport"),
            });
        });
        let opened = on_state.clone();
        let on_open = Closure::<dyn Fn()>::new(move || opened(true));
        let on_error = Closure::<dyn Fn()>::new(move || on_state(false));
        source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        // The handlers live as long as the page; the source closes with the island.
        on_message.forget();
        on_open.forget();
        on_error.forget();
        use leptos::prelude::{StoredValue, WithValue};
        let source = StoredValue::new_local(source);
        leptos::prelude::on_cleanup(move || source.with_value(|s| s.close()));
    }
}

/// A function that re-renders the `[data-swap]` region inside `root` from the server, then
/// calls `after`.
#[cfg(feature = "hydrate")]
pub fn refresher(
    root: NodeRef<leptos::html::Div>,
    after: impl Fn() + 'static,
) -> impl Fn() + Clone + 'static {
    use leptos::prelude::GetUntracked;
    use std::cell::Cell;
    use std::rc::Rc;
    let busy = Rc::new(Cell::new(false));
    let again = Rc::new(Cell::new(false));
    let after = Rc::new(after);
    move || {
        if busy.replace(true) {
            again.set(true);
            return;
        }
        let (busy, again, after) = (busy.clone(), again.clone(), after.clone());
        leptos::task::spawn_local(async move {
            loop {
                again.set(false);
                if let Some(root) = root.get_untracked()
                    && swap(&root).await
                {
                    after();
                }
                if !again.get() {
                    break;
                }
            }
            busy.set(false);
        });
    }
}

#[cfg(not(feature = "hydrate"))]
pub fn refresher(
    _root: NodeRef<leptos::html::Div>,
    _after: impl Fn() + 'static,
) -> impl Fn() + Clone + 'static {
    || ()
}

/// Fetches the current page and replaces the region's content with its fresh copy; false if
/// anything on the way failed (the region then stays as it was until the next event).
#[cfg(feature = "hydrate")]
async fn swap(root: &web_sys::Element) -> bool {
    use crate::components::browser::{fetch, first, text};
    let Some(region) = first::<web_sys::Element>(root, "[data-swap]") else { return false };
    let key = region.get_attribute("data-swap").unwrap_or_default();
    let Some(href) = web_sys::window().and_then(|w| w.location().href().ok()) else { return false };
    let Ok(response) = fetch("GET", &href, None).await else { return false };
    if !response.ok() {
        return false;
    }
    let Ok(html) = text(&response).await else { return false };
    let Some(fresh) = web_sys::DomParser::new()
        .and_then(|p| p.parse_from_string(&html, web_sys::SupportedType::TextHtml))
        .ok()
        .and_then(|doc| doc.document_element())
        .and_then(|doc| first::<web_sys::Element>(&doc, &format!("[data-swap=\"{key}\"]")))
    else {
        return false;
    };
    let typed = Typed::read(&region);
    region.set_inner_html(&fresh.inner_html());
    typed.restore(&region);
    crate::components::common::localize_times(&region);
    true
}

/// The fields of a region that the user has typed in, by row key and field name.
#[cfg(feature = "hydrate")]
struct Typed {
    fields: Vec<(String, String, String)>,
    focused: Option<(String, String)>,
}

#[cfg(feature = "hydrate")]
impl Typed {
    fn read(region: &web_sys::Element) -> Typed {
        let key_of = |el: &web_sys::Element| {
            let row = el.closest("[data-swap-key]").ok().flatten()?;
            Some((row.get_attribute("data-swap-key")?, el.get_attribute("name")?))
        };
        let fields = crate::components::browser::all::<web_sys::HtmlInputElement>(region, "input[name]")
            .into_iter()
            .filter(|input| input.value() != input.default_value())
            .filter_map(|input| key_of(&input).map(|(key, name)| (key, name, input.value())))
            .collect();
        let focused = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .filter(|el| region.contains(Some(el)))
            .and_then(|el| key_of(&el));
        Typed { fields, focused }
    }

    fn restore(self, region: &web_sys::Element) {
        let find = |key: &str, name: &str| {
            crate::components::browser::first::<web_sys::HtmlInputElement>(
                region,
                &format!("[data-swap-key=\"{key}\"] [name=\"{name}\"]"),
            )
        };
        for (key, name, value) in &self.fields {
            if let Some(input) = find(key, name) {
                input.set_value(value);
            }
        }
        if let Some(input) = self.focused.and_then(|(key, name)| find(&key, &name)) {
            let _ = input.focus();
        }
    }
}
