//! The control wire: the HTTP JSON protocol between the gateway and a tenant's team runtime.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /control/status` | [`Status`] |
//! | `GET /control/board?status=&role=` | [`Board`] |
//! | `GET /control/runs/{run_id}` | [`Run`], or 404 `unknown_run` |
//! | `GET /control/tasks/{task_id}` | [`TaskDetail`] (the task and its comments), or 404 |
//! | `POST /control/claim` `{tenant_id}` | [`Status`]; 409 `claimed_by_another` |
//! | `POST /control/commands` [`Batch`] | [`BatchAnswer`]: one [`Applied`] per command, in order |
//!
//! Every request is signed with the runtime's shared secret: `Naive-Timestamp: <unix seconds>`
//! and `Naive-Signature: v1=<hex HMAC-SHA256(secret, "<METHOD>\n<path and query>\n<timestamp>\n<body>")>`.
//! A runtime refuses a missing or wrong signature, and a timestamp more than
//! [`MAX_SKEW_SECS`] from its clock, with 401 and nothing done.
//!
//! Every command carries its `command_id`. A runtime applies a command id once: the same id
//! again answers `duplicate` and changes nothing, so the gateway may send a batch again after
//! losing its answer. A batch's commands are applied in the order given; one the runtime
//! cannot apply (an unknown task, a comment too long) answers `rejected` with a code and does
//! not stop the rest.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How far a request's timestamp may be from the runtime's clock.
pub const MAX_SKEW_SECS: i64 = 300;
/// The longest comment a runtime must accept.
pub const MAX_COMMENT_CHARS: usize = 10_000;
/// The most commands in one batch.
pub const MAX_BATCH: usize = 500;

pub const TIMESTAMP_HEADER: &str = "Naive-Timestamp";
pub const SIGNATURE_HEADER: &str = "Naive-Signature";

/// `v1=<hex>`: the signature of one request.
pub fn sign(secret: &str, method: &str, path_and_query: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{}\n{path_and_query}\n{timestamp}\n", method.to_ascii_uppercase()).as_bytes());
    mac.update(body);
    format!("v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// Why a runtime refused a request's signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureError {
    Missing,
    Stale,
    Wrong,
}

impl SignatureError {
    pub const fn code(self) -> &'static str {
        match self {
            SignatureError::Missing => "signature_missing",
            SignatureError::Stale => "signature_stale",
            SignatureError::Wrong => "signature_wrong",
        }
    }
}

/// Checks a request's signature headers against `secret` at `now` (unix seconds).
pub fn verify(
    secret: &str,
    method: &str,
    path_and_query: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let (Some(t), Some(sig)) = (timestamp, signature) else { return Err(SignatureError::Missing) };
    let t: i64 = t.trim().parse().map_err(|_| SignatureError::Missing)?;
    if (now - t).abs() > MAX_SKEW_SECS {
        return Err(SignatureError::Stale);
    }
    let expected = sign(secret, method, path_and_query, t, body);
    if crate::secrets::digest_eq(&expected, sig.trim()) { Ok(()) } else { Err(SignatureError::Wrong) }
}

/// `GET /control/status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Status {
    /// The runtime's own name for itself.
    pub runtime: String,
    /// The tenant that claimed it, if any.
    pub claimed_by: Option<String>,
    pub tasks: u64,
    pub blocked: u64,
    pub runs_active: u64,
    /// How many times a command id arrived again after it was applied (each answered
    /// `duplicate`, changing nothing).
    #[serde(default)]
    pub duplicates: u64,
}

/// One task on the board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Task {
    pub task_id: String,
    pub title: String,
    /// `open`, `blocked`, `done` or `deleted`.
    pub status: String,
    pub role: String,
    pub blocked_because: Option<String>,
    pub comments: u64,
}

/// `GET /control/board`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Board {
    pub tasks: Vec<Task>,
}

/// `GET /control/runs/{run_id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Run {
    pub run_id: String,
    pub task_id: String,
    /// `running`, `waiting`, `succeeded` or `failed`.
    pub status: String,
    /// Where the run's transcript lives.
    pub transcript: String,
}

/// One comment as the runtime holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comment {
    pub command_id: String,
    pub body: String,
    pub author: String,
}

/// `GET /control/tasks/{task_id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskDetail {
    pub task: Task,
    pub comments: Vec<Comment>,
}

/// What a command asks of the runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CommandKind {
    /// Post a comment onto the task.
    Comment { body: String },
    /// Clear the task's blocked state.
    Unblock { because: String },
    /// Delete the task.
    Delete {},
}

impl CommandKind {
    pub const fn name(&self) -> &'static str {
        match self {
            CommandKind::Comment { .. } => "comment",
            CommandKind::Unblock { .. } => "unblock",
            CommandKind::Delete {} => "delete",
        }
    }
}

/// One command, as it crosses the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub command_id: String,
    pub task_id: String,
    /// Who asked (an agent profile id, or the human who approved the call).
    pub author: String,
    #[serde(flatten)]
    pub kind: CommandKind,
}

/// `POST /control/commands`: the commands of the tenant that claimed the runtime. A runtime
/// refuses a batch from any other tenant (409 `claimed_by_another`) and one sent before any
/// claim (409 `not_claimed`), applying none of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub tenant_id: String,
    pub commands: Vec<Command>,
}

/// What became of one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Applied now.
    Applied,
    /// Applied before, under the same command id; nothing changed now.
    Duplicate,
    /// Cannot be applied (see the code); sending it again will not help.
    Rejected,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub command_id: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The answer to a [`Batch`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAnswer {
    pub results: Vec<Applied>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_covers_method_path_time_and_body() {
        let s = sign("k", "POST", "/control/commands", 1_700_000_000, b"{}");
        assert!(s.starts_with("v1="));
        assert_ne!(s, sign("k", "GET", "/control/commands", 1_700_000_000, b"{}"));
        assert_ne!(s, sign("k", "POST", "/control/board", 1_700_000_000, b"{}"));
        assert_ne!(s, sign("k", "POST", "/control/commands", 1_700_000_001, b"{}"));
        assert_ne!(s, sign("k", "POST", "/control/commands", 1_700_000_000, b"{ }"));
        assert_ne!(s, sign("k2", "POST", "/control/commands", 1_700_000_000, b"{}"));
    }

    #[test]
    fn verify_refuses_missing_stale_and_wrong_signatures() {
        let t = 1_700_000_000;
        let s = sign("k", "POST", "/p", t, b"x");
        let ts = t.to_string();
        assert_eq!(verify("k", "POST", "/p", Some(&ts), Some(&s), b"x", t + 10), Ok(()));
        assert_eq!(verify("k", "POST", "/p", None, Some(&s), b"x", t), Err(SignatureError::Missing));
        let late = t + MAX_SKEW_SECS + 1;
        assert_eq!(verify("k", "POST", "/p", Some(&ts), Some(&s), b"x", late), Err(SignatureError::Stale));
        assert_eq!(verify("k", "POST", "/p", Some(&ts), Some(&s), b"y", t), Err(SignatureError::Wrong));
        assert_eq!(verify("j", "POST", "/p", Some(&ts), Some(&s), b"x", t), Err(SignatureError::Wrong));
    }

    #[test]
    fn commands_travel_flat() {
        let c = Command {
            command_id: "cmd_1".into(),
            task_id: "T-1".into(),
            author: "agt_1".into(),
            kind: CommandKind::Unblock { because: "the vendor answered".into() },
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["kind"], "unblock");
        assert_eq!(v["because"], "the vendor answered");
        assert_eq!(serde_json::from_value::<Command>(v).unwrap(), c);
    }
}
