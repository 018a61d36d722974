//! The Runtime page's archive and retention (admins): where the log's archive is, how far it
//! is archived, sent by every log stream and deleted from the database, and the form that sets
//! how long archived entries stay (docs/archive.md). Server-rendered, a plain form, no island.

use leptos::prelude::*;

use crate::api::archive::ArchiveView;
use crate::components::common::{INPUT, Time};

const NOTE: &str = "mb-3 text-sm text-zinc-600 dark:text-zinc-300";
const PANEL: &str = "mt-3 max-w-3xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";
const PRIMARY: &str =
    "rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900";
const ROW: &str = "flex gap-2 text-sm";
const KEY: &str = "w-48 shrink-0 text-zinc-600 dark:text-zinc-300";

/// The section: the figures, then the retention form.
#[component]
pub fn ArchiveSection(a: ArchiveView) -> impl IntoView {
    let archived = match a.archived_to {
        0 => view! { <span>"nothing yet"</span> }.into_any(),
        n => view! {
            <span>{format!("entry {n} · {} ranges", a.ranges)}{a.archived_day.map(|d| format!(" · through {d}"))}
            {a.archived_at.map(|t| view! { " · at "<Time rfc3339=t /> })}</span>
        }
        .into_any(),
    };
    let deleted = match a.deleted_through {
        0 => view! { <span>"nothing"</span> }.into_any(),
        n => view! { <span>{format!("entries up to {n}")}{a.deleted_through_at.map(|t| view! { " · appended "<Time rfc3339=t /> })}</span> }.into_any(),
    };
    let streamed = a.streamed_through.map_or("no log stream".to_string(), |n| format!("entry {n}"));
    let days = a.log_days.map(|d| d.to_string()).unwrap_or_default();
    view! {
        <h2 id="archive" class="mt-8 mb-2 text-base font-semibold">"Archive and retention"</h2>
        <p class=NOTE>"Closed days of the activity log are written to the archive with their chain (check it with server check --archive). Retention deletes an archived entry from the database once it is older than the days below and every log stream has sent it; until then nothing is deleted."</p>
        <div class="max-w-3xl space-y-1" data-testid="archive-status">
            <p class=ROW><span class=KEY>"Archive"</span><code class="break-all text-xs">{a.url.unwrap_or_else(|| "none: the operator has not set NAIVE_ARCHIVE_URL, so nothing is archived or deleted".into())}</code></p>
            <p class=ROW><span class=KEY>"Archived"</span>{archived}</p>
            <p class=ROW><span class=KEY>"Sent by every log stream"</span><span>{streamed}</span></p>
            <p class=ROW><span class=KEY>"Deleted from the database"</span><span data-testid="archive-deleted">{deleted}</span></p>
        </div>
        <form method="post" action="/api/set_retention" class=PANEL data-testid="retention-form">
            <label class="flex max-w-full flex-col text-sm"><span class="text-zinc-600 dark:text-zinc-300">"Days an archived entry stays in the database (empty keeps every entry)"</span>
                <input name="log_days" type="number" min="1" max="36500" value=days class=format!("{INPUT} max-w-xs") />
            </label>
            <button type="submit" class=PRIMARY>"Save retention"</button>
        </form>
    }
}
