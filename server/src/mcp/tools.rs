//! The MCP tools: one per catalog action (`cards.charge` is `naive_cards_charge`), the brain
//! governance tools, `naive_approvals_get` and `naive_policy_explain`. Each tool's
//! `inputSchema` is its argument declaration in `policy`, the one `/v1` validates against, and
//! each call goes to the same gateway function as its `/v1` route.
//!
//! Results follow docs/architecture.md#verdicts-and-the-refusal-envelope: a result is `structuredContent`
//! (and the same JSON as text); a park
//! is the envelope with `isError: false`; a deny or an outage is the envelope with `isError:
//! true`. Arguments the declaration refuses answer `isError: true` with the problem's `code`
//! and what to fix (a JSON-RPC `-32602` for clients on 2025-06-18 and older, as that spec
//! prescribes); an unknown tool is `-32602`. No `outputSchema` is declared: the envelope is
//! not the result's shape, and a client checks `structuredContent` against one.

use gateway::Gateway;
use gateway::domain::brain::{BeliefQuery, Decider, Decision, ProposalQuery, ProposalStatus, WritebackInput};
use gateway::domain::calls::{ActionResponse, Disposition};
use gateway::domain::principal::Subject;
use policy::args::ArgsDecl;
use policy::{Effect, ToolSpec};
use rmcp::model::{CallToolResult, ErrorData, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::http::problem::Problem;

pub const INSTRUCTIONS: &str = "Every tool here is governed by your company's AccountKit and budget. \
A result arrives in structuredContent. A refusal is a verdict envelope (isError true): read retryable, \
then recovery[] (the one thing that would change the outcome), then alternatives[]. A park (isError false) \
carries wait_for_approval with an approval_id: poll naive_approvals_get. Three identical refusals leave one \
escalate_to_human step: stop and tell the user.";

/// What a tool name stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// A priced catalog action through the pipeline.
    Action(String),
    /// `brain.writeback`: its MCP name would be the governance read `naive_brain_writeback`.
    SubmitWriteback,
    /// `naive_brain_proposals`, `naive_brain_proposal`, `naive_brain_writebacks`,
    /// `naive_brain_writeback`, `naive_brain_beliefs`.
    BrainRead(&'static str),
    DecideProposal,
    ApprovalsGet,
    Explain,
    Replay,
}

const SUBMIT_WRITEBACK: &str = "naive_brain_submit_writeback";
const BRAIN_READS: [&str; 5] = [
    "naive_brain_proposals",
    "naive_brain_proposal",
    "naive_brain_writebacks",
    "naive_brain_writeback",
    "naive_brain_beliefs",
];
/// The MCP name of a catalog tool.
pub fn mcp_name(action: &str) -> String {
    match action {
        "brain.writeback" => SUBMIT_WRITEBACK.into(),
        a if a.starts_with("naive_") => a.into(),
        a => format!("naive_{}", a.replacen('.', "_", 1)),
    }
}

fn target(gw: &Gateway, name: &str) -> Option<Target> {
    match name {
        "naive_approvals_get" => return Some(Target::ApprovalsGet),
        "naive_policy_explain" => return Some(Target::Explain),
        "naive_kit_replay" => return Some(Target::Replay),
        "naive_brain_decide_proposal" => return Some(Target::DecideProposal),
        SUBMIT_WRITEBACK => return Some(Target::SubmitWriteback),
        _ => {}
    }
    if let Some(read) = BRAIN_READS.iter().find(|r| **r == name) {
        return Some(Target::BrainRead(read));
    }
    actions(gw).get(name).map(|a| Target::Action(a.clone()))
}

/// Each catalog action served here, by its MCP name. The catalog is fixed at start-up.
fn actions(gw: &Gateway) -> &'static std::collections::HashMap<String, String> {
    static ACTIONS: std::sync::OnceLock<std::collections::HashMap<String, String>> =
        std::sync::OnceLock::new();
    ACTIONS.get_or_init(|| {
        let served = gw.catalog().iter().filter(|t| t.name.contains('.'));
        served.filter(|t| t.name != "brain.writeback").map(|t| (mcp_name(&t.name), t.name.clone())).collect()
    })
}

fn declaration_of(name: &str, target: &Target) -> Option<&'static ArgsDecl> {
    match target {
        Target::Action(a) => policy::args::declaration(a),
        Target::SubmitWriteback => policy::args::declaration("brain.writeback"),
        Target::ApprovalsGet | Target::Explain | Target::Replay => policy::args::gateway_tool(name),
        Target::BrainRead(_) | Target::DecideProposal => policy::args::declaration(name),
    }
}

/// What a tool does, for the client's model.
fn description(name: &str, spec: Option<&ToolSpec>) -> String {
    let fixed = match name {
        "naive_brain_proposals" => "The queue of proposed beliefs. Filter by status, object_type or run_id.",
        "naive_brain_proposal" => "One proposal, with its full decision trail.",
        "naive_brain_decide_proposal" => {
            "Accept or reject a proposal; because is required. Your accept parks for a human; a reject applies at once."
        }
        "naive_brain_writebacks" => "The writeback envelopes proposals arrived on, newest first.",
        "naive_brain_writeback" => "One writeback envelope and every proposal it carried.",
        "naive_brain_beliefs" => {
            "The company's beliefs: claims a reviewer accepted, newest first, each with who accepted it and the proposal and run it came from. Filter by object_type or a text q."
        }
        SUBMIT_WRITEBACK => {
            "Submit a run's claims to the company brain; each claim becomes a proposal for review."
        }
        "naive_approvals_get" => {
            "Poll the approval a parked call returned: its status, and the result once decided."
        }
        "naive_policy_explain" => {
            "Dry run: what a call would meet now (allow, deny or park), with every reason and its cost. Reserves nothing."
        }
        "naive_kit_replay" => {
            "What a draft of your own AccountKit would have decided otherwise over your own recorded calls of the last days: counts and money by transition, and the changed calls. Reserves nothing."
        }
        _ => "",
    };
    match spec {
        Some(s) if fixed.is_empty() => format!(
            "Runs `{}` (a {} action of the `{}` primitive), governed by your AccountKit and budget.",
            s.name,
            s.effect.as_str(),
            s.primitive.as_str()
        ),
        _ => fixed.to_string(),
    }
}

/// The argument that carries an Idempotency-Key over MCP, on every catalog action's tool.
const IDEMPOTENCY_ARG: &str = "idempotency_key";
/// The argument an agent says why it asks in, on every catalog action's tool: not an argument
/// of the action, so it is taken out before the action's own are checked.
const JUSTIFICATION_ARG: &str = "justification";

fn describe(name: String, decl: &ArgsDecl, spec: Option<&ToolSpec>, effect: Effect) -> Tool {
    let Value::Object(mut schema) = decl.json_schema() else {
        unreachable!("a declaration is an object schema")
    };
    if spec.is_some() {
        schema["properties"][IDEMPOTENCY_ARG] = json!({
            "type": "string", "minLength": 1, "maxLength": gateway::domain::calls::MAX_IDEMPOTENCY_KEY_LEN,
            "description": "Your key for this call: sending the same call again with the same key does it once and answers what the first did.",
        });
        schema["properties"][JUSTIFICATION_ARG] = json!({
            "type": "string", "maxLength": gateway::domain::approvals::MAX_JUSTIFICATION_LEN,
            "description": "Why you ask, in plain words, for the human who approves this call if it waits for approval.",
        });
    }
    let annotations =
        ToolAnnotations::new().read_only(effect == Effect::Read).destructive(effect == Effect::Destructive);
    let about = description(&name, spec);
    Tool::new(name, about, Arc::new(schema)).with_annotations(annotations)
}

/// The tools `subject` sees now: none when its profile (or an ancestor) is not active.
pub async fn visible(gw: &Gateway, subject: &Subject) -> gateway::Result<Vec<Tool>> {
    let Some(specs) = gw.visible_tools(subject).await? else { return Ok(Vec::new()) };
    let mut tools = Vec::with_capacity(specs.len() + 2);
    for spec in specs.iter() {
        let name = mcp_name(&spec.name);
        let decl = target(gw, &name).and_then(|t| declaration_of(&name, &t));
        if let Some(decl) = decl {
            tools.push(describe(name, decl, Some(spec), spec.effect));
        }
    }
    for name in ["naive_approvals_get", "naive_policy_explain", "naive_kit_replay"] {
        let decl = policy::args::gateway_tool(name).expect("the gateway's own tools are declared");
        tools.push(describe(name.into(), decl, None, Effect::Read));
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tools)
}

/// The call's arguments without its `idempotency_key`, and the key.
fn idempotency_key(mut args: Value) -> gateway::Result<(Value, Option<String>)> {
    let Some(key) = args.as_object_mut().and_then(|o| o.remove(IDEMPOTENCY_ARG)) else {
        return Ok((args, None));
    };
    match key {
        Value::String(k) => Ok((args, Some(k))),
        _ => Err(gateway::Error::invalid(
            "invalid_idempotency_key",
            "idempotency_key is a string of 1 to 200 characters",
        )),
    }
}

/// The call's arguments without its `justification`, and the justification.
fn justification(mut args: Value) -> gateway::Result<(Value, Option<String>)> {
    match args.as_object_mut().and_then(|o| o.remove(JUSTIFICATION_ARG)) {
        None | Some(Value::Null) => Ok((args, None)),
        Some(Value::String(j)) => Ok((args, Some(j))),
        Some(_) => {
            Err(gateway::Error::invalid("invalid_justification", "justification is a string of plain text"))
        }
    }
}

/// Argument `k` of `args` as text, when it is a string (the declaration has checked kinds).
fn text(args: &Value, k: &str) -> Option<String> {
    args.get(k).and_then(Value::as_str).map(str::to_string)
}

/// Protocol versions whose spec makes invalid arguments a JSON-RPC error, not a tool result.
const ERRORS_AS_PROTOCOL: [&str; 3] = ["2024-11-05", "2025-03-26", "2025-06-18"];

/// A gateway failure as MCP answers it.
fn failure(e: gateway::Error, version: Option<&str>) -> Result<CallToolResult, ErrorData> {
    let p = Problem::from(e);
    let data = json!({ "ok": false, "code": p.code, "message": p.message });
    if p.status >= 500 {
        return Err(ErrorData::internal_error(p.message, Some(data)));
    }
    if p.status == 400 && version.is_some_and(|v| ERRORS_AS_PROTOCOL.contains(&v)) {
        return Err(ErrorData::invalid_params(p.message, Some(data)));
    }
    Ok(CallToolResult::structured_error(data))
}

fn answer(r: ActionResponse) -> CallToolResult {
    match r.disposition {
        Disposition::Executed | Disposition::Parked => CallToolResult::structured(r.json()),
        Disposition::Refused | Disposition::Unavailable | Disposition::Full => {
            CallToolResult::structured_error(r.json())
        }
    }
}

/// Runs tool `name` for `subject` with `args`.
pub async fn call(
    gw: &Gateway,
    subject: &Subject,
    name: &str,
    args: Value,
    version: Option<&str>,
) -> Result<CallToolResult, ErrorData> {
    let Some(target) = target(gw, name) else {
        return Err(ErrorData::invalid_params(
            format!("unknown tool `{name}`; tools/list shows the tools this key may call"),
            Some(json!({ "code": "unknown_tool" })),
        ));
    };
    match run(gw, subject, name, &target, args).await {
        Ok(result) => Ok(result),
        Err(e) => failure(e, version),
    }
}

async fn run(
    gw: &Gateway,
    subject: &Subject,
    name: &str,
    target: &Target,
    args: Value,
) -> gateway::Result<CallToolResult> {
    // The pipeline refuses an inactive profile first itself.
    if let Target::Action(action) = target {
        let (args, key) = idempotency_key(args)?;
        let (args, why) = justification(args)?;
        return Ok(answer(gw.perform_justified(subject, action.clone(), args, key, why.as_deref()).await?));
    }
    if let Some(env) = gw.inactive_refusal(subject, name).await? {
        return Ok(CallToolResult::structured_error(serde_json::to_value(env).expect("serializes")));
    }
    let decl = declaration_of(name, target).expect("every MCP tool is declared");
    decl.check(&args).map_err(|e| gateway::Error::invalid(e.code, e.message))?;
    let text = |k: &str| text(&args, k);
    match target {
        Target::Action(_) => unreachable!("handled above"),
        Target::ApprovalsGet => {
            let approval = gw.approval_for_subject(subject, &text("approval_id").unwrap_or_default()).await?;
            Ok(CallToolResult::structured(serde_json::to_value(approval).expect("serializes")))
        }
        Target::Explain => explain(gw, subject, &text("action").unwrap_or_default(), &args["args"]).await,
        Target::Replay => replay(gw, subject, &args).await,
        Target::SubmitWriteback => {
            let input: WritebackInput = serde_json::from_value(args).map_err(|e| {
                gateway::Error::invalid("invalid_writeback", format!("the writeback is malformed: {e}"))
            })?;
            Ok(answer(gw.submit_writeback(subject, input).await?))
        }
        Target::DecideProposal => {
            let decision = if text("decision").as_deref() == Some("accept") {
                Decision::Accept
            } else {
                Decision::Reject
            };
            let (id, because) =
                (text("proposal_id").unwrap_or_default(), text("because").unwrap_or_default());
            let decider = Decider::Agent(subject.clone());
            Ok(answer(gw.decide_proposal(&subject.tenant, &id, &decider, decision, &because).await?))
        }
        Target::BrainRead(tool) => brain_read(gw, subject, tool, &args).await,
    }
}

/// The agent's own calls replayed under a draft of its own kit, as `POST
/// /v1/kits/{name}/replay` answers an agent's key.
async fn replay(gw: &Gateway, subject: &Subject, args: &Value) -> gateway::Result<CallToolResult> {
    let draft = policy::Kit::from_json(&args["draft"].to_string())
        .map_err(|e| gateway::Error::invalid("invalid_kit", e.to_string()))?;
    let days = args.get("days").and_then(Value::as_i64).unwrap_or(gateway::ops::replay::DEFAULT_RANGE_DAYS);
    let name = draft.name.clone();
    let req = gateway::ops::replay::ReplayRequest::recent(Some(draft), days, 100);
    let report = gw.replay_own(subject, &name, req).await?;
    Ok(CallToolResult::structured(serde_json::to_value(report).expect("serializes")))
}

/// The dry run, as `POST /v1/policy/explain` answers it; `action` may be its MCP name.
async fn explain(
    gw: &Gateway,
    subject: &Subject,
    action: &str,
    args: &Value,
) -> gateway::Result<CallToolResult> {
    let action = match target(gw, action) {
        Some(Target::Action(a)) => a,
        Some(Target::SubmitWriteback) => "brain.writeback".into(),
        _ => action.to_string(),
    };
    let args = if args.is_null() { json!({}) } else { args.clone() };
    let e = gw.explain_call(subject, &action, &args).await?;
    let body = crate::v1::dto::explained(action, e);
    Ok(CallToolResult::structured(serde_json::to_value(body).expect("serializes")))
}

async fn brain_read(
    gw: &Gateway,
    subject: &Subject,
    tool: &str,
    args: &Value,
) -> gateway::Result<CallToolResult> {
    if let Some(refused) = gw.gate(subject, tool, args).await? {
        return Ok(answer(refused));
    }
    let text = |k: &str| text(args, k);
    let limit = args.get("limit").and_then(Value::as_f64).map(|n| n as i64);
    let tenant = &subject.tenant;
    let body = match tool {
        "naive_brain_proposals" => {
            let query = ProposalQuery {
                status: text("status").as_deref().and_then(ProposalStatus::parse),
                object_type: text("object_type"),
                run_id: text("run_id"),
                limit,
            };
            json!({ "items": gw.proposals(tenant, &query).await? })
        }
        "naive_brain_proposal" => json!(gw.proposal(tenant, &text("proposal_id").unwrap_or_default()).await?),
        "naive_brain_writebacks" => json!({ "items": gw.writebacks(tenant, limit).await? }),
        "naive_brain_beliefs" => {
            let query = BeliefQuery { object_type: text("object_type"), search: text("q"), limit };
            json!({ "items": gw.beliefs(tenant, &query).await? })
        }
        _ => json!(gw.writeback(tenant, &text("writeback_id").unwrap_or_default()).await?),
    };
    Ok(CallToolResult::structured(body))
}
