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
use policy::{Money, Primitive, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use config::{AuthSpec, ConnectorRecord, ConnectorSpec, HttpSpec, Target};
pub use sandbox::Sandbox;

/// One action to carry out.
#[derive(Clone, Debug)]
pub struct Call {
    pub action: String,
    pub primitive: Primitive,
    pub args: Value,
    /// What the gateway reserved: the real amount plus the platform's price.
    pub reserved: Money,
    /// The platform's price of the action, part of `reserved`.
    pub price: Money,
    /// The gateway's id for this action, which an upstream can use as its idempotency key.
    pub action_id: String,
    /// Who the record names as acting: the profile, or the human who approved the call.
    pub actor: String,
}

impl Call {
    /// The most an upstream may report as the action's actual cost: what was reserved
    /// beyond the platform's price.
    pub fn real_reserved(&self) -> Money {
        self.reserved.saturating_sub(self.price)
    }
}

/// A connector's success: the result for the agent and the actual cost to post (the real
/// cost plus the platform's price, at most what was reserved).
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    pub result: Value,
    pub cost: Money,
}

/// A connector's failure: always retryable from the agent's point of view.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Failure {
    /// A stable code such as `connector_timeout`.
    pub detail: String,
    pub retry_after_secs: u32,
    /// Whether only a person can mend it (a setting that cannot be used): the agent is told
    /// to tell one, not just to wait.
    pub needs_admin: bool,
    /// The outbox queue the call's command did not fit in, when that is why.
    pub full: Option<crate::delivery::outbox::Full>,
}

impl Failure {
    pub fn new(detail: impl Into<String>, retry_after_secs: u32) -> Failure {
        Failure { detail: detail.into(), retry_after_secs, needs_admin: false, full: None }
    }
}

/// How long an agent is told to wait after a call failed on a setting a person must fix.
const MISCONFIGURED_RETRY_SECS: u32 = 300;

/// The failure of a call whose connector, app, runtime or credential cannot be used as
/// configured: `code` is what the agent sees; the console shows the setting's own problem.
pub(crate) fn misconfigured(code: &str) -> Failure {
    Failure { needs_admin: true, ..Failure::new(code, MISCONFIGURED_RETRY_SECS) }
}

/// Which kind of connector carried a call out, as answers and the log label it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConnectorKind {
    /// The built-in sandbox: nothing real happened.
    Sandbox,
    /// A tenant's HTTP upstream.
    Http,
    /// A connected app: an upstream MCP server.
    Mcp,
    /// The tenant's team runtime, over the control wire.
    Runtime,
}

impl ConnectorKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ConnectorKind::Sandbox => "sandbox",
            ConnectorKind::Http => "http",
            ConnectorKind::Mcp => "mcp",
            ConnectorKind::Runtime => "runtime",
        }
    }
}

pub trait Connector: Send + Sync + 'static {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>>;

    /// Carries the call out at once, without waiting on anything, if this connector can
    /// (an in-process computation). The gateway then settles in the same transaction that
    /// reserved the hold. `None` means the call needs [`Connector::execute`].
    fn execute_now(&self, _call: &Call) -> Option<Result<Done, Failure>> {
        None
    }

    /// Carries the call out inside the transaction that settles its hold, if this connector
    /// does its work in the database (the outbox queues a runtime command there), so the
    /// work commits or rolls back with the call's records. Runs again if the job runs again.
    /// `None` means the call needs [`Connector::execute_now`] or [`Connector::execute`].
    fn execute_in(
        &self,
        _c: &dyn crate::sql::Tx,
        _call: &Call,
    ) -> crate::error::Result<Option<Result<Done, Failure>>> {
        Ok(None)
    }

    fn kind(&self) -> ConnectorKind;
}

/// A configured connector that cannot run (its credential does not open, or cannot travel in
/// a header): every call is `unavailable` with `code` and a step for a person, never an
/// error of ours, and only the calls that use it fail.
struct Broken {
    code: &'static str,
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
    by_target: HashMap<String, Arc<dyn Connector>>,
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
