//! The Runtime page's log streams (admins): each stream's receiver, state, cursor (the newest
//! entry its receiver acknowledged), lag in entries and time, batch size and last error, with
//! a Remove button; and the form that adds one (docs/streams.md). Server-rendered plain
//! forms, no island: the figures are as of the page load.

use leptos::prelude::*;

use crate::api::streams::StreamView;
use crate::components::common::{CARD, EmptyState, INPUT, TABLE, TD, TH, THEAD, TR, Time};
use crate::components::secret::SecretOnce;

const BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";
const PRIMARY: &str =
    "rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900";
const PANEL: &str = "mt-6 max-w-3xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";
const FIELD: &str = "flex min-w-0 max-w-full flex-col text-sm";
const LABEL: &str = "text-zinc-600 dark:text-zinc-300";

/// The section: its heading, the secret of a stream just added, the table and the form.
#[component]
pub fn StreamsSection(streams: Vec<StreamView>, new_secret: Option<(String, String)>) -> impl IntoView {
    view! {
        <h2 id="streams" class="mt-8 mb-2 text-base font-semibold">"Log streams"</h2>
        <p class="mb-3 text-sm text-zinc-600 dark:text-zinc-300">"The activity log, sent to your SIEM's collector as it grows: newline-delimited JSON, Splunk HTTP Event Collector events or OTLP/HTTP logs, each entry as /v1/logs shows it or as an OCSF event. A stream resumes from its cursor after any outage, and retention deletes nothing it has not sent."</p>
        {new_secret.map(|(id, secret)| view! {
            <section role="status" data-testid="stream-secret-once" class="mb-4 rounded-lg border border-emerald-300 bg-emerald-50 p-3 dark:border-emerald-800 dark:bg-emerald-950">
                <p class="mb-2 text-sm font-medium">{format!("Signing secret of {id}: copy it now into the collector. It is shown only this once.")}</p>
                <SecretOnce token=secret />
            </section>
        })}
        <StreamTable streams />
        <StreamForm />
    }
}

#[component]
fn StreamTable(streams: Vec<StreamView>) -> impl IntoView {
    if streams.is_empty() {
        return view! { <EmptyState title="No log streams" detail="Add one below to send every decision, approval, key and kit change to your SIEM." /> }.into_any();
    }
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="streams-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Receiver"</th>
                        <th class=TH>"State"</th>
                        <th class=TH>"Cursor"</th>
                        <th class=TH>"Behind"</th>
                        <th class=TH>"Last error"</th>
                        <th class=TH>"Added"</th>
                        <th class=TH>"Manage"</th>
                    </tr>
                </thead>
                <tbody>{streams.into_iter().map(|s| view! { <StreamLine s /> }).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn StreamLine(s: StreamView) -> impl IntoView {
    let (row_id, delete_id, state) = (s.id.clone(), s.id.clone(), s.state.clone());
    let behind = match s.lag_entries {
        0 => "caught up".to_string(),
        n => format!("{n} entries, {} s", s.lag_seconds),
    };
    let error = s.last_error.map(|e| match s.next_attempt_at {
        Some(next) => view! { <span>{e}" · tries again "<Time rfc3339=next /></span> }.into_any(),
        None => view! { <span>{e}</span> }.into_any(),
    });
    let dead =
        DeadLetters(DeadLettersProps { id: s.id.clone(), seqs: s.dead_letters, total: s.dead_letter_count });
    view! {
        <tr class=TR data-stream=row_id data-state=state>
            <td class=TD><code class="break-all text-xs">{s.url}</code><span class="block text-xs text-zinc-600 dark:text-zinc-300">{s.id}" · "{s.kind}" · "{s.format}" · "{s.auth}" · batches of "{s.batch_entries}</span></td>
            <td class=TD data-testid="stream-state">{s.state.replace('_', " ")}</td>
            <td class=TD data-testid="stream-cursor" data-seq=s.acked_seq.to_string()>{s.acked_seq.to_string()}{s.acked_at.map(|t| view! { " · "<Time rfc3339=t /> })}</td>
            <td class=TD data-testid="stream-lag" data-entries=s.lag_entries.to_string()>{behind}</td>
            <td class=TD>{error}{dead}</td>
            <td class=TD>{s.created_by}" · "<Time rfc3339=s.created_at /></td>
            <td class=TD>
                <form method="post" action="/api/delete_stream">
                    <input type="hidden" name="id" value=delete_id />
                    <button type="submit" class=BUTTON data-testid="delete-stream">"Remove"</button>
                </form>
            </td>
        </tr>
    }
}

/// How many entries a stream's receiver refused for good, and the oldest of them (`seqs`,
/// at most 20) each with a Retry button.
#[component]
fn DeadLetters(id: String, seqs: Vec<i64>, total: i64) -> impl IntoView {
    let label = match total - seqs.len() as i64 {
        more if more > 0 => {
            format!("Dead letters (refused for good, skipped): {total}, the oldest {} here", seqs.len())
        }
        _ => format!("Dead letters (refused for good, skipped): {total}"),
    };
    (!seqs.is_empty()).then(|| {
        view! {
            <div class="mt-1 text-xs" data-testid="stream-dead-letters" data-count=total.to_string()>
                <span class="block">{label}</span>
                {seqs.into_iter().map(|seq| view! {
                    <form method="post" action="/api/retry_stream_dead_letter" class="mr-1 inline">
                        <input type="hidden" name="id" value=id.clone() />
                        <input type="hidden" name="seq" value=seq.to_string() />
                        <button type="submit" class=BUTTON>{format!("Retry entry {seq}")}</button>
                    </form>
                }).collect_view()}
            </div>
        }
    })
}

#[component]
fn StreamForm() -> impl IntoView {
    view! {
        <form method="post" action="/api/create_stream" class=PANEL data-testid="create-stream">
            <h2 class="text-sm font-semibold">"Add a log stream"</h2>
            <label class=FIELD><span class=LABEL>"Collector URL"</span>
                <input name="url" type="url" required placeholder="https://collector.example.com/naive" class=format!("{INPUT} max-w-full") />
            </label>
            <label class=FIELD><span class=LABEL>"Kind"</span>
                <select name="kind" class=format!("{INPUT} max-w-full")>
                    <option value="ndjson">"Newline-delimited JSON over HTTPS"</option>
                    <option value="splunk_hec">"Splunk HTTP Event Collector"</option>
                    <option value="otlp">"OpenTelemetry logs (OTLP/HTTP)"</option>
                </select>
            </label>
            <label class=FIELD><span class=LABEL>"Events"</span>
                <select name="format" class=format!("{INPUT} max-w-full")>
                    <option value="entry">"Log entries as /v1/logs shows them"</option>
                    <option value="ocsf">"OCSF 1.5.0 events"</option>
                </select>
            </label>
            <label class=FIELD><span class=LABEL>"Collector token (required for Splunk HEC; leave empty to have batches signed with a secret shown once)"</span>
                <input name="token" type="password" autocomplete="off" class=format!("{INPUT} max-w-full") />
            </label>
            <label class=FIELD><span class=LABEL>"Start"</span>
                <select name="start" class=format!("{INPUT} max-w-full")>
                    <option value="now">"From now on"</option>
                    <option value="beginning">"From the oldest entry in the database"</option>
                </select>
            </label>
            <button type="submit" class=PRIMARY>"Add stream"</button>
        </form>
    }
}
