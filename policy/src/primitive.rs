//! Primitives: the coarse families of actions a kit switches on or off (docs/architecture.md#accountkits).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A family of actions. A kit that does not enable a primitive refuses every action in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Primitive {
    Cards,
    Trading,
    Formation,
    Verification,
    Domains,
    Phone,
    Email,
    Sms,
    Search,
    Web,
    Images,
    Llm,
    Compute,
    Browser,
    Connections,
    Tasks,
    Brain,
}

impl Primitive {
    /// Every primitive, in declaration order.
    pub const ALL: [Primitive; 17] = [
        Primitive::Cards,
        Primitive::Trading,
        Primitive::Formation,
        Primitive::Verification,
        Primitive::Domains,
        Primitive::Phone,
        Primitive::Email,
        Primitive::Sms,
        Primitive::Search,
        Primitive::Web,
        Primitive::Images,
        Primitive::Llm,
        Primitive::Compute,
        Primitive::Browser,
        Primitive::Connections,
        Primitive::Tasks,
        Primitive::Brain,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Primitive::Cards => "cards",
            Primitive::Trading => "trading",
            Primitive::Formation => "formation",
            Primitive::Verification => "verification",
            Primitive::Domains => "domains",
            Primitive::Phone => "phone",
            Primitive::Email => "email",
            Primitive::Sms => "sms",
            Primitive::Search => "search",
            Primitive::Web => "web",
            Primitive::Images => "images",
            Primitive::Llm => "llm",
            Primitive::Compute => "compute",
            Primitive::Browser => "browser",
            Primitive::Connections => "connections",
            Primitive::Tasks => "tasks",
            Primitive::Brain => "brain",
        }
    }

    pub fn parse(s: &str) -> Option<Primitive> {
        Primitive::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Bit for [`PrimitiveSet`].
    const fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of primitives as a bit set: the primitive gate is one AND on the hot path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PrimitiveSet(u32);

impl PrimitiveSet {
    pub const EMPTY: PrimitiveSet = PrimitiveSet(0);

    pub fn contains(self, p: Primitive) -> bool {
        self.0 & p.bit() != 0
    }
    pub fn insert(&mut self, p: Primitive) {
        self.0 |= p.bit();
    }
    pub fn remove(&mut self, p: Primitive) {
        self.0 &= !p.bit();
    }
    pub fn intersect(self, other: PrimitiveSet) -> PrimitiveSet {
        PrimitiveSet(self.0 & other.0)
    }
    pub fn iter(self) -> impl Iterator<Item = Primitive> {
        Primitive::ALL.into_iter().filter(move |p| self.contains(*p))
    }
}

impl FromIterator<Primitive> for PrimitiveSet {
    fn from_iter<I: IntoIterator<Item = Primitive>>(iter: I) -> Self {
        let mut s = PrimitiveSet::EMPTY;
        for p in iter {
            s.insert(p);
        }
        s
    }
}

impl Serialize for PrimitiveSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for PrimitiveSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names: Vec<String> = Vec::deserialize(d)?;
        let mut set = PrimitiveSet::EMPTY;
        for n in names {
            let p = Primitive::parse(&n).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown primitive `{n}`; known primitives are: {}",
                    Primitive::ALL.map(Primitive::as_str).join(", ")
                ))
            })?;
            set.insert(p);
        }
        Ok(set)
    }
}

/// A primitive set is a list of primitive names in the API.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PrimitiveSet {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(<Primitive as utoipa::PartialSchema>::schema())
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PrimitiveSet {}
