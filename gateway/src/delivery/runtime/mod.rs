//! The team runtime: a tenant's runtime reached over the control wire ([`wire`]), registered
//! by an admin ([`registry`]), read and commanded through the pipeline as the `tasks`
//! primitive (`connectors::runtime`). Its commands wait in the durable outbox ([`crate::delivery::outbox`])
//! until the delivery worker has handed them over.

pub mod client;
pub mod registry;
pub mod wire;

pub use registry::RuntimeInfo;
