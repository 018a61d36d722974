//! What leaves the process: the one guarded outbound client ([`egress`]), the connectors
//! that carry actions out ([`connectors`]), the team runtime's wire ([`runtime`]), the durable
//! outbox and its worker ([`outbox`]), signed webhooks ([`webhooks`]), log streams to a SIEM
//! ([`streams`]), and the OpenID
//! provider's wire for single sign-on ([`oidc`]).
//!
//! Rule: delivery may read and write the domain's tables through their owners; nothing below
//! it calls out of the process.

pub mod client_metadata;
pub mod connectors;
pub mod egress;
pub mod oidc;
pub mod outbox;
pub mod runtime;
pub mod slack;
pub mod streams;
pub mod webhooks;
