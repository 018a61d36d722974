//! The Grafana dashboard and the Prometheus alert rules in `monitoring/` (issue #36) are ready to
//! import: the rules pass `promtool check rules` (Debian's prometheus package, installed by
//! `make test`), the dashboard is valid JSON with a query in every panel, and every metric a
//! rule or a panel names is one the server exports, read from a real scrape.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn ops(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../monitoring").join(file)
}

/// The sample names the exposition can carry, from its `# TYPE` lines: a counter's `_total`,
/// a histogram's `_bucket`, `_sum` and `_count`, a gauge's own name.
fn exported(exposition: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in exposition.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = line.split_once(' ').expect("# TYPE name kind");
        match kind {
            "counter" => names.extend([format!("{name}_total")]),
            "histogram" => names.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}"))),
            _ => names.extend([name.to_string()]),
        }
    }
    names
}

/// Every `naive_…` identifier in `expr`.
fn named(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("naive_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[tokio::test]
async fn every_metric_the_rules_and_the_dashboard_name_is_exported() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway::Gateway::open(&format!("sqlite://{}/d.db", dir.path().display())).await.unwrap();
    // One governed call, so the family with open labels has a series (the others start at 0).
    let took = std::time::Duration::from_millis(1);
    gw.metrics().call(gateway::audit::activity::Transport::Http, "cards.charge".into(), "executed", "", took);
    let names = exported(&gw.scrape().await.unwrap());
    assert!(names.contains("naive_governed_calls_total"), "{names:?}");

    let rules = std::fs::read_to_string(ops("alerts.yml")).unwrap();
    let exprs: Vec<String> =
        rules.lines().filter_map(|l| l.trim().strip_prefix("expr:")).map(|e| e.trim().to_string()).collect();
    let alerts: Vec<&str> =
        rules.lines().filter_map(|l| l.trim().strip_prefix("- alert:")).map(str::trim).collect();
    for wanted in [
        "ApprovalsWaiting",
        "NearCap",
        "ConnectorError",
        "OutboxBacklog",
        "DeadLetters",
        "Flapping",
        "ArchiveBehind",
    ] {
        assert!(alerts.iter().any(|a| a.contains(wanted)), "an alert for {wanted}: {alerts:?}");
    }
    assert_eq!(exprs.len(), alerts.len(), "one expression per alert");

    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ops("grafana-dashboard.json")).unwrap()).unwrap();
    let panels = dash["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10, "{}", panels.len());
    let mut queries = Vec::new();
    for p in panels {
        let targets = p["targets"].as_array().filter(|t| !t.is_empty()).expect("a query in every panel");
        queries.extend(targets.iter().map(|t| t["expr"].as_str().expect("a PromQL expr").to_string()));
    }
    for expr in exprs.iter().chain(&queries) {
        let used = named(expr);
        assert!(!used.is_empty(), "{expr} names a metric");
        for name in used {
            assert!(names.contains(&name), "`{name}` in `{expr}` is not exported; exported: {names:?}");
        }
    }
}

#[test]
fn the_alert_rules_pass_promtool() {
    let out = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(ops("alerts.yml"))
        .output()
        .expect("promtool is on PATH (make test installs Debian's prometheus package)");
    assert!(
        out.status.success(),
        "promtool check rules:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
