//! The architecture's rules, checked on the source text in the spirit of TigerBeetle's `tidy`
//! (see `docs/architecture.md`):
//!
//! - every gateway table is written (INSERT, UPDATE, DELETE) by one module, its owner; every
//!   other module goes through the owner's functions;
//! - no function in a crate's `src` grows past [`MAX_FN_LINES`] lines (tests read as scripts
//!   and are left out). The long ones of today are listed in
//!   [`LONG_FNS`]; the list can only shrink, because a listed function that has become short
//!   (or gone) fails the test until its line is deleted.
//!
//! Test modules (`#[cfg(test)] mod tests`) and the load generator (`gateway/src/bin`, which
//! seeds rows directly to be fast) are outside the ownership rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FN_LINES: usize = 70;

/// Each table, and the module (a file, or a folder ending in `/`) that alone writes it.
const OWNERS: &[(&str, &str)] = &[
    ("activity", "activity.rs"),
    ("agent_keys", "keys.rs"),
    ("agent_profiles", "profiles.rs"),
    ("approval_trail", "approvals.rs"),
    ("approvals", "approvals.rs"),
    ("beliefs", "brain.rs"),
    ("budget_accounts", "ledger/"),
    ("carries", "recovery.rs"),
    ("company_keys", "tenants.rs"),
    ("connected_apps", "connectors/app_config.rs"),
    ("connectors", "connectors/config.rs"),
    ("console_sessions", "sessions.rs"),
    ("console_users", "users.rs"),
    ("holds", "ledger/"),
    ("idempotency", "reserve.rs"),
    ("kits", "kits.rs"),
    ("ledger_entries", "ledger/"),
    ("login_attempts", "logins.rs"),
    ("outbox", "outbox/"),
    ("outbox_queues", "outbox/"),
    ("pending_upgrades", "upgrades.rs"),
    ("proposal_trail", "brain.rs"),
    ("proposals", "brain.rs"),
    ("refusal_repeats", "reserve.rs"),
    ("request_idempotency", "idempotency.rs"),
    ("runtimes", "runtime/registry.rs"),
    ("secret_handovers", "handovers.rs"),
    ("tenants", "tenants.rs"),
    ("user_tokens", "tokens.rs"),
    ("vault_keys", "vault.rs"),
    ("vault_master", "vault.rs"),
    ("vault_secrets", "vault.rs"),
    ("webhook_endpoints", "webhooks/"),
    ("writebacks", "brain.rs"),
];

/// Functions longer than [`MAX_FN_LINES`] today, as `path:name`. Shorten one, then delete its
/// line; never add one.
const LONG_FNS: &[&str] = &[
    "app/src/components/kit_editor/form.rs:KitEditor",
    "app/src/components/kit_editor/island.rs:KitEditorIsland",
    "app/src/pages/beliefs.rs:BeliefsPage",
    "app/src/pages/profiles.rs:ProfileView",
    "app/src/pages/proposals.rs:ProposalsPage",
    "app/src/pages/spend.rs:Ledger",
    "app/src/pages/users.rs:UsersPage",
    "gateway/src/bin/gateway-load.rs:seed_console",
    "gateway/src/brain.rs:decide_proposal",
    "gateway/src/demo.rs:seed_demo_if_empty",
    "gateway/src/tokens.rs:issue_user_token",
    "gateway/src/users.rs:create_user_as",
    "gateway/src/writer.rs:run",
    "policy/src/engine.rs:run_checks",
    "server/src/http/idempotency.rs:layer",
    "server/src/v1/openapi.rs:connector_schemas",
    "server/src/startup.rs:build",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's text without its test module, which may write any table to set a case up.
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// The tables a text writes to.
fn written_tables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for verb in ["INSERT INTO ", "UPDATE ", "DELETE FROM "] {
        for (at, _) in text.match_indices(verb) {
            let rest = &text[at + verb.len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            let after = rest[name.len()..].trim_start();
            let looks_like_sql = after.starts_with("SET")
                || after.starts_with('(')
                || after.starts_with("AS ")
                || after.starts_with("WHERE")
                || after.starts_with("VALUES")
                || after.starts_with('"')
                || after.starts_with('\\');
            if !name.is_empty() && looks_like_sql {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_table_is_written_by_its_owner_alone() {
    let src = root().join("gateway/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let owners: BTreeMap<&str, &str> = OWNERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("bin/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for table in written_tables(without_tests(&text)) {
            match owners.get(table.as_str()) {
                None => wrong.push(format!("{rel} writes `{table}`, which has no owner: add it to OWNERS")),
                Some(owner) if !(rel == *owner || owner.ends_with('/') && rel.starts_with(owner)) => wrong
                    .push(format!(
                        "{rel} writes `{table}`, which {owner} owns: call a function of {owner} instead"
                    )),
                Some(_) => {}
            }
        }
    }
    assert!(wrong.is_empty(), "tables written outside their owner:\n{}", wrong.join("\n"));
}

/// Every function in `text` with its length in lines, from its `fn` line to its closing brace
/// (rustfmt puts that brace at the `fn` line's indent). Declarations without a body are skipped.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(name) = fn_name(trimmed) else { continue };
        let indent = &line[..line.len() - trimmed.len()];
        let close = format!("{indent}}}");
        let body = lines[i..].iter().position(|l| l.trim_end().ends_with('{') || l.trim_end().ends_with(';'));
        if body.is_none_or(|b| lines[i + b].trim_end().ends_with(';')) || trimmed.trim_end().ends_with('}') {
            continue;
        }
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            out.push((name, end + 1));
        }
    }
    out
}

/// The name a line declares a function with, if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn no_function_grows_past_seventy_lines() {
    let root = root();
    let mut long = BTreeSet::new();
    for krate in ["policy", "gateway", "app", "server", "frontend"] {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files);
        for file in &files {
            let rel = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(file).unwrap();
            for (name, len) in functions(&text) {
                if len > MAX_FN_LINES {
                    long.insert(format!("{rel}:{name}"));
                }
            }
        }
    }
    let listed: BTreeSet<String> = LONG_FNS.iter().map(|s| s.to_string()).collect();
    let grown: Vec<_> = long.difference(&listed).collect();
    let shrunk: Vec<_> = listed.difference(&long).collect();
    assert!(
        grown.is_empty(),
        "functions past {MAX_FN_LINES} lines; split them into steps that each say what they do:\n{grown:#?}"
    );
    assert!(
        shrunk.is_empty(),
        "these are short now (or gone): delete their lines from LONG_FNS:\n{shrunk:#?}"
    );
}

#[test]
fn the_scanners_see_what_they_look_for() {
    let sql = "c.exec(\"UPDATE holds SET x = 1\", &[])?; c.exec(\"INSERT INTO refusal_repeats AS r (a)\")\n\
               \"DELETE FROM outbox WHERE seq = ?\" // an UPDATE of the plan";
    assert_eq!(written_tables(sql), ["holds", "outbox", "refusal_repeats"].map(String::from).into());
    let code = "fn short() {\n}\n    pub(crate) async fn long(\n        a: u8,\n    ) -> u8 {\n        a\n    }\n    fn decl(&self);\n";
    assert_eq!(functions(code), [("short".to_string(), 2), ("long".to_string(), 5)]);
}
