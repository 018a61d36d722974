//! The bodies `/v1` answers with that are not the gateway's own types, and the schemas of its
//! text fields, in one place: the handlers build them and the OpenAPI document describes them.

use serde::Serialize;
use utoipa::ToSchema;

/// One reason an explained call would be refused or parked.
#[derive(Serialize, ToSchema)]
pub struct ExplainReason {
    /// The pipeline step that decided: `revocation`, `primitive`, `capability`, …
    #[schema(value_type = String)]
    pub step: policy::Step,
    pub reason: String,
    pub detail: String,
    pub verdict: String,
    /// The JSON path of the limit that decides (`limits.budget.periods[1].hard_cap`,
    /// `limits.rate[0]`, `tenant.rate_limit`), for a cap or a rate limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// For a period limit: its period (`day`, `week`, `month`) and when it starts again from
    /// zero (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// For a full rate window: the seconds until it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u32>,
}

/// What `POST /v1/policy/explain` answers.
#[derive(Serialize, ToSchema)]
pub struct Explained {
    pub verdict: policy::ExplainVerdict,
    pub action: String,
    pub cost: policy::Money,
    pub effect: policy::Effect,
    pub reasons: Vec<ExplainReason>,
}

/// A page of the activity log; `next` is the query string of the following page.
#[derive(Serialize, ToSchema)]
pub struct LogPage {
    pub items: Vec<gateway::audit::activity::Entry>,
    pub next: Option<String>,
}

/// A page of ledger entries; `next` is the query string of the following page.
#[derive(Serialize, ToSchema)]
pub struct LedgerPage {
    pub items: Vec<gateway::domain::ledger::LedgerEntry>,
    pub next: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ApprovalList {
    pub items: Vec<gateway::domain::approvals::Approval>,
}

#[derive(Serialize, ToSchema)]
pub struct ProposalList {
    pub items: Vec<gateway::domain::brain::Proposal>,
}

#[derive(Serialize, ToSchema)]
pub struct BeliefList {
    pub items: Vec<gateway::domain::brain::Belief>,
}

#[derive(Serialize, ToSchema)]
pub struct WritebackList {
    pub items: Vec<gateway::domain::brain::Writeback>,
}

#[derive(Serialize, ToSchema)]
pub struct KitList {
    pub items: Vec<gateway::KitRecord>,
}

#[derive(Serialize, ToSchema)]
pub struct ProfileTree {
    pub items: Vec<gateway::TreeEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct KeyList {
    pub items: Vec<gateway::domain::keys::KeyInfo>,
}

/// A new or rotated key. The secret is in this response only; a replay of it (same
/// Idempotency-Key) withholds it.
#[derive(Serialize, ToSchema)]
pub struct IssuedKeyBody {
    pub key: gateway::domain::keys::KeyInfo,
    /// `nv_<prefix>_<secret>`; null in a replay.
    pub secret: Option<String>,
    /// True in a replay, where the secret is withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_withheld: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct CompanyKeyList {
    pub items: Vec<gateway::domain::tenants::CompanyKeyInfo>,
}

/// A new or rotated company key. The secret is in this response only; a replay of it (same
/// Idempotency-Key) withholds it.
#[derive(Serialize, ToSchema)]
pub struct IssuedCompanyKey {
    pub key: gateway::domain::tenants::CompanyKeyInfo,
    /// `nv_<prefix>_<secret>`; null in a replay.
    pub secret: Option<String>,
    /// True in a replay, where the secret is withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_withheld: Option<bool>,
}

/// The data of one Server-Sent Event: an activity entry, or the final `lagged` marker of a
/// subscriber that fell behind (resume with `Last-Event-ID: resume_after`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum StreamEvent {
    Entry(Box<gateway::audit::activity::Entry>),
    Lagged { missed: u64, resume_after: i64 },
}

/// One Server-Sent Event as it arrives: its `id` (the sequence number, for `Last-Event-ID`),
/// its name (the entry's kind, or `lagged`), and its data, the JSON of a [`StreamEvent`].
#[derive(Serialize, ToSchema)]
pub struct SseFrame {
    pub id: Option<String>,
    pub event: Option<String>,
    /// JSON: an activity entry, or `{"missed": n, "resume_after": seq}` for `lagged`.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// A profile's name in the document: what the gateway accepts.
pub fn profile_name() -> utoipa::openapi::Object {
    policy::args::name_schema(gateway::domain::profiles::MAX_NAME_LEN)
}

/// A decision's reason or `because`: required text, at most 2000 characters.
pub fn decision_text() -> utoipa::openapi::Object {
    policy::args::text_schema(gateway::domain::approvals::MAX_REASON_LEN, true)
}

/// An optional note on a decision: text, at most 2000 characters.
pub fn decision_note() -> utoipa::openapi::Object {
    policy::args::text_schema(gateway::domain::approvals::MAX_REASON_LEN, false)
}

/// A kit's name in the document.
pub fn kit_name() -> utoipa::openapi::Object {
    policy::args::name_schema(policy::kit::MAX_KIT_NAME_LEN)
}

/// The dry run's answer, as `/v1` and MCP give it.
pub(crate) fn explained(action: String, e: policy::Explanation) -> Explained {
    let reasons = e
        .reasons
        .iter()
        .map(|r| ExplainReason {
            step: r.step(),
            reason: r.reason().into(),
            detail: r.detail().into(),
            verdict: r.verdict().as_str().into(),
            limit: r.limit_path(),
            period: match r {
                policy::Refusal::PeriodCapExceeded { every, .. }
                | policy::Refusal::PeriodSoftCapCrossed { every, .. } => Some(every.as_str().to_string()),
                _ => None,
            },
            resets_at: r.resets_at().map(policy::envelope::rfc3339),
            retry_after: match r {
                policy::Refusal::RateLimited { retry_after, .. } => Some(*retry_after),
                _ => None,
            },
        })
        .collect();
    Explained { verdict: e.verdict, action, cost: e.cost, effect: e.effect, reasons }
}
