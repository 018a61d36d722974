//! Connectors: what actually carries out an allowed action.
//!
//! Each tenant picks, per primitive and optionally per action, where its calls run
//! ([`config`]): the built-in [`Sandbox`] (the default, and labelled `sandbox` in every answer
//! and activity entry it produces) or an HTTP upstream ([`http`]) holding the real provider
//! account, reached with a credential from the tenant's vault that the agent never sees.
//!
//! Guarantees:
//! - A connector failure never reaches the agent as an error of ours: it is the `unavailable`
//!   verdict, the hold is voided, and the failure's stable code is recorded.
//! - A call's connector is the most specific one configured (the action's, then its
//!   primitive's, then the sandbox), read at most [`crate::cache::MAX_AGE`] ago: a change
//!   governs the next call on this instance at once and on others within that bound.
//! - An upstream is called outside any transaction, with the hold leased to this instance.
//! - The `connections` primitive always runs on the tenant's connected apps ([`apps`]),
//!   upstream MCP servers, never on the sandbox.

pub mod app_config;
mod app_http;
pub mod apps;
pub mod config;
pub mod http;
pub(crate) mod runtime;
mod sandbox;

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use policy::{Primitive, ToolSpec};

pub use config::{AuthSpec, ConnectorRecord, ConnectorSpec, HttpSpec, Target};
pub use sandbox::Sandbox;

pub(crate) use crate::domain::connector::misconfigured;
pub use crate::domain::connector::{Call, Connector, ConnectorKind, Done, Failure};

/// A configured connector that cannot run (its credential does not open, or cannot travel in
/// a header): every call is `unavailable` with `code` and a step for a person, never an
/// error of ours, and only the calls that use it fail.
pub(crate) struct Broken {
    pub(crate) code: &'static str,
}

impl Connector for Broken {
    fn execute<'a>(&'a self, _call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>> {
        Box::pin(async move { Err(misconfigured(self.code)) })
    }

    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Http
    }
}

/// One tenant's connectors by target (`cards`, `cards.charge`); what is not here runs on the
/// sandbox.
pub(crate) struct TenantConnectors {
    pub(crate) by_target: HashMap<String, Arc<dyn Connector>>,
    /// Why a configured target's connector cannot run, by target, for the console.
    pub(crate) problems: HashMap<String, String>,
    /// The connected apps, which carry out the `connections` primitive.
    pub(crate) apps: Arc<apps::Apps>,
    /// The team runtime, which carries out the `tasks` primitive.
    pub(crate) runtime: Arc<runtime::TeamRuntime>,
}

impl TenantConnectors {
    /// The most specific connector for `tool`: the connected apps for `connections`, else its
    /// action's, its primitive's, or `sandbox`.
    pub(crate) fn pick(&self, tool: &ToolSpec, sandbox: &Arc<Sandbox>) -> Arc<dyn Connector> {
        if tool.primitive == Primitive::Connections {
            return self.apps.clone();
        }
        if tool.primitive == Primitive::Tasks {
            return self.runtime.clone();
        }
        self.by_target
            .get(tool.name.as_str())
            .or_else(|| self.by_target.get(tool.primitive.as_str()))
            .cloned()
            .unwrap_or_else(|| sandbox.clone() as Arc<dyn Connector>)
    }
}
