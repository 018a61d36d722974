//! What happened: the tamper-evident activity log ([`activity`]), the live bus its committed
//! entries go out on ([`bus`]), the counters an operator scrapes ([`metrics`]) and the
//! reads behind its gauges ([`gauges`]), the trace context of spans and outbound calls
//! ([`trace`]), and how other instances' commits reach this one
//! ([`pg_listen`] on PostgreSQL, the bus's follower on a shared SQLite file).
//!
//! Rule: the audit layer reads and appends the log; it calls nothing above it.

pub mod activity;
pub mod bus;
pub mod gauges;
pub mod metrics;
pub(crate) mod pg_listen;
pub mod trace;
