//! The `tasks` primitive's connector: the tenant's team runtime.
//!
//! Reads (`teams.status`, `teams.board`, `teams.run`) cross the control wire while the call's
//! hold is leased, like any networked call. `teams.status` degrades instead of failing: an
//! unregistered or unreachable runtime is an answer that says so. Writes (`teams.comment`,
//! `teams.unblock`, `tasks.delete`) never wait on the runtime: they queue a command in the
//! outbox inside the call's own transaction and answer `queued` with its id, plus a
//! `wait_for_delivery` step when the runtime was unreachable at its last contact.
//! `teams.command` reads a command's delivery state in that transaction too.

use futures_util::future::BoxFuture;
use policy::RecoveryStep;
use serde_json::{Value, json};

use super::{Call, Connector, ConnectorKind, Done, Failure};
use crate::delivery::outbox::{self, DeliveryStatus};
use crate::delivery::runtime::client::{RuntimeClient, WireError};
use crate::delivery::runtime::wire::{Command, CommandKind};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::store::Store;

/// Seconds an agent is told to wait before reading the runtime again.
const RETRY_AFTER_SECS: u32 = 5;
/// The code of a write refused because the tenant's runtime queue is full.
pub const FULL: &str = "outbox_full";
/// Seconds an agent is told to wait before writing again to a full queue.
const FULL_RETRY_SECS: u32 = 30;

/// One tenant's runtime as the pipeline reaches it.
pub(crate) struct TeamRuntime {
    pub(crate) tenant: TenantId,
    /// `None` when no runtime is registered, or its secret does not open.
    pub(crate) client: Option<RuntimeClient>,
    /// Why there is no client.
    pub(crate) missing: &'static str,
    pub(crate) store: Store,
    /// The most commands the tenant's queue holds.
    pub(crate) max_queued: i64,
}

fn arg<'a>(call: &'a Call, name: &str) -> Option<&'a str> {
    call.args.get(name).and_then(Value::as_str)
}

fn unreachable(e: &WireError) -> Failure {
    Failure::new(e.code(), RETRY_AFTER_SECS)
}

impl TeamRuntime {
    fn client(&self) -> std::result::Result<&RuntimeClient, Failure> {
        self.client.as_ref().ok_or_else(|| super::misconfigured(self.missing))
    }

    /// Which runtime, whether it is claimed, reachable now or when last seen.
    async fn status(&self) -> Value {
        let Some(client) = &self.client else {
            return json!({ "registered": false, "reachable": false, "error": self.missing,
                "hint": "no team runtime is usable for this tenant; an admin registers one on the console's Runtime page" });
        };
        let row =
            crate::delivery::runtime::registry::runtime_row(&self.store, &self.tenant).await.ok().flatten();
        let (url, last_seen_at, last_error) =
            row.map(|(url, _, _, seen, error, ..)| (url, seen, error)).unwrap_or_default();
        match client.status().await {
            Ok(s) => json!({
                "registered": true, "url": url, "reachable": true,
                "claimed": s.claimed_by.as_deref() == Some(self.tenant.as_str()),
                "runtime": s.runtime, "tasks": s.tasks, "blocked": s.blocked, "runs_active": s.runs_active,
            }),
            Err(e) => json!({
                "registered": true, "url": url, "reachable": false, "error": e.code(),
                "last_seen_at": last_seen_at, "last_error": last_error.unwrap_or_else(|| e.code()),
            }),
        }
    }

    async fn read(&self, call: &Call) -> std::result::Result<Value, Failure> {
        let client = self.client()?;
        match call.action.as_str() {
            "teams.board" => {
                let board = client
                    .board(arg(call, "status"), arg(call, "role"))
                    .await
                    .map_err(|e| unreachable(&e))?;
                Ok(json!(board))
            }
            "teams.run" => {
                let id = arg(call, "run_id").unwrap_or_default();
                match client.run(id).await {
                    Ok(run) => Ok(json!(run)),
                    Err(WireError::Refused { status: 404, .. }) => {
                        Ok(json!({ "run_id": id, "found": false }))
                    }
                    Err(e) => Err(unreachable(&e)),
                }
            }
            "teams.command" => {
                let id = arg(call, "command_id").unwrap_or_default();
                let state = outbox::read_command(&self.store, &self.tenant, id)
                    .await
                    .map_err(|_| Failure::new("outbox_unreadable", RETRY_AFTER_SECS))?;
                Ok(state.map_or_else(|| json!({ "command_id": id, "found": false }), |s| json!(s)))
            }
            other => Err(Failure::new(format!("runtime_cannot_{}", other.replace('.', "_")), 60)),
        }
    }
}

impl Connector for TeamRuntime {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, std::result::Result<Done, Failure>> {
        Box::pin(async move {
            let result = match call.action.as_str() {
                "teams.status" => self.status().await,
                _ => self.read(call).await?,
            };
            Ok(Done { result, cost: call.reserved })
        })
    }

    fn execute_in(&self, c: &dyn Tx, call: &Call) -> Result<Option<std::result::Result<Done, Failure>>> {
        let done = |result| Some(Ok(Done { result, cost: call.reserved }));
        if call.action == "teams.command" {
            let id = arg(call, "command_id").unwrap_or_default();
            let state =
                outbox::command_in(c, &self.tenant, id)?.ok_or(Error::NotFound { what: "command" })?;
            return Ok(done(json!(state)));
        }
        let Some(kind) = command_kind(call) else { return Ok(None) };
        if self.client.is_none() {
            return Ok(Some(Err(super::misconfigured(self.missing))));
        }
        let command = Command {
            command_id: outbox::command_id(),
            task_id: arg(call, "task_id").unwrap_or_default().to_string(),
            author: call.actor.clone(),
            kind,
        };
        match outbox::enqueue(c, &self.tenant, &command, self.max_queued)? {
            Ok(reachable) => Ok(done(queued(&command, reachable))),
            Err(full) => Ok(Some(Err(Failure { full: Some(full), ..Failure::new(FULL, FULL_RETRY_SECS) }))),
        }
    }

    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Runtime
    }
}

/// Whether `tool` is a runtime write: it queues a command, in the job that settles its hold.
pub(crate) fn queues_command(tool: &policy::ToolSpec) -> bool {
    tool.primitive == policy::Primitive::Tasks && tool.effect != policy::Effect::Read
}

/// The command a write action asks for; `None` for a read.
fn command_kind(call: &Call) -> Option<CommandKind> {
    let text = |k| arg(call, k).unwrap_or_default().to_string();
    match call.action.as_str() {
        "teams.comment" => Some(CommandKind::Comment { body: text("body") }),
        "teams.unblock" => Some(CommandKind::Unblock { because: text("because") }),
        "tasks.delete" => Some(CommandKind::Delete {}),
        _ => None,
    }
}

/// The answer to a queued command: its id and how to follow it, with a `wait_for_delivery`
/// step when the runtime did not answer its last contact.
fn queued(command: &Command, reachable: Option<bool>) -> Value {
    let mut answer = json!({
        "command_id": command.command_id,
        "status": DeliveryStatus::Queued,
        "task_id": command.task_id,
        "kind": command.kind.name(),
        "delivery": "held durably and delivered in order for this task; read its state with teams.command (naive_teams_command over MCP)",
    });
    if reachable == Some(false) {
        let step = RecoveryStep::WaitForDelivery {
            command_id: command.command_id.clone(),
            human_action: "the team runtime is unreachable now; the command is held and will be delivered once it answers. Do not send it again: poll teams.command with this command_id".into(),
        };
        answer["recovery"] = json!([step]);
    }
    answer
}
