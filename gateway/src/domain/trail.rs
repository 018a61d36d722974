//! The trail of a human decision, shared by approvals and brain proposals: each step says
//! when, who, what, their words and the credential they decided with; and the rule for the
//! free text a decider sends.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The longest reason or note accepted on a decision.
pub const MAX_REASON_LEN: usize = 2_000;

/// One step of a decision's trail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrailStep {
    pub at: DateTime<Utc>,
    pub actor: String,
    pub step: String,
    pub note: Option<String>,
    /// The credential a human decided with (`console session`, `token tok_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// A trail step as read back: when, who, what, the note, the credential.
pub(crate) type TrailRow = (DateTime<Utc>, String, String, Option<String>, Option<String>);

pub(crate) fn trail_step((at, actor, step, note, credential): TrailRow) -> TrailStep {
    TrailStep { at, actor, step, note, credential }
}

/// A decision's free text (a reason, a `because`, a note) as sent: at most
/// [`MAX_REASON_LEN`] characters (else `too_long`) of plain text, line breaks allowed,
/// control characters not. Trimmed; `None` when blank.
pub(crate) fn decision_text(text: &str, field: &str, too_long: &'static str) -> Result<Option<String>> {
    if text.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid(too_long, format!("{field} is at most {MAX_REASON_LEN} characters")));
    }
    if !policy::args::is_plain_text(text) {
        return Err(Error::invalid("invalid_text", format!("{field} is text without control characters")));
    }
    let t = text.trim();
    Ok((!t.is_empty()).then(|| t.to_string()))
}
