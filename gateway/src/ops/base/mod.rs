//! What every operation reads, below the families: the clock ([`clock`]), the caches
//! ([`caches`]), the change signals ([`signals`]), the secret opener ([`secrets`]) and the
//! lookups by id ([`lookups`]). A family calls these and the domain owners, never another
//! family, and nothing here calls a family (`gateway/tests/tidy.rs`).

mod caches;
mod clock;
mod lookups;
mod secrets;
mod signals;
