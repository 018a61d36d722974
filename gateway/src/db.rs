//! Small helpers for the writer's statements: timestamps in the one text form both drivers
//! read and write (so `ORDER BY` and `<=` on them compare correctly), and row decoding.

use chrono::{DateTime, SecondsFormat, Utc};

/// The text form of a timestamp, identical to what sqlx stores for `DateTime<Utc>`.
pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// Reads a stored timestamp; storage only ever holds [`ts`] output.
pub(crate) fn parse_ts(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_default()
}
