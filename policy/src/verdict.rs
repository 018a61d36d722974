//! The three verdict vocabularies and the explicit mappings between them
//! (docs/architecture.md#verdicts-and-the-refusal-envelope).
//!
//! The decision engine answers [`EngineVerdict`] (`allow | deny | freeze`), explain answers
//! [`ExplainVerdict`] (`allow | deny | park`) and the refusal envelope carries an
//! [`EnvelopeVerdict`] (`deny | park | unavailable | attest`). They are different sets, so each
//! translation is a function written out case by case, never a mapping by name.

use serde::{Deserialize, Serialize};

/// What the decision engine answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EngineVerdict {
    Allow,
    /// No approval can release it: revocation, a kit refusal, a hard cap.
    Deny,
    /// Must not run now, but a human can release this exact call.
    Freeze,
}

/// What `POST /v1/policy/explain` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExplainVerdict {
    Allow,
    Deny,
    Park,
}

/// The closed union a refusal envelope carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeVerdict {
    Deny,
    Park,
    Unavailable,
    /// Declared so that exhaustive matches stay exhaustive; never emitted.
    Attest,
}

impl EngineVerdict {
    pub const fn as_str(self) -> &'static str {
        match self {
            EngineVerdict::Allow => "allow",
            EngineVerdict::Deny => "deny",
            EngineVerdict::Freeze => "freeze",
        }
    }
}

impl ExplainVerdict {
    pub const fn as_str(self) -> &'static str {
        match self {
            ExplainVerdict::Allow => "allow",
            ExplainVerdict::Deny => "deny",
            ExplainVerdict::Park => "park",
        }
    }
}

/// Engine → explain: `freeze` is what a human sees as `park`.
pub const fn explain_verdict(v: EngineVerdict) -> ExplainVerdict {
    match v {
        EngineVerdict::Allow => ExplainVerdict::Allow,
        EngineVerdict::Deny => ExplainVerdict::Deny,
        EngineVerdict::Freeze => ExplainVerdict::Park,
    }
}

/// Explain → envelope: an allowed call gets a result, not an envelope.
pub const fn envelope_verdict(v: ExplainVerdict) -> Option<EnvelopeVerdict> {
    match v {
        ExplainVerdict::Allow => None,
        ExplainVerdict::Deny => Some(EnvelopeVerdict::Deny),
        ExplainVerdict::Park => Some(EnvelopeVerdict::Park),
    }
}

impl EnvelopeVerdict {
    pub const fn as_str(self) -> &'static str {
        match self {
            EnvelopeVerdict::Deny => "deny",
            EnvelopeVerdict::Park => "park",
            EnvelopeVerdict::Unavailable => "unavailable",
            EnvelopeVerdict::Attest => "attest",
        }
    }

    /// MCP's `isError`: a park is a successful deferral, an attest a request for evidence.
    pub const fn is_error(self) -> bool {
        match self {
            EnvelopeVerdict::Deny => true,
            EnvelopeVerdict::Park => false,
            EnvelopeVerdict::Unavailable => true,
            EnvelopeVerdict::Attest => false,
        }
    }

    /// Only an outage is worth retrying; every other verdict is a decision.
    pub const fn retryable(self) -> bool {
        match self {
            EnvelopeVerdict::Unavailable => true,
            EnvelopeVerdict::Deny | EnvelopeVerdict::Park | EnvelopeVerdict::Attest => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_to_explain() {
        assert_eq!(explain_verdict(EngineVerdict::Allow), ExplainVerdict::Allow);
        assert_eq!(explain_verdict(EngineVerdict::Deny), ExplainVerdict::Deny);
        assert_eq!(explain_verdict(EngineVerdict::Freeze), ExplainVerdict::Park);
    }

    #[test]
    fn explain_to_envelope() {
        assert_eq!(envelope_verdict(ExplainVerdict::Allow), None);
        assert_eq!(envelope_verdict(ExplainVerdict::Deny), Some(EnvelopeVerdict::Deny));
        assert_eq!(envelope_verdict(ExplainVerdict::Park), Some(EnvelopeVerdict::Park));
    }

    #[test]
    fn is_error_and_retryable_per_verdict() {
        let table = [
            (EnvelopeVerdict::Deny, true, false),
            (EnvelopeVerdict::Park, false, false),
            (EnvelopeVerdict::Unavailable, true, true),
            (EnvelopeVerdict::Attest, false, false),
        ];
        for (v, is_error, retryable) in table {
            assert_eq!(v.is_error(), is_error, "{v:?}");
            assert_eq!(v.retryable(), retryable, "{v:?}");
        }
    }

    #[test]
    fn names_differ_across_vocabularies() {
        assert_eq!(EngineVerdict::Freeze.as_str(), "freeze");
        assert_eq!(ExplainVerdict::Park.as_str(), "park");
        assert_eq!(serde_json::to_string(&EnvelopeVerdict::Unavailable).unwrap(), "\"unavailable\"");
    }
}
