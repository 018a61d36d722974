//! Connectors (`/connectors`, admins only): where each primitive's calls are carried out, a
//! test button that shows what the upstream answers, the connected apps (upstream MCP servers
//! whose tools agents call as `connections.execute`), and the vault's secrets (names and
//! fingerprints; a value goes in once and is never shown). Every form is a plain post, so the
//! page works without JavaScript.

use leptos::prelude::*;

use crate::api::connectors::{ConnectorRow, ConnectorsData, SecretRow, connectors_page};
use crate::components::common::{
    CARD, FormOutcome, INPUT, Loading, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};

const BUTTON: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";
const PRIMARY: &str =
    "rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900";
const PANEL: &str = "mt-6 max-w-3xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";
const LABEL: &str = "text-zinc-600 dark:text-zinc-300";
/// A field that shrinks with a phone's screen instead of widening the page.
const FIELD: &str = "flex min-w-0 max-w-full flex-col text-sm";

fn control() -> String {
    format!("{INPUT} max-w-full")
}

/// How a row's credential travels, and which secret it is: never its value.
fn credential(r: &ConnectorRow) -> String {
    match (&r.secret, &r.header) {
        (Some(s), Some(h)) => format!("{h} header · {s}"),
        (Some(s), None) => format!("{} · {s}", r.auth),
        _ => "—".to_string(),
    }
}

#[component]
pub fn ConnectorsPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| connectors_page());
    view! {
        <PageHeader title="Connectors" subtitle="Where each primitive's calls are carried out. The sandbox is built in: nothing real happens there. An HTTP upstream is your provider, reached with a credential from the vault that agents never see." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |d: ConnectorsData| view! {
                    <ConnectorTable rows=d.rows />
                    <ConnectorForm targets=d.targets secrets=d.secrets.iter().map(|s| s.name.clone()).collect() />
                    <h2 class="mt-8 mb-2 text-base font-semibold">"Connected apps"</h2>
                    <p class="mb-3 text-sm text-zinc-600 dark:text-zinc-300">"Upstream MCP servers, each under a toolkit name. Agents list their tools with connections.tools (filtered by the kit's toolkit rules) and call them with connections.execute. A tool annotated read-only is a read, one annotated destructive parks where the kit says destructive tools park, and one without annotations is gated as a write."</p>
                    <AppTable apps=d.apps />
                    <AppForm secrets=d.secrets.iter().map(|s| s.name.clone()).collect() />
                    <h2 class="mt-8 mb-2 text-base font-semibold">"Vault"</h2>
                    <p class="mb-3 text-sm text-zinc-600 dark:text-zinc-300">"Provider credentials, encrypted at rest. A value is written once and never shown again; the fingerprint tells two values apart without revealing either."</p>
                    <SecretTable secrets=d.secrets />
                    <SecretForm />
                })
            })}
        </Suspense>
    }
}

#[component]
fn ConnectorTable(rows: Vec<ConnectorRow>) -> impl IntoView {
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="connectors-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Target"</th>
                        <th class=TH>"Runs on"</th>
                        <th class=TH>"Credential"</th>
                        <th class=TH>"Changed"</th>
                        <th class=TH>"Check"</th>
                    </tr>
                </thead>
                <tbody>{rows.into_iter().map(|r| view! { <ConnectorLine r /> }).collect_view()}</tbody>
            </table>
        </div>
    }
}

/// A setting that cannot be used now, said where the setting is: its calls are refused
/// `unavailable` until an admin fixes it, and nothing else of the tenant is affected.
#[component]
fn Problem(problem: Option<String>) -> impl IntoView {
    problem.map(|code| {
        view! {
            <p role="status" data-testid="connector-problem" class="mt-1 text-xs font-medium text-red-700 dark:text-red-300">
                "Cannot be used: "<code>{code}</code>". Its calls answer unavailable until this is fixed (store the secret again, or point it at another)."
            </p>
        }
    })
}

#[component]
fn ConnectorLine(r: ConnectorRow) -> impl IntoView {
    let runs_on = match &r.url {
        Some(url) => view! {
            <span class="rounded bg-sky-100 px-1.5 py-0.5 text-xs font-medium text-sky-900 dark:bg-sky-900/50 dark:text-sky-200">"http"</span>
            " "<code class="break-all text-xs">{url.clone()}</code>
            <span class="text-xs text-zinc-600 dark:text-zinc-300">{format!(" · {} ms", r.timeout_ms.unwrap_or_default())}</span>
        }
        .into_any(),
        None => view! {
            <span class="rounded bg-zinc-100 px-1.5 py-0.5 text-xs font-medium text-zinc-700 dark:bg-zinc-800 dark:text-zinc-200">"sandbox"</span>
        }
        .into_any(),
    };
    let credential = credential(&r);
    let updated = r.updated.clone().map(|(by, at)| view! { {by}" · "<Time rfc3339=at /> });
    let (target, shown, row_target) = (r.target.clone(), r.target.clone(), r.target.clone());
    view! {
        <tr class=TR data-target=row_target data-kind=r.kind.clone()>
            <td class=TD><code class="font-medium">{shown}</code></td>
            <td class=TD>{runs_on}<Problem problem=r.problem.clone() /></td>
            <td class=TD>{credential}</td>
            <td class=TD>{updated}</td>
            <td class=TD>
                <form method="post" action="/api/test_connector">
                    <input type="hidden" name="target" value=target />
                    <button type="submit" class=BUTTON data-testid="test-connector">"Test connection"</button>
                </form>
            </td>
        </tr>
    }
}

#[component]
fn ConnectorForm(targets: Vec<String>, secrets: Vec<String>) -> impl IntoView {
    view! {
        <form method="post" action="/api/save_connector" class=PANEL data-testid="set-connector">
            <h2 class="text-sm font-semibold">"Set a connector"</h2>
            <p class="text-xs text-zinc-600 dark:text-zinc-300">"An action's connector (cards.charge) wins over its primitive's (cards). The upstream gets the checked arguments and the action id as its Idempotency-Key, and answers the result and the actual cost."</p>
            <div class="flex flex-wrap gap-3">
                <label class=FIELD><span class=LABEL>"Target"</span>
                    <select name="target" class=control()>{targets.into_iter().map(|t| { let v = t.clone(); view! { <option value=v>{t}</option> } }).collect_view()}</select>
                </label>
                <label class=FIELD><span class=LABEL>"Runs on"</span>
                    <select name="kind" class=control()>
                        <option value="http">"HTTP upstream"</option>
                        <option value="sandbox">"sandbox"</option>
                    </select>
                </label>
                <label class=FIELD><span class=LABEL>"Timeout (ms)"</span>
                    <input name="timeout_ms" type="number" min="100" max="300000" value="10000" class=control() />
                </label>
            </div>
            <label class=FIELD><span class=LABEL>"Upstream URL"</span>
                <input name="url" type="url" placeholder="https://processor.example.com/charge" class=control() />
            </label>
            <div class="flex flex-wrap gap-3">
                <label class=FIELD><span class=LABEL>"Credential travels as"</span>
                    <select name="auth" class=control()>
                        <option value="bearer">"Authorization: Bearer"</option>
                        <option value="basic">"Authorization: Basic (user:password)"</option>
                        <option value="header">"a named header"</option>
                        <option value="hmac">"an HMAC signature of the body"</option>
                        <option value="none">"none"</option>
                    </select>
                </label>
                <label class=FIELD><span class=LABEL>"Secret"</span>
                    <select name="secret" class=control()>
                        <option value="">"(none)"</option>
                        {secrets.into_iter().map(|s| { let v = s.clone(); view! { <option value=v>{s}</option> } }).collect_view()}
                    </select>
                </label>
                <label class=FIELD><span class=LABEL>"Header name (for a named header)"</span>
                    <input name="header" placeholder="X-Api-Key" class=control() />
                </label>
            </div>
            <button type="submit" class=PRIMARY>"Save connector"</button>
        </form>
    }
}

#[component]
fn AppTable(apps: Vec<ConnectorRow>) -> impl IntoView {
    if apps.is_empty() {
        return view! { <p class="text-sm text-zinc-600 dark:text-zinc-300" data-testid="no-apps">"No connected apps yet."</p> }.into_any();
    }
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="apps-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Toolkit"</th>
                        <th class=TH>"MCP server"</th>
                        <th class=TH>"Credential"</th>
                        <th class=TH>"Changed"</th>
                        <th class=TH>"Check"</th>
                    </tr>
                </thead>
                <tbody>{apps.into_iter().map(|a| view! { <AppLine a /> }).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn AppLine(a: ConnectorRow) -> impl IntoView {
    let credential = credential(&a);
    let updated = a.updated.clone().map(|(by, at)| view! { {by}" · "<Time rfc3339=at /> });
    let (test, remove, row) = (a.target.clone(), a.target.clone(), a.target.clone());
    view! {
        <tr class=TR data-toolkit=row>
            <td class=TD><code class="font-medium">{a.target.clone()}</code></td>
            <td class=TD>
                <span class="rounded bg-violet-100 px-1.5 py-0.5 text-xs font-medium text-violet-900 dark:bg-violet-900/50 dark:text-violet-200">"mcp"</span>
                " "<code class="break-all text-xs">{a.url.clone().unwrap_or_default()}</code>
                <Problem problem=a.problem.clone() />
            </td>
            <td class=TD>{credential}</td>
            <td class=TD>{updated}</td>
            <td class=TD>
                <div class="flex flex-wrap gap-1">
                    <form method="post" action="/api/test_connected_app">
                        <input type="hidden" name="toolkit" value=test />
                        <button type="submit" class=BUTTON data-testid="test-app">"List tools"</button>
                    </form>
                    <form method="post" action="/api/delete_connected_app">
                        <input type="hidden" name="toolkit" value=remove />
                        <button type="submit" class=BUTTON>"Remove"</button>
                    </form>
                </div>
            </td>
        </tr>
    }
}

#[component]
fn AppForm(secrets: Vec<String>) -> impl IntoView {
    view! {
        <form method="post" action="/api/save_connected_app" class=PANEL data-testid="set-app">
            <h2 class="text-sm font-semibold">"Connect an app"</h2>
            <div class="flex flex-wrap gap-3">
                <label class=FIELD><span class=LABEL>"Toolkit"</span>
                    <input name="toolkit" required pattern="[a-z][a-z0-9_\\-]{0,63}" title="lowercase letters, digits, _ and -, starting with a letter" placeholder="tracker" class=control() />
                </label>
                <label class=FIELD><span class=LABEL>"Timeout (ms)"</span>
                    <input name="timeout_ms" type="number" min="100" max="300000" value="10000" class=control() />
                </label>
            </div>
            <label class=FIELD><span class=LABEL>"MCP server URL (streamable HTTP)"</span>
                <input name="url" type="url" required placeholder="https://tracker.example.com/mcp" class=control() />
            </label>
            <div class="flex flex-wrap gap-3">
                <label class=FIELD><span class=LABEL>"Credential travels as"</span>
                    <select name="auth" class=control()>
                        <option value="bearer">"Authorization: Bearer"</option>
                        <option value="basic">"Authorization: Basic (user:password)"</option>
                        <option value="header">"a named header"</option>
                        <option value="none">"none"</option>
                    </select>
                </label>
                <label class=FIELD><span class=LABEL>"Secret"</span>
                    <select name="secret" class=control()>
                        <option value="">"(none)"</option>
                        {secrets.into_iter().map(|s| { let v = s.clone(); view! { <option value=v>{s}</option> } }).collect_view()}
                    </select>
                </label>
                <label class=FIELD><span class=LABEL>"Header name (for a named header)"</span>
                    <input name="header" placeholder="X-Api-Key" class=control() />
                </label>
            </div>
            <button type="submit" class=PRIMARY>"Connect app"</button>
        </form>
    }
}

#[component]
fn SecretTable(secrets: Vec<SecretRow>) -> impl IntoView {
    if secrets.is_empty() {
        return view! { <p class="text-sm text-zinc-600 dark:text-zinc-300" data-testid="no-secrets">"No secrets yet."</p> }.into_any();
    }
    view! {
        <div class=CARD tabindex="0">
            <table class=TABLE data-testid="secrets-table">
                <thead class=THEAD>
                    <tr>
                        <th class=TH>"Name"</th>
                        <th class=TH>"Fingerprint"</th>
                        <th class=TH>"Stored by"</th>
                        <th class=TH>"Changed"</th>
                        <th class=TH>"Last used"</th>
                        <th class=TH>"Remove"</th>
                    </tr>
                </thead>
                <tbody>
                    {secrets.into_iter().map(|s| {
                        let (name, row_name) = (s.name.clone(), s.name.clone());
                        view! {
                            <tr class=TR data-secret=row_name>
                                <td class=TD><code class="font-medium">{s.name}</code></td>
                                <td class=TD><code class="text-xs">{s.fingerprint}</code></td>
                                <td class=TD>{s.created_by}</td>
                                <td class=TD><Time rfc3339=s.updated_at /></td>
                                <td class=TD>{match s.last_used_at {
                                    Some(t) => view! { <Time rfc3339=t /> }.into_any(),
                                    None => view! { <span>"never"</span> }.into_any(),
                                }}</td>
                                <td class=TD>
                                    <form method="post" action="/api/delete_secret">
                                        <input type="hidden" name="name" value=name />
                                        <button type="submit" class=BUTTON>"Delete"</button>
                                    </form>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn SecretForm() -> impl IntoView {
    view! {
        <form method="post" action="/api/store_secret" class=PANEL data-testid="store-secret">
            <h2 class="text-sm font-semibold">"Store a secret"</h2>
            <div class="flex flex-wrap gap-3">
                <label class=FIELD><span class=LABEL>"Name"</span>
                    <input name="name" required pattern="[a-z0-9][a-z0-9._\\-]{0,63}" title="lowercase letters, digits, . _ -" placeholder="card-processor" class=control() />
                </label>
                <label class=FIELD><span class=LABEL>"Value"</span>
                    <input name="value" type="password" required autocomplete="new-password" class=control() />
                </label>
            </div>
            <p class="text-xs text-zinc-600 dark:text-zinc-300">"Storing a name again replaces its value; connectors use the new one from their next call."</p>
            <button type="submit" class=PRIMARY>"Store secret"</button>
        </form>
    }
}
