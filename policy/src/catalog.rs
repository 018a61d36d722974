//! The tool catalog: every tool declares its name, primitive, effect and price
//! (docs/architecture.md#the-decision-pipeline).
//!
//! Guarantees: a tool cannot be registered without a primitive, so the primitive gate binds
//! on every transport; and one classifier, [`Effect::classify`], turns declarations into
//! effect classes, treating anything unknown as a `write`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::money::{
    DEFAULT_BRAIN_QUERY_PRICE_UNITS, DEFAULT_EMAIL_SEND_PRICE_UNITS, DEFAULT_WEB_READ_PRICE_UNITS, Money,
};
use crate::primitive::Primitive;

/// What a tool does to the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    Write,
    Destructive,
}

impl Effect {
    /// The one classifier: a declared effect string becomes an [`Effect`]. A missing or
    /// unknown declaration is a `write`, never a `read` (the gap seed 003 describes).
    pub fn classify(declared: Option<&str>) -> Effect {
        match declared {
            Some("read") => Effect::Read,
            Some("destructive") => Effect::Destructive,
            _ => Effect::Write,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
        }
    }
}

/// A registered tool: the only form the decision engine accepts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The action name, `primitive.verb` (`cards.charge`) or an MCP tool name.
    pub name: String,
    pub primitive: Primitive,
    pub effect: Effect,
    /// Platform credit price per call, added to any real amount.
    pub price: Money,
}

/// A tool as a connector or transport declares it, before the catalog accepts it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ToolDecl {
    pub name: String,
    pub primitive: Option<String>,
    pub effect: Option<String>,
    pub price: Option<Money>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("tool `{0}` declares no primitive; every tool must name the primitive that gates it")]
    MissingPrimitive(String),
    #[error("tool `{tool}` declares unknown primitive `{primitive}`")]
    UnknownPrimitive { tool: String, primitive: String },
    #[error("tool `{0}` is already registered")]
    Duplicate(String),
    #[error("tool name must not be empty")]
    EmptyName,
}

/// The set of tools a gateway knows, by name.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    tools: BTreeMap<String, ToolSpec>,
}

impl Catalog {
    pub fn register(&mut self, decl: ToolDecl) -> Result<&ToolSpec, CatalogError> {
        if decl.name.is_empty() {
            return Err(CatalogError::EmptyName);
        }
        let Some(raw) = decl.primitive.as_deref() else {
            return Err(CatalogError::MissingPrimitive(decl.name));
        };
        let Some(primitive) = Primitive::parse(raw) else {
            return Err(CatalogError::UnknownPrimitive { tool: decl.name, primitive: raw.to_string() });
        };
        if self.tools.contains_key(&decl.name) {
            return Err(CatalogError::Duplicate(decl.name));
        }
        let spec = ToolSpec {
            name: decl.name.clone(),
            primitive,
            effect: Effect::classify(decl.effect.as_deref()),
            price: decl.price.unwrap_or(Money::ZERO),
        };
        Ok(self.tools.entry(decl.name).or_insert(spec))
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The built-in tools with the default prices (docs/architecture.md#money-and-the-ledger).
    pub fn builtin() -> Catalog {
        let mut c = Catalog::default();
        for (name, primitive, effect, price_units) in BUILTIN_TOOLS {
            c.register(ToolDecl {
                name: (*name).to_string(),
                primitive: Some((*primitive).to_string()),
                effect: Some((*effect).to_string()),
                price: Money::from_units(*price_units),
            })
            .expect("built-in tools are valid");
        }
        c
    }
}

/// name, primitive, effect, platform price in units.
const BUILTIN_TOOLS: &[(&str, &str, &str, i64)] = &[
    ("cards.charge", "cards", "write", 0),
    ("cards.refund", "cards", "write", 0),
    ("trading.order", "trading", "write", 0),
    ("formation.file", "formation", "write", 500),
    ("verification.check", "verification", "read", 100),
    ("domains.purchase", "domains", "write", 0),
    ("phone.provision", "phone", "write", 100),
    ("email.send", "email", "write", DEFAULT_EMAIL_SEND_PRICE_UNITS),
    ("sms.send", "sms", "write", 75),
    ("search.query", "search", "read", 10),
    ("web.read", "web", "read", DEFAULT_WEB_READ_PRICE_UNITS),
    ("images.generate", "images", "write", 400),
    ("llm.complete", "llm", "read", 20),
    ("compute.run", "compute", "write", 100),
    ("browser.session", "browser", "write", 50),
    ("connections.execute", "connections", "write", 0),
    ("connections.tools", "connections", "read", 0),
    ("tasks.delete", "tasks", "destructive", 0),
    ("teams.status", "tasks", "read", 0),
    ("teams.board", "tasks", "read", 0),
    ("teams.run", "tasks", "read", 0),
    ("teams.comment", "tasks", "write", 0),
    ("teams.unblock", "tasks", "write", 0),
    ("teams.command", "tasks", "read", 0),
    ("brain.query", "brain", "read", DEFAULT_BRAIN_QUERY_PRICE_UNITS),
    ("brain.writeback", "brain", "write", 0),
    ("naive_brain_proposals", "brain", "read", 0),
    ("naive_brain_proposal", "brain", "read", 0),
    ("naive_brain_decide_proposal", "brain", "write", 0),
    ("naive_brain_writebacks", "brain", "read", 0),
    ("naive_brain_writeback", "brain", "read", 0),
    ("naive_brain_beliefs", "brain", "read", 0),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_effect_is_write() {
        assert_eq!(Effect::classify(None), Effect::Write);
        assert_eq!(Effect::classify(Some("readonly")), Effect::Write);
        assert_eq!(Effect::classify(Some("read")), Effect::Read);
        assert_eq!(Effect::classify(Some("destructive")), Effect::Destructive);
    }

    #[test]
    fn refuses_a_tool_without_primitive() {
        let mut c = Catalog::default();
        let err = c.register(ToolDecl { name: "x.y".into(), ..Default::default() }).unwrap_err();
        assert_eq!(err, CatalogError::MissingPrimitive("x.y".into()));
        let err = c
            .register(ToolDecl { name: "x.y".into(), primitive: Some("warp".into()), ..Default::default() })
            .unwrap_err();
        assert!(matches!(err, CatalogError::UnknownPrimitive { .. }));
        assert!(c.is_empty());
    }

    #[test]
    fn builtin_prices_match_spec() {
        let c = Catalog::builtin();
        assert_eq!(c.get("web.read").unwrap().price.units(), 25);
        assert_eq!(c.get("email.send").unwrap().price.units(), 8);
        assert_eq!(c.get("brain.query").unwrap().price.units(), 40);
        assert_eq!(c.get("teams.board").unwrap().primitive, Primitive::Tasks);
    }
}
