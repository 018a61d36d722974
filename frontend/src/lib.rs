//! The wasm entry point: hydrates the console's islands. Everything else on the page is
//! server-rendered HTML and never ships as wasm.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    // Keeps the island registrations of `app` linked into this cdylib.
    #[allow(unused_imports)]
    use app::*;
    // Panic messages in the console while developing; a release build leaves the formatting out.
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
    // Server-rendered timestamps are UTC; show them in the viewer's time zone.
    if let Some(page) = app::components::browser::page() {
        app::components::common::localize_times(&page);
    }
    // One timer ticks every approval's countdown on the page.
    leptos::prelude::set_interval(app::components::countdown::tick, std::time::Duration::from_secs(1));
}
