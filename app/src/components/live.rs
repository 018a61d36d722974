//! The console's live stream in the browser: one `EventSource` on `/console/events` per
//! island that needs it, delivering each new activity row. The browser reconnects on its own
//! with `Last-Event-ID`, and the server replays what was missed, so a dropped connection loses
//! nothing. On the server this does nothing: pages render from the log.

use crate::api::console::ActivityRow;

/// Calls `on_row` with every activity row from now on, until the island is cleaned up.
/// `on_state` hears whether the stream is connected.
#[allow(unused_variables)]
pub fn subscribe(on_row: impl Fn(ActivityRow) + 'static, on_state: impl Fn(bool) + 'static) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        let Ok(source) = web_sys::EventSource::new("/console/events") else { return };
        let on_state = std::rc::Rc::new(on_state);
        let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |m: web_sys::MessageEvent| {
            if let Some(row) = m.data().as_string().and_then(|d| serde_json::from_str::<ActivityRow>(&d).ok())
            {
                on_row(row);
            }
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
