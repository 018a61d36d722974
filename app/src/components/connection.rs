//! The connection indicator island: after hydration it pings `/healthz`, shows the round
//! trip, re-checks every 15 seconds and on click. Without JavaScript it says the page is
//! static, which is true.

use leptos::prelude::*;

// The server only ever renders `Static`; the other states are reached in the browser.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq)]
enum Conn {
    /// Server-rendered, not hydrated.
    Static,
    Checking,
    Live {
        ms: u32,
    },
    Down,
}

/// How often the indicator re-checks on its own.
#[cfg(feature = "hydrate")]
const RECHECK_SECS: u64 = 15;

#[island]
pub fn ConnectionIndicator() -> impl IntoView {
    let state = RwSignal::new(Conn::Static);
    let checks = RwSignal::new(0u32);
    let check = move || {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            state.set(Conn::Checking);
            let started = now_ms();
            let ok = crate::components::browser::fetch("GET", "/healthz", None).await.is_ok_and(|r| r.ok());
            let ms = (now_ms() - started).max(0.0).round() as u32;
            checks.update(|c| *c += 1);
            state.set(if ok { Conn::Live { ms } } else { Conn::Down });
        });
    };
    Effect::new(move |_| {
        check();
        #[cfg(feature = "hydrate")]
        set_interval(check, std::time::Duration::from_secs(RECHECK_SECS));
    });
    let dot = move || match state.get() {
        Conn::Live { .. } => "bg-emerald-500",
        Conn::Down => "bg-red-500",
        Conn::Checking => "bg-amber-400 animate-pulse",
        Conn::Static => "bg-zinc-400",
    };
    let label = move || match state.get() {
        Conn::Static => "static page".to_string(),
        Conn::Checking => "checking…".to_string(),
        Conn::Live { ms } => format!("live · {ms} ms"),
        Conn::Down => "gateway unreachable".to_string(),
    };
    view! {
        <button
            type="button"
            data-testid="connection"
            data-checks=move || checks.get().to_string()
            on:click=move |_| check()
            title="Connection to the gateway. Click to check again."
            class="inline-flex items-center gap-2 rounded px-2 py-1 text-xs text-zinc-600 hover:bg-zinc-100 dark:text-zinc-300 dark:hover:bg-zinc-800"
        >
            <span class=move || format!("inline-block h-2 w-2 rounded-full {}", dot())></span>
            <span data-testid="connection-label">{label}</span>
            <span class="text-zinc-500 dark:text-zinc-400" data-testid="connection-count">
                {move || match checks.get() {
                    0 => String::new(),
                    n => format!("checked {n}×"),
                }}
            </span>
        </button>
    }
}

#[cfg(feature = "hydrate")]
fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}
