//! SCIM filters (RFC 7644 §3.4.2.2) over a resource's JSON: parsed once into an expression,
//! then matched against each resource. Attribute names compare case-insensitively, as the
//! RFC says; string values compare case-insensitively unless the attribute is case-exact
//! (`id`, `externalId`). A filter that does not parse is `invalidFilter`; one that names an
//! operator on a value of the wrong type matches nothing.

use serde_json::Value;

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A parsed filter.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `attr op value`.
    Compare {
        path: Vec<String>,
        op: Op,
        value: Value,
    },
    /// `attr pr`.
    Present(Vec<String>),
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    /// `emails[type eq "work" and value co "@example.com"]`.
    Within {
        path: Vec<String>,
        inner: Box<Filter>,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Open,
    Close,
    OpenBracket,
    CloseBracket,
}

fn tokens(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' => {
                chars.next();
            }
            '(' => {
                chars.next();
                out.push(Token::Open);
            }
            ')' => {
                chars.next();
                out.push(Token::Close);
            }
            '[' => {
                chars.next();
                out.push(Token::OpenBracket);
            }
            ']' => {
                chars.next();
                out.push(Token::CloseBracket);
            }
            '"' => out.push(Token::Str(string(&mut chars)?)),
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if matches!(c, ' ' | '\t' | '(' | ')' | '[' | ']' | '"') {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push(Token::Word(w));
            }
        }
    }
    Ok(out)
}

/// A JSON string literal, escapes included.
fn string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let mut raw = String::from('"');
    chars.next();
    let mut escaped = false;
    for c in chars.by_ref() {
        raw.push(c);
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            return serde_json::from_str(&raw).map_err(|_| "a string value does not read".to_string());
        }
    }
    Err("a string value is not closed with \"".into())
}

/// Parses a filter; the error says what is wrong, for the `invalidFilter` body.
pub fn parse(s: &str) -> Result<Filter, String> {
    if s.len() > 4096 {
        return Err("a filter is at most 4,096 characters".into());
    }
    let toks = tokens(s)?;
    let mut p = Parser { toks, at: 0, depth: 0 };
    let f = p.or()?;
    if p.at != p.toks.len() {
        return Err(format!("unexpected {:?} after the filter", p.toks[p.at]));
    }
    Ok(f)
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.at), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w))
    }

    fn or(&mut self) -> Result<Filter, String> {
        let mut left = self.and()?;
        while self.peek_word("or") {
            self.at += 1;
            left = Filter::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Filter, String> {
        let mut left = self.unary()?;
        while self.peek_word("and") {
            self.at += 1;
            left = Filter::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Filter, String> {
        self.depth += 1;
        if self.depth > 32 {
            return Err("a filter nests at most 32 deep".into());
        }
        let f = if self.peek_word("not") {
            self.at += 1;
            Filter::Not(Box::new(self.group()?))
        } else if matches!(self.toks.get(self.at), Some(Token::Open)) {
            self.group()?
        } else {
            self.comparison()?
        };
        self.depth -= 1;
        Ok(f)
    }

    fn group(&mut self) -> Result<Filter, String> {
        if self.toks.get(self.at) != Some(&Token::Open) {
            return Err("`not` takes a filter in parentheses".into());
        }
        self.at += 1;
        let f = self.or()?;
        if self.toks.get(self.at) != Some(&Token::Close) {
            return Err("a `(` is not closed".into());
        }
        self.at += 1;
        Ok(f)
    }

    fn comparison(&mut self) -> Result<Filter, String> {
        let Some(Token::Word(attr)) = self.toks.get(self.at).cloned() else {
            return Err("expected an attribute name".into());
        };
        self.at += 1;
        let path = attr_path(&attr)?;
        if self.toks.get(self.at) == Some(&Token::OpenBracket) {
            self.at += 1;
            let inner = self.or()?;
            if self.toks.get(self.at) != Some(&Token::CloseBracket) {
                return Err("a `[` is not closed".into());
            }
            self.at += 1;
            return Ok(Filter::Within { path, inner: Box::new(inner) });
        }
        let Some(Token::Word(op)) = self.toks.get(self.at).cloned() else {
            return Err(format!("expected an operator after `{attr}`"));
        };
        self.at += 1;
        if op.eq_ignore_ascii_case("pr") {
            return Ok(Filter::Present(path));
        }
        let op = match op.to_ascii_lowercase().as_str() {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "co" => Op::Co,
            "sw" => Op::Sw,
            "ew" => Op::Ew,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "le" => Op::Le,
            other => {
                return Err(format!("`{other}` is not an operator (eq, ne, co, sw, ew, gt, ge, lt, le, pr)"));
            }
        };
        let value = match self.toks.get(self.at).cloned() {
            Some(Token::Str(s)) => Value::String(s),
            Some(Token::Word(w)) => match w.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                n => n
                    .parse::<serde_json::Number>()
                    .map(Value::Number)
                    .map_err(|_| format!("`{n}` is not a value"))?,
            },
            _ => return Err("expected a value".into()),
        };
        self.at += 1;
        Ok(Filter::Compare { path, op, value })
    }
}

/// `name.givenName` or `urn:…:User:userName` as its parts, spelled as given (they compare
/// case-insensitively).
pub fn attr_path(attr: &str) -> Result<Vec<String>, String> {
    let short = match attr.rfind(':') {
        Some(i) if attr.to_ascii_lowercase().starts_with("urn:") => &attr[i + 1..],
        _ => attr,
    };
    let parts: Vec<String> = short.split('.').map(str::to_string).collect();
    let ok = |p: &String| {
        !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
    };
    if parts.is_empty() || parts.len() > 2 || !parts.iter().all(ok) {
        return Err(format!("`{attr}` is not an attribute path"));
    }
    Ok(parts)
}

/// The values at `path` in `doc` (a multi-valued attribute gives each of its values).
fn values_at<'a>(doc: &'a Value, path: &[String]) -> Vec<&'a Value> {
    let Some((first, rest)) = path.split_first() else { return vec![doc] };
    let Some(obj) = doc.as_object() else { return Vec::new() };
    let Some(v) = obj.iter().find(|(k, _)| k.eq_ignore_ascii_case(first)).map(|(_, v)| v) else {
        return Vec::new();
    };
    match v {
        Value::Array(items) => items.iter().flat_map(|i| values_at(i, rest)).collect(),
        v => values_at(v, rest),
    }
}

fn case_exact(path: &[String]) -> bool {
    path.first().is_some_and(|p| p.eq_ignore_ascii_case("id") || p.eq_ignore_ascii_case("externalId"))
}

fn compare(actual: &Value, op: Op, expected: &Value, exact: bool) -> bool {
    match (actual, expected) {
        (Value::String(a), Value::String(e)) => {
            let (a, e) = if exact { (a.clone(), e.clone()) } else { (a.to_lowercase(), e.to_lowercase()) };
            match op {
                Op::Eq => a == e,
                Op::Ne => a != e,
                Op::Co => a.contains(&e),
                Op::Sw => a.starts_with(&e),
                Op::Ew => a.ends_with(&e),
                Op::Gt => a > e,
                Op::Ge => a >= e,
                Op::Lt => a < e,
                Op::Le => a <= e,
            }
        }
        (Value::Number(a), Value::Number(e)) => {
            let (a, e) = (a.as_f64().unwrap_or(f64::NAN), e.as_f64().unwrap_or(f64::NAN));
            match op {
                Op::Eq => a == e,
                Op::Ne => a != e,
                Op::Gt => a > e,
                Op::Ge => a >= e,
                Op::Lt => a < e,
                Op::Le => a <= e,
                _ => false,
            }
        }
        (Value::Bool(a), Value::Bool(e)) => match op {
            Op::Eq => a == e,
            Op::Ne => a != e,
            _ => false,
        },
        _ => op == Op::Ne,
    }
}

impl Filter {
    /// Whether the resource `doc` matches.
    pub fn matches(&self, doc: &Value) -> bool {
        match self {
            Filter::Compare { path, op, value } => {
                let found = values_at(doc, path);
                if found.is_empty() {
                    return *op == Op::Ne && !value.is_null();
                }
                found.iter().any(|v| compare(v, *op, value, case_exact(path)))
            }
            Filter::Present(path) => values_at(doc, path).iter().any(|v| {
                !v.is_null() && v.as_str() != Some("") && v.as_array().is_none_or(|a| !a.is_empty())
            }),
            Filter::And(a, b) => a.matches(doc) && b.matches(doc),
            Filter::Or(a, b) => a.matches(doc) || b.matches(doc),
            Filter::Not(f) => !f.matches(doc),
            Filter::Within { path, inner } => values_at(doc, path).iter().any(|v| inner.matches(v)),
        }
    }

    /// The userName a filter asks for exactly (`userName eq "x"`), for the indexed read.
    pub fn exact(&self, attr: &str) -> Option<&str> {
        match self {
            Filter::Compare { path, op: Op::Eq, value: Value::String(s) }
                if path.len() == 1 && path[0].eq_ignore_ascii_case(attr) =>
            {
                Some(s)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_parse_and_match_as_the_rfc_describes() {
        let doc = json!({ "userName": "Bjensen", "active": true, "meta": { "version": "3" },
                          "emails": [{ "type": "work", "value": "bjensen@example.com" }] });
        for (f, want) in [
            ("userName eq \"bjensen\"", true),
            ("USERNAME Eq \"BJENSEN\"", true),
            ("userName sw \"bj\" and active eq true", true),
            ("userName eq \"x\" or emails[type eq \"work\" and value co \"@example.com\"]", true),
            ("not (active eq true)", false),
            ("emails.value ew \".com\"", true),
            ("title pr", false),
            ("urn:ietf:params:scim:schemas:core:2.0:User:userName eq \"bjensen\"", true),
        ] {
            assert_eq!(parse(f).unwrap().matches(&doc), want, "{f}");
        }
        for bad in ["userName", "userName xx \"a\"", "(userName eq \"a\"", "userName eq \"a", "a eq b c"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("userName eq \"a\"").unwrap().exact("username"), Some("a"));
    }
}
