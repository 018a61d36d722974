//! The architecture's rules, checked on the source text in the spirit of TigerBeetle's `tidy`
//! (see `docs/architecture.md`):
//!
//! - every gateway table is written (INSERT, UPDATE, DELETE) by one module, its owner; every
//!   other module goes through the owner's functions;
//! - no function in a crate's `src` grows past [`MAX_FN_LINES`] lines (tests read as scripts
//!   and are left out). The long ones of today are listed in
//!   [`LONG_FNS`] with their lengths; the list only tightens, because a listed function that
//!   grows fails, and one that has become shorter (or gone) fails until its entry is lowered.
//!
//! - a file of `gateway/src` names (`crate::…`) only its own layer and the layers below it
//!   ([`LAYERS`]).
//!
//! - `gateway/src/ops/` holds no SQL ([`the_operations_hold_no_sql`]): an operation composes
//!   the owners' functions, and only `ops/upgrades.rs`, which owns its table, writes a statement;
//!
//! - an `ops/` family calls no other family's operations ([`no_operation_calls_another_family_sideways`]):
//!   what every operation reads (the clock, the caches, the change signals, the secret opener,
//!   the lookups by id) sits below them in `ops/base/`, which calls no family; the compositions
//!   of today are listed in [`COMPOSITIONS`] and the list only shrinks;
//!
//! - `gateway` names no database driver (`rusqlite`, `sqlx`): in its manifest, its sources,
//!   its tests and its load generator, storage is the `store` crate's;
//!
//! - the files of each crate's `src` (`policy`, `store`, `gateway`, `app`, `server`) import each
//!   other without a cycle
//!   ([`the_import_graphs_have_no_cycle`]; it prints each graph's size, and
//!   `NAIVE_TIDY_ROOT=<another checkout>` reads that checkout instead, to compare).
//!
//! Test modules (`#[cfg(test)] mod tests`) and the load generator (`gateway/src/bin`, which
//! seeds rows directly to be fast) are outside the ownership rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FN_LINES: usize = 70;

/// Each table, and the module (a file, or a folder ending in `/`) that alone writes it.
const OWNERS: &[(&str, &str)] = &[
    ("activity", "audit/activity.rs"),
    ("agent_keys", "domain/keys.rs"),
    ("agent_profiles", "domain/profiles.rs"),
    ("approval_trail", "domain/approvals.rs"),
    ("approval_votes", "domain/approvals.rs"),
    ("approvals", "domain/approvals.rs"),
    ("archive_ranges", "domain/archive.rs"),
    ("beliefs", "domain/brain.rs"),
    ("budget_accounts", "domain/ledger/"),
    ("budget_days", "domain/ledger/"),
    ("carries", "domain/in_flight.rs"),
    ("pending_inputs", "domain/in_flight.rs"),
    ("kit_shadows", "domain/shadow.rs"),
    ("company_keys", "domain/tenants.rs"),
    ("connected_apps", "delivery/connectors/app_config.rs"),
    ("connectors", "delivery/connectors/config.rs"),
    ("console_sessions", "domain/sessions.rs"),
    ("console_users", "domain/users.rs"),
    ("group_members", "domain/groups.rs"),
    ("holds", "domain/ledger/"),
    ("idempotency", "domain/reserve/claims.rs"),
    ("kits", "domain/kits.rs"),
    ("ledger_carried", "domain/ledger/retention.rs"),
    ("ledger_cuts", "domain/ledger/retention.rs"),
    ("ledger_entries", "domain/ledger/"),
    ("log_checkpoints", "audit/activity.rs"),
    ("log_streams", "delivery/streams/"),
    ("log_stream_dead_letters", "delivery/streams/"),
    ("login_attempts", "domain/logins.rs"),
    ("oauth_clients", "domain/oauth.rs"),
    ("oauth_codes", "domain/oauth.rs"),
    ("oauth_connections", "domain/oauth.rs"),
    ("oauth_connectors", "domain/oauth.rs"),
    ("oauth_refresh_tokens", "domain/oauth.rs"),
    ("oauth_settings", "domain/oauth.rs"),
    ("outbox", "delivery/outbox/"),
    ("outbox_queues", "delivery/outbox/"),
    ("pending_upgrades", "ops/upgrades.rs"),
    ("proposal_trail", "domain/brain.rs"),
    ("proposals", "domain/brain.rs"),
    ("rate_counts", "domain/reserve/windows.rs"),
    ("refusal_repeats", "domain/reserve/repeats.rs"),
    ("request_idempotency", "domain/idempotency.rs"),
    ("runtimes", "delivery/runtime/registry.rs"),
    ("scim_group_members", "domain/scim/"),
    ("scim_groups", "domain/scim/"),
    ("scim_tokens", "domain/scim/"),
    ("scim_users", "domain/scim/"),
    ("secret_handovers", "domain/handovers.rs"),
    ("slack_apps", "delivery/slack/"),
    ("slack_link_codes", "domain/slack_links.rs"),
    ("slack_links", "domain/slack_links.rs"),
    ("slack_messages", "delivery/slack/"),
    ("slack_requests", "domain/slack_links.rs"),
    ("sso_connections", "domain/sso.rs"),
    ("sso_domains", "domain/sso.rs"),
    ("sso_logins", "domain/sso.rs"),
    ("tenants", "domain/tenants.rs"),
    ("user_groups", "domain/groups.rs"),
    ("user_identities", "domain/sso.rs"),
    ("user_tokens", "domain/tokens.rs"),
    ("vault_keys", "domain/vault.rs"),
    ("vault_master", "domain/vault.rs"),
    ("vault_secrets", "domain/vault.rs"),
    ("webhook_endpoints", "delivery/webhooks/"),
    ("writebacks", "domain/brain.rs"),
];

/// Functions longer than [`MAX_FN_LINES`] today, as `path:name` and their length in lines.
/// A listed function may not grow; one that shrinks fails until its length here is lowered
/// (or its line deleted, once it is short), so the list only tightens. Never add one.
const LONG_FNS: &[(&str, usize)] = &[
    ("app/src/components/kit_editor/form.rs:KitEditor", 113),
    ("app/src/pages/beliefs.rs:BeliefsPage", 72),
    ("app/src/pages/profiles.rs:ProfileView", 101),
    ("app/src/pages/proposals.rs:ProposalsPage", 77),
    ("app/src/pages/spend.rs:Ledger", 71),
    ("gateway/src/ops/demo.rs:seed_demo_if_empty", 111),
    ("policy/src/engine.rs:run_checks", 128),
    ("server/src/http/idempotency.rs:layer", 83),
    ("server/src/startup.rs:build", 93),
    ("server/src/v1/openapi.rs:connector_schemas", 81),
    ("store/src/writer.rs:run", 76),
];

/// The layers of `gateway/src`, lowest first, each with the top-level modules (or folders) in
/// it. The crate root's own items (`Gateway`, its config) sit above them all.
const LAYERS: &[&[&str]] = &[
    // With the `store` crate below them all (its modules re-exported at the root).
    &["cache", "csv", "error", "ids", "secrets"],
    &["audit"],
    &["domain"],
    &["delivery"],
    &["ops"],
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
fn the_gateway_names_no_database_driver() {
    let root = root();
    let mut files = vec![root.join("gateway/Cargo.toml")];
    rust_files(&root.join("gateway/src"), &mut files);
    rust_files(&root.join("gateway/tests"), &mut files);
    let drivers = ["rusqlite", "sqlx"];
    let mut named = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("tidy.rs")) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if drivers.iter().any(|d| line.contains(d)) {
                let rel = file.strip_prefix(&root).unwrap().display();
                named.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 50, "read the gateway: {} files", files.len());
    assert!(
        named.is_empty(),
        "the gateway names a driver; go through the store crate:\n{}",
        named.join("\n")
    );
}

#[test]
fn no_function_grows_past_seventy_lines() {
    let root = root();
    let mut long = BTreeMap::new();
    for krate in ["policy", "store", "gateway", "app", "server", "frontend"] {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files);
        for file in &files {
            let rel = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(file).unwrap();
            for (name, len) in functions(&text) {
                if len > MAX_FN_LINES {
                    long.insert(format!("{rel}:{name}"), len);
                }
            }
        }
    }
    let listed: BTreeMap<String, usize> =
        LONG_FNS.iter().map(|(name, len)| (name.to_string(), *len)).collect();
    let grown: Vec<_> = long
        .iter()
        .filter(|(name, len)| listed.get(*name).is_none_or(|was| *len > was))
        .map(|(name, len)| format!("{name}: {len} lines (listed: {:?})", listed.get(name)))
        .collect();
    let shrunk: Vec<_> = listed
        .iter()
        .filter(|(name, was)| long.get(*name).is_none_or(|len| len < was))
        .map(|(name, was)| format!("{name}: {was} -> {:?}", long.get(name)))
        .collect();
    assert!(
        grown.is_empty(),
        "functions past {MAX_FN_LINES} lines, or longer than LONG_FNS records; split them into \
         steps that each say what they do:\n{grown:#?}"
    );
    assert!(
        shrunk.is_empty(),
        "these are shorter now (or gone): lower their lengths in LONG_FNS, or delete the line \
         of one that is short:\n{shrunk:#?}"
    );
}

/// The one `ops/` file that holds SQL: it owns its table ([`OWNERS`]: `pending_upgrades`).
const OPS_SQL_OWNERS: &[&str] = &["gateway/src/ops/upgrades.rs"];

#[test]
fn the_operations_hold_no_sql() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("gateway/src/ops"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if OPS_SQL_OWNERS.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in without_tests(&text).lines().enumerate() {
            if ["\"SELECT ", "\"INSERT ", "\"UPDATE ", "\"DELETE ", "\"WITH "]
                .iter()
                .any(|k| line.contains(k))
            {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 20, "read gateway/src/ops: {} files", files.len());
    assert!(
        found.is_empty(),
        "SQL in ops/: an operation composes the owners' functions (domain, delivery, audit); \
         move the statement to the module that owns its table:\n{}",
        found.join("\n")
    );
}

/// Operations that compose another family's operation today, as `caller -> callee: method`
/// (files under `gateway/src/ops/`). The list only shrinks: a composition that is gone fails
/// until its line is deleted, and a new one fails until it goes below the families
/// (`ops/base/`) or into a domain job. `demo.rs` is above them all (it seeds a tenant through
/// the operations a user would call) and is not listed.
const COMPOSITIONS: &[&str] = &[
    "actions.rs -> credentials.rs: authenticate",
    "approvals.rs -> actions.rs: carry_out",
    "approvals.rs -> brain.rs: canonize",
    "approvals.rs -> idempotency.rs: forget_old_requests",
    "approvals.rs -> resend.rs: recover_lost_calls",
    "brain.rs -> actions.rs: governed_in_job",
    "brain.rs -> proposals.rs: writeback",
    "outbox.rs -> webhooks.rs: send_webhooks",
    "outbox.rs -> webhooks.rs: webhook",
    "replay.rs -> kits.rs: kit_saved",
    "replay.rs -> kits.rs: kit_versions",
    "runtime.rs -> vault.rs: put_secret",
    "users.rs -> logins.rs: sign_in_failed",
];

/// Each `self.name(` call in `text` (whitespace between the parts allowed, as rustfmt splits
/// chains), by name.
fn self_calls(text: &str) -> Vec<String> {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    for (i, _) in squeezed.match_indices("self.") {
        let rest = &squeezed[i + 5..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after = &rest[name.len()..];
        if !name.is_empty() && (after.starts_with('(') || after.starts_with("::<")) {
            out.push(name);
        }
    }
    out
}

#[test]
fn no_operation_calls_another_family_sideways() {
    let root = root();
    let ops = root.join("gateway/src/ops");
    let mut files = Vec::new();
    rust_files(&ops, &mut files);
    let rel = |f: &Path| f.strip_prefix(&ops).unwrap().to_string_lossy().replace('\\', "/");
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|f| (rel(f), without_tests(&std::fs::read_to_string(f).unwrap()).to_string()))
        .collect();
    let mut defined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &texts {
        for line in text.lines() {
            if let Some(name) = fn_name(line.trim_start()) {
                defined.entry(name).or_default().insert(file.clone());
            }
        }
    }
    let (mut found, mut upward) = (BTreeSet::new(), Vec::new());
    for (file, text) in &texts {
        for name in self_calls(text) {
            let Some(owners) = defined.get(&name).filter(|o| o.len() == 1 && !o.contains(file)) else {
                continue;
            };
            let owner = owners.iter().next().unwrap();
            match (file.starts_with("base/"), owner.starts_with("base/")) {
                (_, true) => {}
                (true, false) => upward.push(format!("{file} -> {owner}: {name}")),
                (false, false) if file == "demo.rs" => {}
                (false, false) => {
                    found.insert(format!("{file} -> {owner}: {name}"));
                }
            }
        }
    }
    assert!(texts.len() > 30, "read gateway/src/ops: {} files", texts.len());
    assert!(upward.is_empty(), "ops/base/ calls a family above it:\n{}", upward.join("\n"));
    let listed: BTreeSet<String> = COMPOSITIONS.iter().map(|s| s.to_string()).collect();
    let new: Vec<_> = found.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&found).collect();
    assert!(
        new.is_empty(),
        "an operation calls another family's: move what both read into ops/base/, or the rule \
         into a domain job both call:\n{new:#?}"
    );
    assert!(gone.is_empty(), "these compositions are gone: delete their lines from COMPOSITIONS:\n{gone:#?}");
}

/// The layer of a top-level module or folder of `gateway/src`. The crate root's own items
/// (`Gateway`, its config, and anything unknown) belong to the operations, the top layer:
/// `ops/` is where `impl Gateway` lives.
fn layer_of(name: &str, reexports: &BTreeMap<String, String>) -> usize {
    let name = reexports.get(name).map_or(name, String::as_str);
    if name.starts_with("::") {
        // Another crate's module the root re-exports (`pub use ::store::sql;`): below them all.
        return 0;
    }
    LAYERS.iter().position(|l| l.contains(&name)).unwrap_or(LAYERS.len() - 1)
}

/// The names the crate root re-exports (`pub use error::{Error, Result};`), with the
/// top-level module each comes from; `::store` for another crate's (`pub use ::store::sql;`).
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let uses = lib.lines().filter_map(|l| l.strip_prefix("pub use ").or(l.strip_prefix("pub(crate) use ")));
    for line in uses {
        let module = match line.strip_prefix("::") {
            Some(external) => format!("::{}", external.split("::").next().unwrap_or_default()),
            None => line.split("::").next().unwrap_or_default().to_string(),
        };
        let names = line.rsplit("::").next().unwrap_or_default();
        for name in names.trim_matches(|c| "{};".contains(c)).split(',') {
            out.insert(name.trim().to_string(), module.clone());
        }
    }
    out
}

/// The first segment of every `crate::` path in a file's code (not its comments).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let name: String =
                line[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn no_module_names_a_layer_above_its_own() {
    let src = root().join("gateway/src");
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        // The composition root sits above every layer; the load generator and the test
        // support (`testing`, doc-hidden) are callers, not layers.
        if rel.starts_with("bin/") || rel == "lib.rs" || rel == "testing.rs" {
            continue;
        }
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let own = layer_of(top, &reexports);
        let text = std::fs::read_to_string(&file).unwrap();
        for name in crate_paths(without_tests(&text)) {
            if layer_of(&name, &reexports) > own {
                upward.insert(format!("{rel} -> {name}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "paths that name a layer above their own (see docs/architecture.md); move the code that \
         needs them up, or pass what it needs down:\n{upward:#?}"
    );
}

#[test]
fn the_scanners_see_what_they_look_for() {
    let sql = "c.exec(\"UPDATE holds SET x = 1\", &[])?; c.exec(\"INSERT INTO refusal_repeats AS r (a)\")\n\
               \"DELETE FROM outbox WHERE seq = ?\" // an UPDATE of the plan";
    assert_eq!(written_tables(sql), ["holds", "outbox", "refusal_repeats"].map(String::from).into());
    let code = "fn short() {\n}\n    pub(crate) async fn long(\n        a: u8,\n    ) -> u8 {\n        a\n    }\n    fn decl(&self);\n";
    assert_eq!(functions(code), [("short".to_string(), 2), ("long".to_string(), 5)]);
    let paths = "use crate::domain::principal::Subject;\n/// [`crate::ops`]\nlet g: crate::Gateway = x(crate::error::Error::a);";
    assert_eq!(crate_paths(paths), ["Gateway", "domain", "error"].map(String::from).into());
    let reexports = root_reexports("pub use error::{Error, Result};\npub use domain::kits::KitRecord;\n");
    assert_eq!(layer_of("Error", &reexports), 0);
    assert_eq!(layer_of("KitRecord", &reexports), 2);
    assert_eq!(layer_of("Gateway", &reexports), LAYERS.len() - 1);
}

/// A crate's modules, by module path, each with its file (relative to `src`). Binaries
/// (`main.rs`, `bin/`) are callers of the crate, not modules of it.
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        if rel == "main.rs" || rel.starts_with("bin/") {
            continue;
        }
        let mut path: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
        if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
            path.pop();
        }
        out.insert(path, rel);
    }
    out
}

fn skip_space(s: &[char], i: &mut usize) {
    while *i < s.len() && s[*i].is_whitespace() {
        *i += 1;
    }
}

fn ident(s: &[char], i: &mut usize) -> String {
    let start = *i;
    while *i < s.len() && (s[*i].is_alphanumeric() || s[*i] == '_' || s[*i] == '*') {
        *i += 1;
    }
    s[start..*i].iter().collect()
}

/// Reads one path (or `use` tree) starting at `i` below `prefix`, pushing every full path
/// it names: `a::{self, b::C, d}` names `a`, `a::b::C` and `a::d`.
fn path_tree(s: &[char], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        skip_space(s, i);
        if *i < s.len() && s[*i] == '{' {
            *i += 1;
            loop {
                skip_space(s, i);
                if *i >= s.len() || s[*i] == '}' {
                    *i += 1;
                    return;
                }
                path_tree(s, i, path.clone(), out);
                skip_space(s, i);
                if *i < s.len() && s[*i] == ',' {
                    *i += 1;
                }
            }
        }
        match ident(s, i).as_str() {
            "" | "*" | "self" => {}
            "super" => {
                path.pop();
            }
            name => path.push(name.to_string()),
        }
        if s.get(*i..*i + 2) == Some(&[':', ':']) {
            *i += 2;
        } else {
            out.push(path);
            return;
        }
    }
}

/// Every module path a file's code names through `crate::`, `super::` or `self::`, with
/// `use` groups expanded. `here` is the file's own module path.
fn named_paths(text: &str, here: &[String]) -> Vec<Vec<String>> {
    let code: String =
        text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    for (start, prefix) in [("crate::", Vec::new()), ("super::", here.to_vec()), ("self::", here.to_vec())] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start).map(|a| a + from) {
            from = at + start.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let mut path = prefix.clone();
            if start == "super::" {
                path.pop();
            }
            let mut i = code[..from].chars().count();
            path_tree(&s, &mut i, path, &mut out);
        }
    }
    out
}

/// The file a module path lands in: its longest prefix that is a module, after the crate
/// root's re-exports (`crate::Error` is `error.rs`).
fn resolve(
    path: &[String],
    modules: &BTreeMap<Vec<String>, String>,
    reexports: &BTreeMap<String, Vec<String>>,
) -> String {
    let path: Vec<String> = match path.first().and_then(|p| reexports.get(p)) {
        Some(origin) => origin.clone(),
        None => path.to_vec(),
    };
    (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]).cloned()).unwrap_or_default()
}

/// The names a crate root re-exports, with the module path each comes from.
fn reexported_paths(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub use ")) {
        let (module, names) = line.rsplit_once("::").unwrap_or_default();
        let module: Vec<String> = module.split("::").map(String::from).collect();
        for name in names.trim_matches(|c| "{};".contains(c)).split(',') {
            out.insert(name.trim().to_string(), module.clone());
        }
    }
    out
}

/// A crate's import graph between its files (the crate root, which declares and composes
/// every module, is left out: every path into it is an upward one by construction).
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    let reexports = reexported_paths(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph = BTreeMap::new();
    for (here, file) in &modules {
        if file == "lib.rs" {
            continue;
        }
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        // A folder named as a namespace (`use crate::v1;`, `domain::{self, …}`) is not an
        // import of its `mod.rs`; an item of the folder's `mod.rs` is.
        let edges: BTreeSet<String> = named_paths(without_tests(&text), here)
            .iter()
            .filter(|p| !modules.get(*p).is_some_and(|f| f.ends_with("mod.rs")))
            .map(|p| resolve(p, &modules, &reexports))
            .filter(|to| to != file && to != "lib.rs" && !to.is_empty())
            .collect();
        graph.insert(file.clone(), edges);
    }
    graph
}

/// The groups of files that import each other in a circle (strongly connected components
/// of more than one file), each sorted, by Kosaraju's two passes.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn finish<'a>(
        g: &'a BTreeMap<String, BTreeSet<String>>,
        at: &'a str,
        seen: &mut BTreeSet<&'a str>,
        order: &mut Vec<&'a str>,
    ) {
        if seen.insert(at) {
            for next in g.get(at).into_iter().flatten() {
                finish(g, next, seen, order);
            }
            order.push(at);
        }
    }
    let mut reverse: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, tos) in graph {
        for to in tos {
            reverse.entry(to.as_str()).or_default().push(from.as_str());
        }
    }
    let (mut seen, mut order) = (BTreeSet::new(), Vec::new());
    for f in graph.keys() {
        finish(graph, f, &mut seen, &mut order);
    }
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for start in order.into_iter().rev() {
        let mut group = Vec::new();
        let mut todo = vec![start];
        while let Some(f) = todo.pop() {
            if placed.insert(f) {
                group.push(f.to_string());
                todo.extend(reverse.get(f).into_iter().flatten().copied());
            }
        }
        if group.len() > 1 {
            group.sort();
            out.push(group);
        }
    }
    out
}

#[test]
fn the_import_graphs_have_no_cycle() {
    let root = std::env::var("NAIVE_TIDY_ROOT").map(PathBuf::from).unwrap_or_else(|_| root());
    let mut all = Vec::new();
    for krate in ["policy", "store", "gateway", "app", "server"] {
        let dir = root.join(krate).join("src");
        if !dir.exists() && std::env::var_os("NAIVE_TIDY_ROOT").is_some() {
            println!("{krate}/src: absent in this checkout");
            continue;
        }
        let graph = import_graph(&dir);
        let edges: usize = graph.values().map(BTreeSet::len).sum();
        let found = cycles(&graph);
        let tied: usize = found.iter().map(Vec::len).sum();
        println!(
            "{krate}/src: {} files, {edges} imports between them, {} cycles tying {tied} files",
            graph.len(),
            found.len()
        );
        all.extend(found.iter().map(|c| format!("{krate}/src: {}", c.join(", "))));
    }
    assert!(
        all.is_empty(),
        "files that import each other in a circle; move what they share below them:\n{}",
        all.join("\n")
    );
}

#[test]
fn the_import_scanner_reads_use_trees_and_relative_paths() {
    let text = "use crate::domain::{self, keys::{KeyTable, IssuedKey}, principal::Subject};\n\
                use super::http::read;\n// crate::not::this\nlet x = crate::Gateway::new(self::inner::f());";
    let here = ["delivery".to_string(), "connectors".to_string(), "apps".to_string()];
    let got: BTreeSet<Vec<String>> = named_paths(text, &here).into_iter().collect();
    let want: BTreeSet<Vec<String>> = [
        vec!["domain"],
        vec!["domain", "keys", "KeyTable"],
        vec!["domain", "keys", "IssuedKey"],
        vec!["domain", "principal", "Subject"],
        vec!["delivery", "connectors", "http", "read"],
        vec!["Gateway", "new"],
        vec!["delivery", "connectors", "apps", "inner", "f"],
    ]
    .into_iter()
    .map(|p| p.into_iter().map(String::from).collect())
    .collect();
    assert_eq!(got, want);
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(f, to)| (f.to_string(), to.into_iter().map(String::from).collect()))
            .collect();
    assert_eq!(cycles(&graph), vec![["a", "b", "c"].map(String::from).to_vec()]);
}
