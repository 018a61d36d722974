//! A log entry as an OCSF 1.5.0 event (the stream format `ocsf`; the mapping is documented in
//! docs/streams.md#ocsf).
//!
//! Guarantees: every entry maps to exactly one event of one of five classes (API Activity,
//! Authentication, Account Change, Entity Management, User Access Management) with the base
//! attributes and each class's required objects set, and `type_uid = class_uid * 100 +
//! activity_id`. Nothing is lost: the entry itself, as `/v1/logs` shows it (with its
//! `prev_hash` and `hash`), is the event's `unmapped` object, and its `seq` is
//! `metadata.sequence`. Recorded decision inputs are never part of it.

use policy::activity::{Actor, Kind, Verdict};
use serde_json::{Value, json};

use crate::audit::activity::Entry;

/// The OCSF version the events follow.
pub const OCSF_VERSION: &str = "1.5.0";

/// An OCSF class an entry maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    ApiActivity,
    Authentication,
    AccountChange,
    EntityManagement,
    UserAccess,
}

impl Class {
    /// (class_uid, class_name, category_uid, category_name)
    const fn ids(self) -> (u32, &'static str, u32, &'static str) {
        const IAM: &str = "Identity & Access Management";
        match self {
            Class::ApiActivity => (6003, "API Activity", 6, "Application Activity"),
            Class::Authentication => (3002, "Authentication", 3, IAM),
            Class::AccountChange => (3001, "Account Change", 3, IAM),
            Class::EntityManagement => (3004, "Entity Management", 3, IAM),
            Class::UserAccess => (3005, "User Access Management", 3, IAM),
        }
    }
}

/// The entry `e` as an OCSF event.
pub fn event(e: &Entry) -> Value {
    let (class, activity_id, activity_name) = classify(e);
    let (class_uid, class_name, category_uid, category_name) = class.ids();
    let (severity_id, severity) = severity(e.verdict);
    let (status_id, status) = status(e);
    let mut ev = json!({
        "class_uid": class_uid, "class_name": class_name,
        "category_uid": category_uid, "category_name": category_name,
        "activity_id": activity_id, "activity_name": activity_name,
        "type_uid": class_uid * 100 + activity_id,
        "type_name": format!("{class_name}: {activity_name}"),
        "severity_id": severity_id, "severity": severity,
        "status_id": status_id, "status": status,
        "time": e.at.timestamp_millis(),
        "message": message(e),
        "metadata": metadata(e),
        "actor": { "user": user(&e.actor) },
        "unmapped": serde_json::to_value(e).expect("an entry serializes"),
    });
    if let Some(reason) = e.detail.get("reason").or_else(|| e.detail.get("code")).and_then(Value::as_str) {
        ev["status_detail"] = json!(reason);
    }
    let o = ev.as_object_mut().expect("an object");
    for (k, v) in class_objects(class, e) {
        o.insert(k.to_string(), v);
    }
    ev
}

fn metadata(e: &Entry) -> Value {
    json!({
        "version": OCSF_VERSION,
        "product": { "name": "Naïve gateway", "vendor_name": "Naïve", "version": env!("CARGO_PKG_VERSION") },
        "uid": format!("{}:{}", e.tenant_id.as_str(), e.seq),
        "sequence": e.seq,
        "log_name": "activity",
        "tenant_uid": e.tenant_id.as_str(),
        "profiles": ["security_control"],
    })
}

/// The class and activity an entry is (docs/streams.md#ocsf has the table).
fn classify(e: &Entry) -> (Class, u32, &'static str) {
    use Verdict as V;
    match (e.kind, e.verdict) {
        (Kind::Action | Kind::Refusal | Kind::Park | Kind::Shadow, _) => {
            let (id, name) = api_activity(e.action.as_deref().unwrap_or(""));
            (Class::ApiActivity, id, name)
        }
        (Kind::Approval, _) => (Class::ApiActivity, 3, "Update"),
        (Kind::Console, Some(V::SignedIn | V::SignInFailed)) => (Class::Authentication, 1, "Logon"),
        (Kind::Console, Some(V::SignedOut)) => (Class::Authentication, 2, "Logoff"),
        (Kind::Console, Some(V::RolesChanged)) => (Class::UserAccess, 99, "Other"),
        (Kind::Console | Kind::Key, Some(V::UserAdded | V::Issued)) => (Class::AccountChange, 1, "Create"),
        (Kind::Key, Some(V::Rotated)) => (Class::AccountChange, 3, "Password Change"),
        (Kind::Key | Kind::Revoke | Kind::Profile | Kind::Console, Some(V::Revoked | V::RuntimeStopped)) => {
            (Class::AccountChange, 5, "Disable")
        }
        (_, v) => {
            let (id, name) = entity_activity(v);
            (Class::EntityManagement, id, name)
        }
    }
}

/// An API Activity's activity, from the verb that ends the action's name (`cards.charge`,
/// `web.read`, `tasks.comment`).
fn api_activity(action: &str) -> (u32, &'static str) {
    let verb = action.rsplit(['.', '_']).next().unwrap_or("");
    match verb {
        "read" | "get" | "list" | "search" | "fetch" | "query" | "find" => (2, "Read"),
        "update" | "edit" | "set" | "patch" | "move" | "rename" => (3, "Update"),
        "delete" | "remove" | "cancel" | "revoke" | "archive" => (4, "Delete"),
        "" => (99, "Other"),
        _ => (1, "Create"),
    }
}

/// An Entity Management activity from how the change ended.
fn entity_activity(v: Option<Verdict>) -> (u32, &'static str) {
    use Verdict as V;
    match v {
        Some(
            V::Created
            | V::RuntimeRegistered
            | V::WebhookRegistered
            | V::StreamAdded
            | V::TokenCreated
            | V::SlackConnected
            | V::SlackLinked
            | V::Mcp
            | V::Allow,
        ) => (1, "Create"),
        Some(
            V::Deleted
            | V::Removed
            | V::RuntimeRemoved
            | V::WebhookRemoved
            | V::StreamRemoved
            | V::TokenRevoked
            | V::SlackRemoved
            | V::SlackUnlinked
            | V::BacklogPurged,
        ) => (4, "Delete"),
        _ => (3, "Update"),
    }
}

/// (severity_id, severity): refusals and failures are Low, escalations and revocations Medium.
fn severity(v: Option<Verdict>) -> (u32, &'static str) {
    use Verdict as V;
    match v {
        Some(V::Escalated | V::Revoked | V::DeadLetter) => (3, "Medium"),
        Some(V::Deny | V::Denied | V::Refused | V::Unavailable | V::Expired | V::CommandRejected) => {
            (2, "Low")
        }
        _ => (1, "Informational"),
    }
}

/// (status_id, status): a refused or failed call is a Failure, a parked one Other.
fn status(e: &Entry) -> (u32, &'static str) {
    use Verdict as V;
    match e.verdict {
        _ if e.kind == Kind::Shadow => (99, "Shadow"),
        Some(
            V::Deny | V::Refused | V::Unavailable | V::CommandRejected | V::DeadLetter | V::SignInFailed,
        ) => (2, "Failure"),
        Some(V::Park) => (99, "Parked"),
        _ => (1, "Success"),
    }
}

/// What a governed call's decision was, as the security control profile says it:
/// (action_id, action, disposition_id, disposition).
fn control(e: &Entry) -> (u32, &'static str, u32, &'static str) {
    use Verdict as V;
    match e.verdict {
        Some(V::Allow | V::Recovered) => (1, "Allowed", 1, "Allowed"),
        Some(V::Approved) => (1, "Allowed", 8, "Approved"),
        Some(V::Deny | V::Denied | V::Refused) => (2, "Denied", 2, "Blocked"),
        Some(V::Park) => (99, "Other", 14, "Delayed"),
        Some(V::Unavailable) => (1, "Allowed", 27, "Error"),
        Some(V::Expired) => (2, "Denied", 16, "No Action"),
        Some(V::Escalated) => (99, "Other", 19, "Alert"),
        _ => (99, "Other", 17, "Logged"),
    }
}

fn message(e: &Entry) -> String {
    let what = e.action.as_deref().unwrap_or(e.kind.as_str());
    match e.verdict {
        Some(v) => format!("{what}: {v} ({})", e.actor),
        None => format!("{what} ({})", e.actor),
    }
}

/// An OCSF user for an actor: an agent (its profile id), a console user, or the gateway.
fn user(a: &Actor) -> Value {
    let (type_id, ty) = match a {
        Actor::User(_) => (1, "User"),
        Actor::CompanyKey => (2, "Admin"),
        Actor::System | Actor::DemoAgent => (3, "System"),
        Actor::Agent(_) => (99, "Agent"),
    };
    json!({ "name": a.as_str(), "uid": a.as_str(), "type_id": type_id, "type": ty })
}

/// The objects a class requires beside the base ones.
fn class_objects(class: Class, e: &Entry) -> Vec<(&'static str, Value)> {
    let svc = json!({ "svc_name": e.transport.map_or("gateway", |t| t.as_str()) });
    match class {
        Class::ApiActivity => api_objects(e, svc),
        Class::Authentication => vec![("user", subject(e)), ("src_endpoint", svc)],
        Class::AccountChange => vec![("user", subject(e))],
        Class::UserAccess => vec![("user", subject(e)), ("privileges", privileges(e))],
        Class::EntityManagement => vec![("entity", entity(e))],
    }
}

fn api_objects(e: &Entry, svc: Value) -> Vec<(&'static str, Value)> {
    let (action_id, action, disposition_id, disposition) = control(e);
    let operation = match (e.kind, e.verdict) {
        (Kind::Approval, Some(v)) => format!("approval.{v}"),
        _ => e.action.clone().unwrap_or_else(|| e.kind.as_str().to_string()),
    };
    let mut out = vec![
        ("api", json!({ "operation": operation, "service": { "name": "naive-gateway" } })),
        ("src_endpoint", svc),
        ("action_id", json!(action_id)),
        ("action", json!(action)),
        ("disposition_id", json!(disposition_id)),
        ("disposition", json!(disposition)),
    ];
    if let Some(v) = e.kit_version {
        out.push(("policy", json!({ "name": "AccountKit", "version": v.to_string() })));
    }
    if let Some(p) = &e.profile_id {
        out.push(("resources", json!([{ "type": "agent_profile", "uid": p.as_str() }])));
    }
    out
}

/// The account a change is about: the profile or the user its detail names, else the actor.
fn subject(e: &Entry) -> Value {
    if let Some(name) = e.detail.get("user").and_then(Value::as_str) {
        return user(&Actor::User(name.to_string()));
    }
    match &e.profile_id {
        Some(p) => user(&Actor::Agent(p.as_str().to_string())),
        None => user(&e.actor),
    }
}

/// The roles a user has after a change (stored comma-separated or as a list).
fn privileges(e: &Entry) -> Value {
    match e.detail.get("to") {
        Some(Value::String(s)) => json!(s.split(',').filter(|r| !r.is_empty()).collect::<Vec<_>>()),
        Some(Value::Array(a)) => Value::Array(a.clone()),
        _ => json!([]),
    }
}

/// What an Entity Management event changed: its type from the entry, its id from the detail.
fn entity(e: &Entry) -> Value {
    let ty = match (e.kind, e.verdict.map(Verdict::as_str)) {
        (Kind::KitEdit, _) => "account_kit",
        (Kind::Vault, _) => "vault_secret",
        (Kind::Settings, _) => "tenant_settings",
        (Kind::Hold, _) => "hold",
        (Kind::Writeback | Kind::Proposal, _) => "proposal",
        (Kind::Console, Some("changed")) => "group",
        (_, Some(v)) if v.starts_with("runtime_") || v == "command_rejected" => "team_runtime",
        (_, Some(v))
            if v.starts_with("webhook_") || v.starts_with("dead_letter") || v == "backlog_purged" =>
        {
            "webhook"
        }
        (_, Some(v)) if v.starts_with("stream_") => "log_stream",
        (_, Some(v)) if v.starts_with("token_") => "app_token",
        (_, Some(v)) if v.starts_with("slack_") => "slack",
        (Kind::Console | Kind::Key, _) => "account",
        _ => "connector",
    };
    const IDS: [&str; 9] =
        ["stream_id", "webhook_id", "runtime_id", "hold_id", "proposal_id", "name", "target", "id", "app"];
    let uid = IDS.iter().find_map(|k| e.detail.get(*k).and_then(Value::as_str));
    let mut out = json!({ "type": ty, "name": uid.unwrap_or(ty) });
    if let Some(uid) = uid {
        out["uid"] = json!(uid);
    }
    if let Some(v) = e.kit_version {
        out["version"] = json!(v.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actions_verb_names_its_api_activity() {
        assert_eq!(api_activity("web.read"), (2, "Read"));
        assert_eq!(api_activity("cards.charge"), (1, "Create"));
        assert_eq!(api_activity("tasks.delete"), (4, "Delete"));
        assert_eq!(api_activity("brain.set"), (3, "Update"));
        assert_eq!(api_activity(""), (99, "Other"));
    }

    #[test]
    fn every_kind_and_verdict_maps_to_a_consistent_type() {
        for kind in Kind::ALL {
            for verdict in Verdict::ALL.iter().map(|v| Some(*v)).chain([None]) {
                let e = Entry {
                    seq: 7,
                    tenant_id: crate::ids::TenantId::from_db("t".to_string()),
                    at: chrono::Utc::now(),
                    actor: Actor::User("ann".into()),
                    profile_id: None,
                    kind: *kind,
                    action: Some("cards.charge".into()),
                    verdict,
                    amount: None,
                    kit_version: Some(3),
                    detail: json!({ "user": "bob", "to": "admin,approver" }),
                    transport: None,
                    prev_hash: String::new(),
                    hash: String::new(),
                    inputs: None,
                };
                let ev = event(&e);
                let (class, activity) =
                    (ev["class_uid"].as_u64().unwrap(), ev["activity_id"].as_u64().unwrap());
                assert_eq!(ev["type_uid"].as_u64(), Some(class * 100 + activity), "{kind} {verdict:?}");
                assert_eq!(ev["metadata"]["sequence"], 7);
                assert_eq!(ev["unmapped"]["seq"], 7);
                let required = match class {
                    6003 => vec!["api", "actor", "src_endpoint"],
                    3002 | 3001 => vec!["user"],
                    3005 => vec!["user", "privileges"],
                    3004 => vec!["entity"],
                    other => panic!("unexpected class {other}"),
                };
                for field in required {
                    assert!(ev.get(field).is_some(), "{kind} {verdict:?} lacks {field}");
                }
            }
        }
    }
}
