//! The team runtime: a tenant's runtime reached over the control wire ([`wire`]), registered
//! by an admin ([`registry`]), read and commanded through the pipeline as the `tasks`
//! primitive ([`connector`]), with commands held in the durable outbox ([`outbox`]) until the
//! delivery worker ([`delivery`]) has handed them over.

pub mod client;
pub(crate) mod connector;
pub mod delivery;
pub mod outbox;
pub mod registry;
pub mod wire;

pub use outbox::{CommandState, DeliveryStatus, OutboxConfig};
pub use registry::RuntimeInfo;
