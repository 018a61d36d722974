//! The vocabulary of a governed call, shared by every step that handles one: the call as a
//! transport received it ([`ActionCall`]), how it ended ([`Disposition`], [`ActionResponse`]),
//! a reserved call on its way to its connector ([`ReservedCall`]), the id an upstream sees, and the
//! checked arguments the policy engine reads. Pure: no reads, no writes.

use policy::{ActionRequest, CheckedArgs, Envelope, Money, RecoveryStep, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::brain::{ProposalDecided, WritebackAccepted};
use crate::domain::connector::ConnectorKind;
use crate::domain::principal::Subject;
use crate::error::{Error, Result};
use crate::ids::ProfileId;

/// A governed call as a transport received it.
#[derive(Clone, Debug)]
pub struct ActionCall {
    pub token: String,
    pub action: String,
    pub args: Value,
    pub idempotency_key: Option<String>,
}

/// How a call ended, which transports map to their status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Executed,
    Parked,
    Refused,
    Unavailable,
    /// Not carried out because the tenant's outbox queue is at its bound (`outbox_full`):
    /// retryable once earlier commands are delivered.
    Full,
}

impl Disposition {
    /// The verdict label of `/metrics`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Disposition::Executed => "executed",
            Disposition::Parked => "parked",
            Disposition::Refused => "refused",
            Disposition::Unavailable => "unavailable",
            Disposition::Full => "full",
        }
    }

    pub(crate) fn as_i64(self) -> i64 {
        match self {
            Disposition::Executed => 1,
            Disposition::Parked => 2,
            Disposition::Refused => 3,
            Disposition::Unavailable => 4,
            Disposition::Full => 5,
        }
    }
    pub(crate) fn from_i64(v: i64) -> Option<Disposition> {
        Some(match v {
            1 => Disposition::Executed,
            2 => Disposition::Parked,
            3 => Disposition::Refused,
            4 => Disposition::Unavailable,
            5 => Disposition::Full,
            _ => return None,
        })
    }
}

/// The answer to a governed call: how it ended and what the caller receives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionResponse {
    pub disposition: Disposition,
    pub body: Answer,
    /// True when this is the stored first answer to a repeated Idempotency-Key.
    pub replayed: bool,
}

/// What a governed call answers, one shape per way it can end; each serializes as itself
/// (the body `/v1` sends and MCP returns as structured content).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// It ran through its connector.
    Executed(Executed),
    /// It did not run (refused, unavailable, its queue full) or waits for a human (parked).
    Verdict(Box<Envelope>),
    /// A brain writeback was recorded.
    Writeback(Box<WritebackAccepted>),
    /// A proposal was decided.
    Proposal(Box<ProposalDecided>),
}

/// A governed call that ran, as the agent receives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Executed {
    pub ok: bool,
    /// `primitive.verb`, such as `cards.charge`.
    pub action: String,
    /// What the connector answered (a charge id, a message id, page text…).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub result: Value,
    /// What posted: the actual cost, at most what was held.
    pub cost: Money,
    pub hold_id: String,
    /// What carried it out: `sandbox` (nothing real happened) or `http` (the tenant's upstream).
    pub connector: ConnectorKind,
}

impl Answer {
    /// The answer as JSON, as a transport sends it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("answers serialize")
    }

    /// A stored answer to a call that ended as `d` (an Idempotency-Key's first answer), read
    /// back as what was written: the result of one that ran, else its envelope.
    pub(crate) fn read_back(d: Disposition, text: &str) -> ::store::Result<Answer> {
        Ok(match d {
            Disposition::Executed => Answer::Executed(crate::stored::decode("idempotent answer", text)?),
            _ => Answer::Verdict(crate::stored::decode("idempotent answer", text)?),
        })
    }
}

/// The answer's JSON text, as it is stored for an Idempotency-Key.
impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).expect("answers serialize"))
    }
}

impl ActionResponse {
    /// The verdict envelope of a call that did not run or waits for a human; `None` for one
    /// that ran.
    pub fn envelope(&self) -> Option<&Envelope> {
        match &self.body {
            Answer::Verdict(env) => Some(env),
            _ => None,
        }
    }

    /// The reason code of a call that did not run or parked (`hard_cap_exceeded`,
    /// `approval_required`…); empty for one that ran.
    pub fn reason(&self) -> &str {
        self.envelope().map_or("", |e| e.reason.as_str())
    }

    /// The verdict envelope of a call that did not run (refused, unavailable, or not queued
    /// because its queue is full); `None` for one that ran or parked.
    pub fn failure(&self) -> Option<&Envelope> {
        let failed =
            matches!(self.disposition, Disposition::Refused | Disposition::Unavailable | Disposition::Full);
        self.envelope().filter(|_| failed)
    }

    /// How long an agent should wait before sending a call that could not run now again (an
    /// unavailable connector, a full queue): the wait its recovery names first.
    pub fn retry_after_secs(&self) -> Option<u32> {
        if !matches!(self.disposition, Disposition::Unavailable | Disposition::Full) && !self.rate_limited() {
            return None;
        }
        match self.envelope()?.recovery.first()? {
            RecoveryStep::RetryAfter { seconds } => Some(*seconds),
            _ => None,
        }
    }

    /// Whether this is a refusal for a full rate window (`rate_limited`), which may be sent
    /// again once the window has passed.
    pub fn rate_limited(&self) -> bool {
        self.disposition == Disposition::Refused
            && self.envelope().is_some_and(|e| e.reason == "rate_limited")
    }

    /// The belief an accepted proposal became, for the answer to a proposal decision.
    pub fn belief_id(&self) -> Option<&str> {
        match &self.body {
            Answer::Proposal(p) => p.belief_id.as_deref(),
            _ => None,
        }
    }

    /// The body as JSON, as a transport sends it.
    pub fn json(&self) -> Value {
        self.body.to_json()
    }

    pub(crate) fn refused(env: &Envelope) -> ActionResponse {
        ActionResponse {
            disposition: Disposition::Refused,
            body: Answer::Verdict(Box::new(env.clone())),
            replayed: false,
        }
    }
}

pub use policy::args::MAX_ARGS_BYTES;
/// The longest Idempotency-Key accepted.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 200;

/// A reserved call on its way to its connector.
#[derive(Clone)]
pub(crate) struct ReservedCall {
    pub subject: Subject,
    pub tool: ToolSpec,
    pub args: Value,
    pub hold: String,
    pub cost: Money,
    pub kit_version: u32,
    /// Who the record names as acting: the profile, or the human who approved the call.
    pub actor: String,
    /// What the upstream sees as the action's id ([`action_id`]).
    pub action_id: String,
}

/// Which call a settle ends: who made it, the action, its hold, the kit version it was
/// decided under, who the record names as acting, and the connector that carried it out.
#[derive(Clone, Copy)]
pub(crate) struct Settling<'a> {
    pub subject: &'a Subject,
    pub action: &'a str,
    pub hold: &'a str,
    pub kit_version: u32,
    pub actor: &'a str,
    pub connector: ConnectorKind,
}

impl ReservedCall {
    /// What a settle of this call records, carried out by `connector`.
    pub(crate) fn settling(&self, connector: ConnectorKind) -> Settling<'_> {
        Settling {
            subject: &self.subject,
            action: &self.tool.name,
            hold: &self.hold,
            kit_version: self.kit_version,
            actor: &self.actor,
            connector,
        }
    }
}

/// The id an upstream sees for a call: the same for every resend of one Idempotency-Key by one
/// profile, so a retry after a timeout reaches the upstream as the action it may already
/// have carried out; without a key, the hold's id.
pub(crate) fn action_id(profile: &ProfileId, idem: Option<&str>, hold: &str) -> String {
    match idem {
        Some(k) => format!("act_{}", &digest(&json!([profile.as_str(), k]))[..32]),
        None => hold.to_string(),
    }
}

/// Checks `args` against `action`'s declaration: what the engine reads, or the refusal.
pub(crate) fn check_args(action: &str, args: &Value) -> Result<CheckedArgs> {
    let decl = policy::args::declaration(action)
        .ok_or_else(|| Error::internal("undeclared_action", format!("`{action}` declares no arguments")))?;
    decl.check(args).map_err(|e| Error::invalid(e.code, e.message))
}

/// The engine's view of a call's arguments.
pub(crate) fn request<'a>(tool: &'a ToolSpec, a: &'a CheckedArgs) -> ActionRequest<'a> {
    ActionRequest {
        tool,
        amount: a.amount,
        recipient: a.recipient.as_deref(),
        merchant: a.merchant.as_deref(),
        toolkit: a.toolkit.as_ref().map(|(k, t)| (k.as_str(), t.as_str())),
    }
}

/// SHA-256 of the canonical JSON, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call
/// whatever order serde_json keeps keys in (a dependency may turn on `preserve_order`).
pub(crate) fn digest(v: &Value) -> String {
    let mut out = String::new();
    canonical(v, &mut out);
    hex::encode(Sha256::digest(out.as_bytes()))
}

/// Writes `v` with object keys sorted, recursively.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_ignore_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":{"y":1,"x":[2,{"q":1,"p":2}]},"a":"s"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":"s","b":{"x":[2,{"p":2,"q":1}],"y":1}}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&serde_json::json!({"a": "t"})));
    }
}
