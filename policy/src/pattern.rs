//! Action patterns, which kits, approval rules and rate limits all name: `*`, `cards.*`, or an
//! action itself. Below every module that matches them, so none of those imports another for it.

/// `*` matches everything, `cards.*` every action of `cards`, anything else itself.
pub fn action_pattern_matches(pattern: &str, action: &str) -> bool {
    if pattern.len() == action.len() {
        return pattern == action;
    }
    match pattern.strip_suffix('*') {
        Some("") => true,
        Some(prefix) => action.starts_with(prefix),
        None => false,
    }
}
