//! CSV fields for the exports finance and auditors open in spreadsheets (the ledger, the
//! approvals record): quoted when they hold a comma, quote or line break, and never read as a
//! formula, because an agent's words (a justification, a memo) reach them.

/// One field, quoted as RFC 4180 asks; a field a spreadsheet would run as a formula (starting
/// `=`, `+`, `-`, `@`, a tab or a carriage return) is kept as text with a leading `'`.
pub fn field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '@', '\t', '\r']) || (s.starts_with('-') && s.parse::<f64>().is_err())
    {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_and_never_formulas() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("-12.50"), "-12.50", "a negative amount stays a number");
        assert_eq!(field("-cmd"), "'-cmd");
    }
}
