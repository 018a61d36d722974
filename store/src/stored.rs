//! Stored values: timestamps in the one text form both drivers read and write (so `ORDER BY`
//! and `<=` on them compare correctly), and the one `corrupt_row` error for a stored value
//! (a JSON text, the name of a closed set's value) that does not read back.

use chrono::{DateTime, SecondsFormat, Utc};

/// The text form of a timestamp, identical to what sqlx stores for `DateTime<Utc>`.
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// Reads a stored timestamp; storage only ever holds [`ts`] output, so anything else is
/// [`corrupt`].
pub fn parse_ts(s: &str) -> crate::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).map_err(|_| corrupt("timestamp", s))
}

/// The one error for a stored value that does not read back as what was written (the
/// database was changed outside it): an internal error naming the value, never a default.
pub fn corrupt(what: &str, value: &str) -> crate::Error {
    crate::Error::internal(
        "corrupt_row",
        format!(
            "a stored {what} does not read back (`{value}`); the database was changed outside the gateway"
        ),
    )
}

/// A stored JSON text, read back.
pub fn json(what: &str, text: &str) -> crate::Result<serde_json::Value> {
    decode(what, text)
}

/// A stored JSON text, read back as the type that was written.
pub fn decode<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> crate::Result<T> {
    serde_json::from_str(text).map_err(|_| corrupt(what, text))
}

/// A stored name of one of a closed set of values, read back with `parse`.
pub fn named<T>(what: &str, text: &str, parse: impl Fn(&str) -> Option<T>) -> crate::Result<T> {
    parse(text).ok_or_else(|| corrupt(what, text))
}
