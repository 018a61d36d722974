//! A live countdown to an approval's expiry: server-rendered with the seconds left, then
//! ticked down once a second in the browser by the inbox island it sits in. Without
//! JavaScript it reads as of the page load.

use leptos::prelude::*;

/// "in 14 min", "in 40 s", "expired".
pub fn time_left(secs: i64) -> String {
    match secs {
        s if s <= 0 => "expired".into(),
        s if s < 60 => format!("in {s} s"),
        s => format!("in {} min {:02} s", s / 60, s % 60),
    }
}

#[component]
pub fn Countdown(seconds_left: i64) -> impl IntoView {
    let (left, set_left) = signal(seconds_left);
    // Effects run only in the browser, after hydration.
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || set_left.update(|s| *s = (*s - 1).max(0)),
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <span class="tabular-nums" data-testid="countdown" data-seconds=move || left.get().to_string()>
            {move || time_left(left.get())}
        </span>
    }
}
