//! Money: an exact count of 1/10,000 of the currency unit (docs/architecture.md#money-and-the-ledger).
//!
//! Guarantees: a [`Money`] is never negative, never rounded and never above [`Money::MAX`]
//! ($1,000,000,000,000), so no sum the gateway keeps (a balance, a cap, a hold) can overflow
//! the 64-bit integers it is stored in. Parsing rejects anything finer than four decimal
//! places (`"0.00005"` is an error, not zero) and anything above the bound, arithmetic is
//! checked against the bound, and every amount is displayed through [`Money`]'s one formatter
//! (`$0.0008`, `$12.50`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Units per whole currency unit: amounts resolve four decimal places.
pub const UNITS_PER_DOLLAR: i64 = 10_000;
/// [`Money::MAX`] in units: $1,000,000,000,000.
const MAX_UNITS: i64 = 1_000_000_000_000 * UNITS_PER_DOLLAR;
/// The largest amount one action may carry (a charge, an order): $1,000,000,000. Far below
/// [`Money::MAX`], so a thousand of the largest actions still fit in one balance.
pub const MAX_ACTION_AMOUNT: Money = Money::units_const(1_000_000_000 * UNITS_PER_DOLLAR);

/// Default platform price of reading one URL: 0.25¢ (docs/architecture.md#money-and-the-ledger).
pub const DEFAULT_WEB_READ_PRICE_UNITS: i64 = 25;
/// Default platform price of sending one email: 0.08¢ (docs/architecture.md#money-and-the-ledger).
pub const DEFAULT_EMAIL_SEND_PRICE_UNITS: i64 = 8;
/// Default platform price of one brain query: 0.4¢ (docs/architecture.md#money-and-the-ledger).
pub const DEFAULT_BRAIN_QUERY_PRICE_UNITS: i64 = 40;

/// An amount in units of $0.0001. Construct it with [`Money::parse`] or
/// [`Money::from_units`]; both refuse negative values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(i64);

/// Why a string or a sum is not a valid amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("amount is empty")]
    Empty,
    #[error("amount must not be negative")]
    Negative,
    #[error("amount has more than four decimal places; amounts resolve $0.0001 and are never rounded")]
    TooPrecise,
    #[error("amount is not a decimal number like \"12.50\"")]
    Malformed,
    #[error("amount is too large; the most any amount or balance may be is $1000000000000")]
    Overflow,
}

impl Money {
    pub const ZERO: Money = Money(0);
    /// The largest amount: $1,000,000,000,000. Every balance, cap and hold stays at or below
    /// it, so a sum of a few of them never comes near `i64::MAX` (about 922 times as much).
    pub const MAX: Money = Money(MAX_UNITS);

    /// An amount from a raw unit count; `None` if negative or above [`Money::MAX`].
    pub const fn from_units(units: i64) -> Option<Money> {
        if units < 0 || units > MAX_UNITS { None } else { Some(Money(units)) }
    }

    /// An amount from a unit count known at compile time to be valid.
    pub const fn units_const(units: i64) -> Money {
        assert!(units >= 0 && units <= MAX_UNITS, "money is never negative nor above Money::MAX");
        Money(units)
    }

    /// Whole dollars, for convenience in tests and defaults.
    pub const fn dollars(d: i64) -> Money {
        Money::units_const(d * UNITS_PER_DOLLAR)
    }

    pub const fn units(self) -> i64 {
        self.0
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Parses `"12.5"`, `"$12.50"`, `"0.0008"` or `"48"`. More than four decimal places,
    /// a sign, exponent or any other character is an error.
    pub fn parse(input: &str) -> Result<Money, MoneyError> {
        let s = input.trim();
        let s = s.strip_prefix('$').unwrap_or(s);
        if s.is_empty() {
            return Err(MoneyError::Empty);
        }
        if s.starts_with('-') {
            return Err(MoneyError::Negative);
        }
        let (whole, frac) = match s.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (s, None),
        };
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let whole_ok = digits(whole) || (whole.is_empty() && frac.is_some_and(digits));
        if !whole_ok || frac.is_some_and(|f| !digits(f)) {
            return Err(MoneyError::Malformed);
        }
        let mut units: i64 = 0;
        for b in whole.bytes() {
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_add(i64::from(b - b'0')))
                .ok_or(MoneyError::Overflow)?;
        }
        units = units.checked_mul(UNITS_PER_DOLLAR).ok_or(MoneyError::Overflow)?;
        if let Some(f) = frac {
            let f = f.trim_end_matches('0');
            if f.len() > 4 {
                return Err(MoneyError::TooPrecise);
            }
            let mut frac_units: i64 = 0;
            for (i, b) in f.bytes().enumerate() {
                frac_units += i64::from(b - b'0') * 10i64.pow(3 - i as u32);
            }
            units = units.checked_add(frac_units).ok_or(MoneyError::Overflow)?;
        }
        Money::from_units(units).ok_or(MoneyError::Overflow)
    }

    /// `None` when the sum is above [`Money::MAX`].
    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).and_then(Money::from_units)
    }

    /// `None` when the result would be negative.
    pub fn checked_sub(self, other: Money) -> Option<Money> {
        self.0.checked_sub(other.0).and_then(Money::from_units)
    }

    /// Subtraction that stops at zero, for "what is left" displays.
    pub fn saturating_sub(self, other: Money) -> Money {
        Money(self.0.saturating_sub(other.0).max(0))
    }

    pub fn checked_mul(self, n: i64) -> Option<Money> {
        self.0.checked_mul(n).and_then(Money::from_units)
    }

    /// The decimal form without a currency sign and with at least two decimals:
    /// `12.50`, `0.0008`. This is also the JSON form.
    pub fn to_decimal_string(self) -> String {
        let whole = self.0 / UNITS_PER_DOLLAR;
        let frac = self.0 % UNITS_PER_DOLLAR;
        let mut out = format!("{whole}.{frac:04}");
        // Keep at least two decimals ("12.50"), drop the zeros beyond them ("0.0008" stays).
        while out.len() > out.find('.').unwrap_or(0) + 3 && out.ends_with('0') {
            out.pop();
        }
        out
    }
}

/// The one formatter: `$12.50`, `$0.0008`, `$1234.5678`.
impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.to_decimal_string())
    }
}

impl std::str::FromStr for Money {
    type Err = MoneyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Money::parse(s)
    }
}

/// Money travels in JSON as a decimal string (`"12.50"`), never as a float.
impl Serialize for Money {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_decimal_string())
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Money;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an amount as a decimal string such as \"12.50\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Money, E> {
                Money::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Money, E> {
                if v < 0 {
                    return Err(E::custom(MoneyError::Negative));
                }
                Money::dollars_checked(v).ok_or_else(|| E::custom(MoneyError::Overflow))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Money, E> {
                i64::try_from(v)
                    .ok()
                    .and_then(Money::dollars_checked)
                    .ok_or_else(|| E::custom(MoneyError::Overflow))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Money, E> {
                Err(E::custom(
                    "amounts with decimals must be strings such as \"12.50\", so that they are never rounded",
                ))
            }
        }
        d.deserialize_any(V)
    }
}

impl Money {
    fn dollars_checked(d: i64) -> Option<Money> {
        d.checked_mul(UNITS_PER_DOLLAR).and_then(Money::from_units)
    }
}

/// Money is a decimal string in the API.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Money {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some(r"^[0-9]+(\.[0-9]{1,4})?$"))
            .description(Some(
                "An amount of US dollars as a decimal string, at most four decimals and at most 1000000000000 (an action's amount at most 1000000000): \"48.00\".",
            ))
            .examples([serde_json::json!("48.00")])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Money {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exact_units() {
        assert_eq!(Money::parse("0.0008").unwrap().units(), 8);
        assert_eq!(Money::parse("$12.50").unwrap().units(), 125_000);
        assert_eq!(Money::parse("48").unwrap(), Money::dollars(48));
        assert_eq!(Money::parse(".25").unwrap().units(), 2_500);
        assert_eq!(Money::parse("1.000000").unwrap().units(), 10_000);
    }

    #[test]
    fn refuses_rounding_sign_and_garbage() {
        assert_eq!(Money::parse("0.00005"), Err(MoneyError::TooPrecise));
        assert_eq!(Money::parse("-1"), Err(MoneyError::Negative));
        assert_eq!(Money::parse(""), Err(MoneyError::Empty));
        for bad in ["1e3", "1.2.3", "abc", "1,00", "+1", ".", "1."] {
            assert_eq!(Money::parse(bad), Err(MoneyError::Malformed), "{bad}");
        }
        assert_eq!(Money::parse("999999999999999999"), Err(MoneyError::Overflow));
    }

    #[test]
    fn one_formatter() {
        assert_eq!(Money::units_const(8).to_string(), "$0.0008");
        assert_eq!(Money::parse("12.5").unwrap().to_string(), "$12.50");
        assert_eq!(Money::ZERO.to_string(), "$0.00");
        assert_eq!(Money::units_const(12_345_678).to_string(), "$1234.5678");
    }

    #[test]
    fn amounts_have_an_upper_bound() {
        assert_eq!(Money::parse("1000000000000").unwrap(), Money::MAX);
        assert_eq!(Money::parse("1000000000000.0001"), Err(MoneyError::Overflow));
        assert_eq!(Money::parse("900000000000000"), Err(MoneyError::Overflow));
        assert_eq!(Money::from_units(Money::MAX.units() + 1), None);
        assert_eq!(serde_json::from_str::<Money>("900000000000000").ok(), None);
        assert!(MAX_ACTION_AMOUNT < Money::MAX);
    }

    #[test]
    fn arithmetic_is_checked() {
        assert_eq!(Money::MAX.checked_add(Money::units_const(1)), None);
        assert_eq!(Money::MAX.checked_mul(2), None);
        assert_eq!(Money::ZERO.checked_sub(Money::units_const(1)), None);
        assert_eq!(Money::from_units(-1), None);
    }

    #[test]
    fn json_is_a_string_and_floats_are_refused() {
        let m: Money = serde_json::from_str("\"0.0025\"").unwrap();
        assert_eq!(m.units(), DEFAULT_WEB_READ_PRICE_UNITS);
        assert_eq!(serde_json::to_string(&m).unwrap(), "\"0.0025\"");
        assert!(serde_json::from_str::<Money>("12.5").is_err());
        assert_eq!(serde_json::from_str::<Money>("3").unwrap(), Money::dollars(3));
    }
}
