//! The wasm entry point: hydrates the console's islands. Everything else on the page is
//! server-rendered HTML and never ships as wasm.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    // Keeps the island registrations of `app` linked into this cdylib.
    #[allow(unused_imports)]
    use app::*;
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
    // Server-rendered timestamps are UTC; show them in the viewer's time zone.
    app::components::common::localize_times();
}
