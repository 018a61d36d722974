//! Small shared displays: page headers, empty and error states, money, statuses and times.
//! Amounts always go through `policy::Money`'s one formatter.

use leptos::prelude::*;
use policy::Money;

#[component]
pub fn PageHeader(title: &'static str, #[prop(into)] subtitle: String) -> impl IntoView {
    view! {
        <header class="mb-4">
            <h1 class="text-lg font-semibold tracking-tight">{title}</h1>
            <p class="text-sm text-zinc-500 dark:text-zinc-400">{subtitle}</p>
        </header>
    }
}

/// What the page would show, and what would fill it.
#[component]
pub fn EmptyState(title: &'static str, #[prop(into)] detail: String) -> impl IntoView {
    view! {
        <div class="rounded-lg border border-dashed border-zinc-300 bg-white p-8 text-center dark:border-zinc-700 dark:bg-zinc-900" data-testid="empty-state">
            <p class="font-medium">{title}</p>
            <p class="mx-auto mt-1 max-w-prose text-sm text-zinc-500 dark:text-zinc-400">{detail}</p>
        </div>
    }
}

#[component]
pub fn ErrorBox(#[prop(into)] error: String) -> impl IntoView {
    view! {
        <div role="alert" class="rounded-lg border border-red-300 bg-red-50 p-4 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">
            {error}
        </div>
    }
}

/// The 403 page: the signed-in user's roles do not include this view.
#[component]
pub fn Forbidden(why: String) -> impl IntoView {
    view! {
        <div class="py-16 text-center" data-testid="forbidden">
            <p class="text-5xl font-semibold text-zinc-500 dark:text-zinc-400">"403"</p>
            <h1 class="mt-2 text-lg font-semibold">"You do not have access to this page"</h1>
            <p class="mt-1 text-sm text-zinc-500 dark:text-zinc-400">{why}</p>
            <p class="mt-1 text-sm text-zinc-500 dark:text-zinc-400">"An admin can add the role under Profiles → console users, or pick a view from the navigation."</p>
        </div>
    }
}

/// Shown when the session ended between loading the page and a call.
#[component]
pub fn SignedOut() -> impl IntoView {
    view! {
        <div class="py-16 text-center" data-testid="signed-out">
            <h1 class="text-lg font-semibold">"You are signed out"</h1>
            <a href="/login" class="mt-4 inline-block rounded bg-zinc-900 px-3 py-1.5 text-sm text-white dark:bg-zinc-100 dark:text-zinc-900">"Sign in"</a>
        </div>
    }
}

/// What a plain form post came back with: what went wrong (`?error=`, an alert) or what
/// happened (`?done=`, a status message), in words, announced to assistive technology.
#[component]
pub fn FormOutcome() -> impl IntoView {
    let query = leptos_router::hooks::use_query_map();
    let error = move || {
        query.read().get("error").filter(|e| !e.is_empty()).map(|e| {
            view! {
                <div role="alert" data-testid="form-error" class="mb-3 rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200">
                    {e}
                </div>
            }
        })
    };
    let done = move || {
        query.read().get("done").filter(|d| !d.is_empty()).map(|d| {
            view! {
                <div role="status" data-testid="form-done" class="mb-3 rounded border border-emerald-300 bg-emerald-50 p-2 text-sm text-emerald-900 dark:border-emerald-800 dark:bg-emerald-950 dark:text-emerald-100">
                    {d}
                </div>
            }
        })
    };
    view! { {error} {done} }
}

#[component]
pub fn Loading() -> impl IntoView {
    view! { <p class="text-sm text-zinc-500 dark:text-zinc-400">"Loading…"</p> }
}

/// A server function's result: the data through `render`, or the error in a box.
pub fn show<T, V: IntoView + 'static>(
    result: Result<T, ServerFnError>,
    render: impl FnOnce(T) -> V,
) -> AnyView {
    match result {
        Ok(v) => render(v).into_any(),
        Err(e) => {
            let text = e.to_string();
            if let Some(why) = text.split_once("forbidden: ").map(|(_, w)| w.to_string()) {
                view! { <Forbidden why /> }.into_any()
            } else if text.contains("signed_out: ") {
                view! { <SignedOut /> }.into_any()
            } else {
                view! { <ErrorBox error=text /> }.into_any()
            }
        }
    }
}

/// An amount, or a dash for "no limit".
#[component]
pub fn MoneyCell(amount: Option<Money>) -> impl IntoView {
    match amount {
        Some(m) => view! { <span class="tabular-nums">{m.to_string()}</span> }.into_any(),
        None => {
            view! { <span class="text-zinc-500 dark:text-zinc-400" title="no limit">"—"</span> }.into_any()
        }
    }
}

/// A coloured badge for a status word.
#[component]
pub fn StatusBadge(#[prop(into)] status: String) -> impl IntoView {
    let colour = match status.as_str() {
        "active" | "running" | "allow" | "accepted" | "posted" => {
            "bg-emerald-100 text-emerald-800 dark:bg-emerald-900/50 dark:text-emerald-300"
        }
        "suspended" | "stopped" | "park" | "pending" => {
            "bg-amber-100 text-amber-800 dark:bg-amber-900/50 dark:text-amber-300"
        }
        "revoked" | "deny" | "rejected" | "expired" | "voided" => {
            "bg-red-100 text-red-800 dark:bg-red-900/50 dark:text-red-300"
        }
        _ => "bg-zinc-100 text-zinc-700 dark:bg-zinc-800 dark:text-zinc-300",
    };
    view! { <span class=format!("inline-flex rounded px-1.5 py-0.5 text-xs font-medium {colour}")>{status}</span> }
}

/// A timestamp: machine-readable in `datetime`, readable as text. The server writes UTC (it
/// does not know the viewer's zone); in the browser [`localize_times`] rewrites every one in
/// the viewer's time zone, at hydration and in every region a live island swaps in. The UTC
/// text stays as the tooltip.
#[component]
pub fn Time(#[prop(into)] rfc3339: String) -> impl IntoView {
    let utc = utc_text(&rfc3339);
    let title = utc.clone();
    view! { <time datetime=rfc3339 title=title class="tabular-nums text-zinc-500 dark:text-zinc-400">{utc}</time> }
}

/// `2026-11-30 09:31 UTC`, the server's rendering. Stored timestamps are UTC (`…+00:00`), so
/// slicing suffices, and the browser build needs no date library for it.
pub fn utc_text(rfc3339: &str) -> String {
    let utc = rfc3339.ends_with("+00:00") || rfc3339.ends_with('Z');
    match (rfc3339.get(0..10), rfc3339.get(11..16)) {
        (Some(day), Some(time)) if utc && rfc3339.as_bytes().get(10) == Some(&b'T') => {
            format!("{day} {time} UTC")
        }
        _ => rfc3339.to_string(),
    }
}

/// Rewrites every `<time datetime>` under `root` in the browser's locale and time zone, such
/// as `Nov 30, 2026, 6:31 PM GMT+9`. Times are server-rendered text everywhere (no island
/// renders one), so changing the text disturbs no hydration.
#[cfg(feature = "hydrate")]
pub fn localize_times(root: &web_sys::Element) {
    let options = js_sys::Object::new();
    for (k, v) in [
        ("year", "numeric"),
        ("month", "short"),
        ("day", "numeric"),
        ("hour", "numeric"),
        ("minute", "2-digit"),
        ("timeZoneName", "short"),
    ] {
        let _ = js_sys::Reflect::set(&options, &k.into(), &v.into());
    }
    for el in crate::components::browser::all::<web_sys::Element>(root, "time[datetime]") {
        let Some(at) = el.get_attribute("datetime") else { continue };
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&at));
        if !date.get_time().is_nan() {
            el.set_text_content(Some(&String::from(date.to_locale_string("default", &options))));
        }
    }
}

/// Shared table styling.
/// A text input or select in the console's forms.
pub const INPUT: &str =
    "min-w-0 rounded border border-zinc-300 px-2 py-1 text-sm dark:border-zinc-700 dark:bg-zinc-950";
pub const TABLE: &str = "w-full border-collapse text-sm";
pub const THEAD: &str = "border-b border-zinc-200 text-left text-xs font-medium uppercase tracking-wide text-zinc-500 dark:border-zinc-800 dark:text-zinc-400";
pub const TH: &str = "px-3 py-2";
pub const TD: &str = "px-3 py-2 align-top";
pub const TR: &str = "border-b border-zinc-100 last:border-0 hover:bg-zinc-50 dark:border-zinc-800/60 dark:hover:bg-zinc-800/40";
pub const CARD: &str = "overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm dark:border-zinc-800 dark:bg-zinc-900";

#[cfg(test)]
mod tests {
    use super::utc_text;

    #[test]
    fn utc_text_reads_stored_timestamps_and_leaves_others_alone() {
        assert_eq!(utc_text("2026-11-30T08:24:48.123456+00:00"), "2026-11-30 08:24 UTC");
        assert_eq!(utc_text("2026-11-30T23:59:00Z"), "2026-11-30 23:59 UTC");
        assert_eq!(utc_text("2026-11-30T08:24:48+09:00"), "2026-11-30T08:24:48+09:00", "not UTC: as is");
        assert_eq!(utc_text("yesterday"), "yesterday");
    }
}
