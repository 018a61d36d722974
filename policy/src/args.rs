//! Argument declarations: what each action accepts, in one place.
//!
//! Every catalog action declares its arguments here: each one's name, kind (an amount, a line
//! of text, one of a few words, a number, a list, an object), whether it is required, its
//! bounds, and which of them the decision engine reads (the amount the budget counts, the
//! recipient and merchant the can rules check, the toolkit and tool of a connected app).
//! [`ArgsDecl::check`] is the only way from a caller's JSON to the engine's
//! [`CheckedArgs`], so no transport can skip it: an argument that is not declared, a required
//! one that is missing, a value of the wrong kind or out of bounds is refused with a stable
//! code before anything is decided or written. [`ArgsDecl::json_schema`] describes the same
//! declaration as JSON Schema (MCP's `inputSchema`), so what a client is told and what the
//! gateway accepts cannot drift apart.

use serde_json::{Map, Value, json};

use crate::money::{MAX_ACTION_AMOUNT, Money, MoneyError};

/// The largest argument object accepted, serialized.
pub const MAX_ARGS_BYTES: usize = 16 * 1024;

/// What kind of value an argument holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// An amount more than zero and at most [`MAX_ACTION_AMOUNT`], as a decimal string
    /// ("48.00"), never a float.
    Amount,
    /// One line of 1 to `max` characters: no control or bidirectional-override characters
    /// (names, addresses, ids, URLs).
    Line { max: usize },
    /// Free text of 1 to `max` characters; line breaks and tabs allowed, other control
    /// characters not (a mail body, a prompt).
    Text { max: usize },
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A whole number from `min` to `max`.
    Integer { min: i64, max: i64 },
    /// A JSON object (a connected app's own arguments).
    Object,
    /// A JSON array of 1 to `max` items.
    List { max: usize },
    /// An identifier that travels in a URL path (a task's, a run's): 1 to `max` of
    /// `A-Z a-z 0-9 . _ : -`, starting with a letter or digit, so it is one path segment and
    /// never `.` or `..`.
    Ref { max: usize },
}

/// What the decision engine reads from an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRole {
    /// Carried to the connector only.
    Plain,
    /// The real-world amount the hold reserves and the caps count.
    Amount,
    /// Checked against a can rule's `recipients`.
    Recipient,
    /// Checked against a can rule's `merchants`.
    Merchant,
    /// A connected app's toolkit, checked against the kit's toolkits.
    Toolkit,
    /// The tool within that toolkit.
    Tool,
}

/// One declared argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgKind,
    pub required: bool,
    pub role: ArgRole,
    /// One sentence for the caller: what the argument is.
    pub about: &'static str,
}

/// Every argument one action accepts. Nothing else is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgsDecl {
    pub action: &'static str,
    pub args: &'static [Arg],
}

/// What the engine needs from a call's arguments, taken from a checked call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckedArgs {
    pub amount: Money,
    pub recipient: Option<String>,
    pub merchant: Option<String>,
    pub toolkit: Option<(String, String)>,
}

/// Why arguments were refused: a stable `code` and a message that says what to send instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ArgError {
    pub code: &'static str,
    pub message: String,
}

fn refuse(code: &'static str, message: String) -> ArgError {
    ArgError { code, message }
}

/// Whether `s` is one plain line: no control characters, and none of the invisible
/// characters that reorder or hide text (bidirectional overrides and isolates, zero-width
/// joiners, the byte-order mark), which could make a name read as something it is not.
pub fn is_plain_line(s: &str) -> bool {
    s.chars().all(|c| !c.is_control() && !is_hidden_format(c))
}

/// Free text: line breaks and tabs allowed, other control and hidden characters not.
pub fn is_plain_text(s: &str) -> bool {
    s.chars().all(|c| matches!(c, '\n' | '\r' | '\t') || (!c.is_control() && !is_hidden_format(c)))
}

/// A name people read: 1 to `max` characters, no leading or trailing whitespace, one plain
/// line. [`NAME_PATTERN`] says the same as a regular expression, for documents.
pub fn is_plain_name(s: &str, max: usize) -> bool {
    !s.is_empty() && s.trim() == s && s.chars().count() <= max && is_plain_line(s)
}

/// [`is_plain_name`] as a regular expression (ECMA-262 and Python alike), without the length.
pub const NAME_PATTERN: &str = concat!(
    r"^[^\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]",
    r"([^\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*",
    r"[^\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff])?$"
);

/// [`is_plain_text`] with at least one character that is not a space, as a regular expression.
pub const TEXT_PATTERN: &str = concat!(
    r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*",
    r"[^\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]",
    r"[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*$"
);

/// [`is_plain_text`] as a regular expression, blank allowed.
pub const OPTIONAL_TEXT_PATTERN: &str = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*$";

/// Free text's JSON Schema, at most `max` characters: [`TEXT_PATTERN`] when it is required,
/// [`OPTIONAL_TEXT_PATTERN`] when blank is fine.
#[cfg(feature = "openapi")]
pub fn text_schema(max: usize, required: bool) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(if required { TEXT_PATTERN } else { OPTIONAL_TEXT_PATTERN }))
        .max_length(Some(max))
        .build()
}

/// A name's JSON Schema in the API document: a string [`is_plain_name`] accepts.
#[cfg(feature = "openapi")]
pub fn name_schema(max: usize) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(NAME_PATTERN))
        .min_length(Some(1))
        .max_length(Some(max))
        .build()
}

fn is_hidden_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{061C}' | '\u{00AD}' | '\u{180E}' | '\u{FEFF}')
}

impl ArgsDecl {
    /// Checks `args` against the declaration and returns what the engine reads from them.
    pub fn check(&self, args: &Value) -> Result<CheckedArgs, ArgError> {
        let size = args.to_string().len();
        if size > MAX_ARGS_BYTES {
            return Err(refuse(
                "args_too_large",
                format!("arguments are {size} bytes; the limit is {MAX_ARGS_BYTES}"),
            ));
        }
        let Some(obj) = args.as_object() else {
            return Err(refuse(
                "invalid_args",
                format!("the arguments of {} must be a JSON object", self.action),
            ));
        };
        if let Some(unknown) = obj.keys().find(|k| !self.args.iter().any(|a| a.name == k.as_str())) {
            return Err(refuse(
                "unknown_argument",
                format!("`{unknown}` is not an argument of {}; it takes {}", self.action, self.names()),
            ));
        }
        let mut out = CheckedArgs::default();
        let (mut toolkit, mut tool) = (None, None);
        for arg in self.args {
            if obj.get(arg.name).is_some_and(Value::is_null) {
                return Err(refuse(
                    "invalid_argument",
                    format!("{} `{}` is null; leave it out instead", self.action, arg.name),
                ));
            }
            let Some(v) = obj.get(arg.name) else {
                if arg.required {
                    return Err(refuse(
                        "missing_argument",
                        format!("{} needs `{}`: {}", self.action, arg.name, arg.about),
                    ));
                }
                continue;
            };
            let text = arg.check_value(self.action, v)?;
            let amount = match arg.kind {
                ArgKind::Amount => parse_amount(self.action, arg.name, v)?,
                _ => Money::ZERO,
            };
            match arg.role {
                ArgRole::Plain => {}
                ArgRole::Amount => out.amount = amount,
                ArgRole::Recipient => out.recipient = text,
                ArgRole::Merchant => out.merchant = text,
                ArgRole::Toolkit => toolkit = text,
                ArgRole::Tool => tool = text,
            }
        }
        out.toolkit = toolkit.zip(tool);
        Ok(out)
    }

    fn names(&self) -> String {
        if self.args.is_empty() {
            return "no arguments".to_string();
        }
        self.args.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
    }

    /// The declaration as a JSON Schema object: the same names, kinds, bounds and required
    /// list that [`ArgsDecl::check`] enforces, and no other properties.
    pub fn json_schema(&self) -> Value {
        let mut properties = Map::new();
        for a in self.args {
            let mut s = a.kind.schema();
            s["description"] = Value::String(a.about.to_string());
            properties.insert(a.name.to_string(), s);
        }
        let required: Vec<&str> = self.args.iter().filter(|a| a.required).map(|a| a.name).collect();
        json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
    }
}

/// An amount written the one way arguments take it: digits without a leading zero (or a
/// single `0`), then optionally a point and one to four digits. No sign, no `$`, no spaces.
fn is_canonical_amount(s: &str) -> bool {
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    digits(whole)
        && (whole == "0" || !whole.starts_with('0'))
        && frac.is_none_or(|f| digits(f) && f.len() <= 4)
}

/// What [`ArgKind::Amount`] accepts as a regular expression: more than 0, at most
/// 1000000000, at most four decimals, in [`is_canonical_amount`]'s form.
pub const AMOUNT_PATTERN: &str = concat!(
    r"^([1-9][0-9]{0,8}(\.[0-9]{1,4})?|1000000000(\.0{1,4})?",
    r"|0\.([1-9][0-9]{0,3}|0[1-9][0-9]{0,2}|00[1-9][0-9]?|000[1-9]))$"
);

/// What [`ArgKind::Line`] accepts as a regular expression (without its length): one line
/// with at least one character that is not a space.
pub const LINE_PATTERN: &str = concat!(
    r"^[^\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*",
    r"[^\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]",
    r"[^\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u061c\u00ad\u180e\ufeff]*$"
);

fn parse_amount(action: &str, name: &str, v: &Value) -> Result<Money, ArgError> {
    let s = v.as_str().unwrap_or_default();
    if !is_canonical_amount(s) {
        return Err(refuse(
            "invalid_amount",
            format!("{action} `{name}` is written like \"48.00\": digits, then at most four decimals"),
        ));
    }
    let m = Money::parse(s).map_err(|e| match e {
        MoneyError::Overflow => too_large(action, name, s),
        e => refuse(
            "invalid_amount",
            format!("{action} `{name}`: {e}; write it as a string such as \"48.00\""),
        ),
    })?;
    if m > MAX_ACTION_AMOUNT {
        return Err(too_large(action, name, s));
    }
    if m.is_zero() {
        return Err(refuse("invalid_amount", format!("{action} `{name}` must be more than $0.00")));
    }
    Ok(m)
}

fn too_large(action: &str, name: &str, given: &str) -> ArgError {
    refuse(
        "amount_too_large",
        format!("{action} `{name}` is {given}; one action carries at most {MAX_ACTION_AMOUNT}"),
    )
}

impl Arg {
    /// Checks one present value's kind and bounds; returns it as text for text kinds.
    fn check_value(&self, action: &str, v: &Value) -> Result<Option<String>, ArgError> {
        let bad =
            |what: String| refuse("invalid_argument", format!("{action} `{}` must be {what}", self.name));
        match self.kind {
            ArgKind::Amount => match v {
                Value::String(_) => Ok(None),
                _ => Err(refuse(
                    "invalid_amount",
                    format!("{action} `{}` is an amount written as a string such as \"48.00\"", self.name),
                )),
            },
            ArgKind::Line { max } | ArgKind::Text { max } => {
                let line = matches!(self.kind, ArgKind::Line { .. });
                let ok = |s: &str| if line { is_plain_line(s) } else { is_plain_text(s) };
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() && s.chars().count() <= max && ok(s) => {
                        Ok(Some(s.to_string()))
                    }
                    _ if line => {
                        Err(bad(format!("one line of 1 to {max} characters, without control characters")))
                    }
                    _ => Err(bad(format!("text of 1 to {max} characters"))),
                }
            }
            ArgKind::OneOf(words) => match v.as_str() {
                Some(s) if words.contains(&s) => Ok(Some(s.to_string())),
                _ => Err(bad(format!("one of {}", words.join(", ")))),
            },
            ArgKind::Integer { min, max } => match whole_number(v) {
                Some(n) if (min..=max).contains(&n) => Ok(None),
                _ => Err(bad(format!("a whole number from {min} to {max}"))),
            },
            ArgKind::Object => v.is_object().then_some(None).ok_or_else(|| bad("a JSON object".into())),
            ArgKind::List { max } => match v.as_array() {
                Some(items) if !items.is_empty() && items.len() <= max => Ok(None),
                _ => Err(bad(format!("a list of 1 to {max} items"))),
            },
            ArgKind::Ref { max } => match v.as_str() {
                Some(s) if is_ref(s, max) => Ok(Some(s.to_string())),
                _ => Err(bad(format!(
                    "an id of 1 to {max} letters, digits, '.', '_', ':' and '-', starting with a letter or digit"
                ))),
            },
        }
    }
}

/// What [`ArgKind::Ref`] accepts as a regular expression (without its length).
pub const REF_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$";

/// Whether `s` is a [`ArgKind::Ref`] of at most `max` characters.
pub fn is_ref(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// A JSON number that is a whole number (`5` or `5.0`, as JSON Schema's `integer` allows).
fn whole_number(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
}

impl ArgKind {
    fn schema(self) -> Value {
        match self {
            ArgKind::Amount => json!({ "type": "string", "pattern": AMOUNT_PATTERN }),
            ArgKind::Line { max } => json!({ "type": "string", "pattern": LINE_PATTERN, "maxLength": max }),
            ArgKind::Text { max } => json!({ "type": "string", "pattern": TEXT_PATTERN, "maxLength": max }),
            ArgKind::OneOf(words) => json!({ "type": "string", "enum": words }),
            ArgKind::Integer { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
            ArgKind::Object => json!({ "type": "object" }),
            ArgKind::List { max } => json!({ "type": "array", "items": {}, "minItems": 1, "maxItems": max }),
            ArgKind::Ref { max } => json!({ "type": "string", "pattern": REF_PATTERN, "maxLength": max }),
        }
    }
}

/// The declaration of `action`, if it is a catalog action.
pub fn declaration(action: &str) -> Option<&'static ArgsDecl> {
    DECLARATIONS.iter().find(|d| d.action == action)
}

const fn arg(name: &'static str, kind: ArgKind, required: bool, about: &'static str) -> Arg {
    Arg { name, kind, required, role: ArgRole::Plain, about }
}

const fn with_role(a: Arg, role: ArgRole) -> Arg {
    Arg { role, ..a }
}

const ID: ArgKind = ArgKind::Line { max: 200 };
/// A team runtime's task or run: it travels in the control wire's paths.
const RUNTIME_REF: ArgKind = ArgKind::Ref { max: 200 };
const NAME: ArgKind = ArgKind::Line { max: 200 };
const URL: ArgKind = ArgKind::Line { max: 2048 };
const ADDRESS: ArgKind = ArgKind::Line { max: 320 };
const BODY: ArgKind = ArgKind::Text { max: 10_000 };
const PROMPT: ArgKind = ArgKind::Text { max: 8_000 };
const MEMO: Arg =
    arg("memo", ArgKind::Line { max: 500 }, false, "A note kept with the action, such as an order number.");
const LIMIT: Arg =
    arg("limit", ArgKind::Integer { min: 1, max: 500 }, false, "How many items at most (1 to 500).");

macro_rules! decl {
    ($action:literal: $($arg:expr),* $(,)?) => {
        ArgsDecl { action: $action, args: &[$($arg),*] }
    };
}

/// Every catalog action's arguments (a test checks that the two lists name the same actions).
pub static DECLARATIONS: &[ArgsDecl] = &[
    decl!("cards.charge":
        with_role(arg("amount", ArgKind::Amount, true, "The amount to charge, such as \"48.00\"."), ArgRole::Amount),
        with_role(arg("merchant", NAME, true, "The merchant charged, such as \"acme-supplies\"."), ArgRole::Merchant),
        MEMO),
    decl!("cards.refund":
        arg("charge_id", ID, true, "The charge to refund."),
        arg("amount", ArgKind::Amount, true, "The amount to refund, at most what was charged."),
        MEMO),
    decl!("trading.order":
        arg("symbol", ArgKind::Line { max: 20 }, true, "The instrument, such as \"ACME\"."),
        arg("side", ArgKind::OneOf(&["buy", "sell"]), true, "buy or sell."),
        arg("quantity", ArgKind::Integer { min: 1, max: 1_000_000_000 }, true, "How many units."),
        with_role(arg("amount", ArgKind::Amount, true, "The order's notional value, which the budget counts."), ArgRole::Amount)),
    decl!("formation.file":
        arg("company_name", NAME, true, "The company to form."),
        arg("jurisdiction", ArgKind::Line { max: 100 }, true, "Where, such as \"DE\"."),
        MEMO),
    decl!("verification.check": arg("subject", NAME, true, "Who or what to verify.")),
    decl!("domains.purchase":
        arg("domain", ArgKind::Line { max: 253 }, true, "The domain name, such as \"example.com\"."),
        with_role(arg("amount", ArgKind::Amount, true, "The price quoted, which the budget counts."), ArgRole::Amount),
        arg("years", ArgKind::Integer { min: 1, max: 10 }, false, "Registration years (1 to 10).")),
    decl!("phone.provision": arg("area_code", ArgKind::Line { max: 10 }, false, "The area code wanted.")),
    decl!("email.send":
        with_role(arg("to", ADDRESS, true, "The one recipient's address."), ArgRole::Recipient),
        arg("subject", ArgKind::Line { max: 998 }, false, "The subject line."),
        arg("body", BODY, false, "The message text.")),
    decl!("sms.send":
        with_role(arg("to", ArgKind::Line { max: 32 }, true, "The one recipient's phone number."), ArgRole::Recipient),
        arg("body", ArgKind::Text { max: 1_600 }, true, "The message text.")),
    decl!("search.query": arg("q", ArgKind::Line { max: 2_000 }, true, "What to search for.")),
    decl!("web.read": arg("url", URL, true, "The page to read.")),
    decl!("images.generate": arg("prompt", PROMPT, true, "What to draw.")),
    decl!("llm.complete": arg("prompt", PROMPT, true, "The prompt to complete.")),
    decl!("compute.run":
        arg("task", ArgKind::Line { max: 500 }, true, "The named job to run."),
        arg("input", ArgKind::Object, false, "The job's input.")),
    decl!("browser.session": arg("url", URL, true, "The page to open.")),
    decl!("connections.execute":
        with_role(arg("toolkit", NAME, true, "The connected app's toolkit."), ArgRole::Toolkit),
        with_role(arg("tool", NAME, true, "The tool within the toolkit."), ArgRole::Tool),
        arg("arguments", ArgKind::Object, false, "The tool's own arguments.")),
    decl!("connections.tools": arg("toolkit", NAME, false, "Only this toolkit's tools.")),
    decl!("tasks.delete": arg("task_id", RUNTIME_REF, true, "The task to delete.")),
    decl!("teams.status":),
    decl!("teams.board":
        arg("status", ArgKind::Line { max: 40 }, false, "Only tasks with this status."),
        arg("role", ArgKind::Line { max: 80 }, false, "Only tasks for this role.")),
    decl!("teams.run": arg("run_id", RUNTIME_REF, true, "The run.")),
    decl!("teams.comment": arg("task_id", RUNTIME_REF, true, "The task."), arg("body", BODY, true, "The comment.")),
    decl!("teams.unblock": arg("task_id", RUNTIME_REF, true, "The task."), arg("because", BODY, true, "Why it may go on.")),
    decl!("teams.command": arg("command_id", ID, true, "The command id a comment or unblock answered with.")),
    decl!("brain.query": arg("q", ArgKind::Line { max: 2_000 }, true, "What to ask the company's brain.")),
    decl!("brain.writeback":
        arg("run_id", ID, true, "The agent run the claims come from."),
        arg("source", NAME, true, "Where the claims were found."),
        arg("claims", ArgKind::List { max: 100 }, true, "The claims, each {object_type, content}.")),
    decl!("naive_brain_proposals":
        arg("status", ArgKind::OneOf(&["pending", "parked", "accepted", "rejected"]), false, "Only proposals with this status."),
        arg("object_type", ArgKind::Line { max: 40 }, false, "Only proposals of this object type."),
        arg("run_id", ID, false, "Only proposals from this run."),
        LIMIT),
    decl!("naive_brain_proposal": arg("proposal_id", ID, true, "The proposal.")),
    decl!("naive_brain_decide_proposal":
        arg("proposal_id", ID, true, "The proposal."),
        arg("decision", ArgKind::OneOf(&["accept", "reject"]), true, "accept or reject; an agent's accept waits for a human."),
        arg("because", ArgKind::Text { max: 2_000 }, true, "Why, for the decision trail.")),
    decl!("naive_brain_writebacks": LIMIT),
    decl!("naive_brain_writeback": arg("writeback_id", ID, true, "The writeback.")),
    decl!("naive_brain_beliefs":
        arg("object_type", ArgKind::Line { max: 40 }, false, "Only beliefs of this object type."),
        arg("q", ArgKind::Line { max: 200 }, false, "Only beliefs whose content contains this text (any case)."),
        LIMIT),
];

/// The gateway's own tools, which are not catalog actions: they read an approval or dry-run a
/// call, and cost nothing.
pub static GATEWAY_TOOLS: &[ArgsDecl] = &[
    decl!("naive_approvals_get": arg("approval_id", ID, true, "The approval a parked call returned.")),
    decl!("naive_policy_explain":
        arg("action", ArgKind::Line { max: 200 }, true, "The action, such as \"cards.charge\" or \"naive_cards_charge\"."),
        arg("args", ArgKind::Object, false, "The arguments the call would carry.")),
    decl!("naive_kit_replay":
        arg("draft", ArgKind::Object, true, "A draft of your own AccountKit, as JSON."),
        arg("days", ArgKind::Integer { min: 1, max: 31 }, false, "How many days back to replay; 7 unless given.")),
];

/// The declaration of one of the gateway's own tools.
pub fn gateway_tool(name: &str) -> Option<&'static ArgsDecl> {
    GATEWAY_TOOLS.iter().find(|d| d.action == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn check(action: &str, args: Value) -> Result<CheckedArgs, ArgError> {
        declaration(action).unwrap().check(&args)
    }

    #[test]
    fn every_catalog_action_has_exactly_one_declaration() {
        let catalog = Catalog::builtin();
        for tool in catalog.iter() {
            assert!(declaration(&tool.name).is_some(), "{} declares no arguments", tool.name);
        }
        for d in DECLARATIONS {
            assert!(catalog.get(d.action).is_some(), "{} is declared but not in the catalog", d.action);
            assert_eq!(DECLARATIONS.iter().filter(|o| o.action == d.action).count(), 1, "{}", d.action);
        }
    }

    #[test]
    fn a_charge_needs_an_amount_and_reads_it_exactly() {
        assert_eq!(check("cards.charge", json!({"merchant": "acme"})).unwrap_err().code, "missing_argument");
        let ok = check("cards.charge", json!({"amount": "48.50", "merchant": "acme", "memo": "x"})).unwrap();
        assert_eq!((ok.amount, ok.merchant.as_deref()), (Money::units_const(485_000), Some("acme")));
        for (amount, code) in [
            (json!("0"), "invalid_amount"),
            (json!(48), "invalid_amount"),
            (json!(2.5), "invalid_amount"),
            (json!("1.00001"), "invalid_amount"),
            (json!("1000000000.0001"), "amount_too_large"),
            (json!("900000000000000"), "amount_too_large"),
        ] {
            let e = check("cards.charge", json!({"amount": amount, "merchant": "acme"})).unwrap_err();
            assert_eq!(e.code, code, "{amount}: {e}");
        }
    }

    #[test]
    fn unknown_arguments_are_refused_by_name() {
        let e = check("email.send", json!({"to": "a@x.test", "bcc": "spy@x.test"})).unwrap_err();
        assert_eq!(e.code, "unknown_argument");
        assert!(e.message.contains("`bcc`") && e.message.contains("`to`"), "{e}");
        assert_eq!(check("web.read", json!([1])).unwrap_err().code, "invalid_args");
        assert_eq!(check("teams.status", json!({"x": 1})).unwrap_err().code, "unknown_argument");
        for bad in ["..", ".", "../x", "a/b", "%2e%2e", "-x", ""] {
            let err = check("teams.run", json!({ "run_id": bad })).unwrap_err();
            assert_eq!(err.code, "invalid_argument", "{bad}");
        }
        assert!(check("teams.run", json!({ "run_id": "run-7.2:a_b" })).is_ok());
    }

    #[test]
    fn kinds_and_bounds_are_checked() {
        let bad = |action: &str, args: Value| check(action, args).unwrap_err().code;
        assert_eq!(bad("email.send", json!({"to": 7})), "invalid_argument");
        assert_eq!(bad("email.send", json!({"to": "a@x\u{202E}tset.x"})), "invalid_argument");
        assert_eq!(bad("email.send", json!({"to": "  "})), "invalid_argument");
        assert_eq!(
            bad("trading.order", json!({"symbol": "A", "side": "hold", "quantity": 1, "amount": "1"})),
            "invalid_argument"
        );
        assert_eq!(
            bad("trading.order", json!({"symbol": "A", "side": "buy", "quantity": 0, "amount": "1"})),
            "invalid_argument"
        );
        assert_eq!(bad("web.read", json!({"url": "x".repeat(3000)})), "invalid_argument");
        assert_eq!(bad("web.read", json!({"url": "x".repeat(20_000)})), "args_too_large");
        assert!(check("email.send", json!({"to": "a@x.test", "body": "line one\nline two"})).is_ok());
        let t = check(
            "connections.execute",
            json!({"toolkit": "github", "tool": "issues.create", "arguments": {}}),
        )
        .unwrap();
        assert_eq!(t.toolkit, Some(("github".into(), "issues.create".into())));
    }

    #[test]
    fn the_schema_says_what_check_enforces() {
        let s = declaration("cards.charge").unwrap().json_schema();
        assert_eq!(s["required"], json!(["amount", "merchant"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["properties"]["amount"]["type"], "string");
        assert!(s["properties"]["memo"]["description"].as_str().is_some());
        assert_eq!(declaration("teams.status").unwrap().json_schema()["properties"], json!({}));
    }

    #[test]
    fn names_with_hidden_characters_are_not_plain() {
        assert!(is_plain_line("procurement-bot"));
        assert!(is_plain_line("Ünïcödé names are fine"));
        for bad in ["a\u{202E}b", "tab\there", "nul\0", "zero\u{200B}width", "\u{2066}iso"] {
            assert!(!is_plain_line(bad), "{bad:?}");
        }
        assert!(is_plain_text("two\nlines") && !is_plain_text("bell\u{7}"));
        assert!(is_plain_name("research bot", 80) && !is_plain_name(" padded", 80) && !is_plain_name("", 80));
    }
}
