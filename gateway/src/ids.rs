//! Typed identifiers. Each is a prefixed, time-ordered UUID (`ten_…`, `prf_…`), so ids of
//! different kinds cannot be swapped by mistake and sort by creation time.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($name:ident, $prefix:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A fresh id.
            pub fn generate() -> Self {
                $name(format!("{}_{}", $prefix, uuid::Uuid::now_v7().simple()))
            }

            /// Accepts a string only if it has this kind's prefix.
            pub fn parse(s: &str) -> Option<Self> {
                let rest = s.strip_prefix($prefix)?.strip_prefix('_')?;
                (!rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
                    .then(|| $name(s.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Wraps a value read back from storage, which only ever holds valid ids.
            #[allow(dead_code, reason = "generated for every id kind; not every kind is read back")]
            pub(crate) fn from_db(s: String) -> Self {
                $name(s)
            }
        }

        impl crate::sql::ToValue for $name {
            fn to_value(&self) -> crate::sql::Value<'_> {
                crate::sql::Value::Text(std::borrow::Cow::Borrowed(&self.0))
            }
        }
        impl crate::sql::Typed for $name {
            const KIND: crate::sql::Kind = crate::sql::Kind::Text;
        }
        impl crate::sql::FromValue for $name {
            fn from_value(v: &crate::sql::Value<'_>) -> std::result::Result<Self, &'static str> {
                <String as crate::sql::FromValue>::from_value(v).map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(TenantId, "ten", "A tenant (company).");
id_type!(UserId, "usr", "A console user (a human).");
id_type!(ProfileId, "prf", "An agent profile.");
id_type!(KeyId, "key", "A scoped or company key.");
id_type!(TokenId, "tok", "A console user's personal API token.");
id_type!(ConnectionId, "ocn", "An MCP client connected through OAuth.");

/// A name people read (a tenant's, a profile's, a token's label): 1 to `max` characters on
/// one line, without surrounding spaces, control characters or the invisible ones that
/// reorder or hide text, so a name can never show as something it is not. Otherwise `code`.
pub(crate) fn display_name(name: &str, max: usize, code: &'static str, what: &str) -> crate::Result<String> {
    if !policy::args::is_plain_name(name, max) {
        return Err(crate::Error::invalid(
            code,
            format!(
                "{what} is 1 to {max} characters on one line, without surrounding spaces, control or hidden characters"
            ),
        ));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_only_their_own_kind() {
        let t = TenantId::generate();
        assert_eq!(TenantId::parse(t.as_str()), Some(t.clone()));
        assert_eq!(ProfileId::parse(t.as_str()), None);
        assert_eq!(TenantId::parse("ten_"), None);
        assert_eq!(TenantId::parse("ten_a'b"), None);
    }
}
