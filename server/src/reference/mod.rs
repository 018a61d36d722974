//! The reference programs: small real implementations of what the gateway talks to outside
//! the process (a card processor and mail relay, an issue tracker, a team runtime, a webhook
//! receiver, an OpenTelemetry collector, a Splunk HTTP Event Collector, Slack's Web API), the demo's wiring of them, and the demo agent. Each runs as its own process in
//! `make run` and in the tests.

pub mod demo_agent;
pub mod demo_upstream;
pub mod hec_receiver;
pub mod otlp_receiver;
pub mod slack;
pub mod slack_page;
pub mod team_runtime;
pub mod upstream;
pub mod upstream_tracker;
pub mod webhook_receiver;
