//! A live countdown to an approval's expiry: server-rendered with the seconds left, then
//! ticked down once a second in the browser by one timer for the whole page (`tick`,
//! started by the wasm entry point), which also picks up rows a live region swaps in later.
//! Without JavaScript it reads as of the page load.

use leptos::prelude::*;

/// "in 14 min 05 s", "in 40 s", "expired".
pub fn time_left(secs: i64) -> String {
    match secs {
        s if s <= 0 => "expired".into(),
        s if s < 60 => format!("in {s} s"),
        s => format!("in {} min {:02} s", s / 60, s % 60),
    }
}

#[component]
pub fn Countdown(seconds_left: i64) -> impl IntoView {
    view! {
        <span class="tabular-nums" data-testid="countdown" data-seconds=seconds_left.to_string()>
            {time_left(seconds_left)}
        </span>
    }
}

/// One second passes on every countdown on the page.
#[cfg(feature = "hydrate")]
pub fn tick() {
    use crate::components::browser::{all, page};
    let Some(page) = page() else { return };
    for el in all::<web_sys::Element>(&page, "[data-testid=countdown][data-seconds]") {
        let Some(left) = el.get_attribute("data-seconds").and_then(|s| s.parse::<i64>().ok()) else {
            continue;
        };
        let left = (left - 1).max(0);
        let _ = el.set_attribute("data-seconds", &left.to_string());
        el.set_text_content(Some(&time_left(left)));
    }
}

#[cfg(test)]
mod tests {
    use super::time_left;

    #[test]
    fn reads_as_minutes_and_seconds_until_it_expires() {
        assert_eq!(time_left(845), "in 14 min 05 s");
        assert_eq!(time_left(40), "in 40 s");
        assert_eq!(time_left(0), "expired");
        assert_eq!(time_left(-5), "expired");
    }
}
