//! The connector port: what the pipeline asks of whatever carries an allowed call out (the
//! sandbox, an HTTP upstream, a connected app, the team runtime), and what comes back. The
//! implementations live in `delivery::connectors`; the domain names only this.

use futures_util::future::BoxFuture;
use policy::{Money, Primitive};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub full: Option<Full>,
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

/// A queue that is at its bound: how many rows wait in it, its bound, and the oldest, to
/// wait for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Full {
    pub queued: i64,
    pub limit: i64,
    pub oldest: Option<String>,
}
