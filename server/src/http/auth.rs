//! Who is calling `/v1`, resolved once per request, before any handler or claim.
//!
//! [`authenticate`] runs around every `/v1` route but the public document and the operator's
//! read: it resolves the request's credential through `gateway` and puts a [`Resolved`] into
//! the request, which the extractors below read. So no handler authenticates on its own, and
//! none can forget the revocation check: an agent whose profile (or any ancestor) is revoked
//! or suspended is refused `403 agent_profile_revoked` here, before its body is read, its
//! `Idempotency-Key` is looked up or its input is judged.
//!
//! - Agents present their scoped key: [`Agent`], or [`Caller::Agent`].
//! - The company key administers the tenant: [`Caller::Company`]. It never decides in a
//!   human's name.
//! - A human decides with their own credential: a personal API token (`Authorization: Bearer
//!   nvu_…`) or the console session cookie: [`Human`]. The decision trail names which.
//! - The deployment's operator reads every tenant's log with the operator key: [`Operator`].

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gateway::domain::principal::Subject;
use gateway::{ConsoleUser, Credential, KeyId, TenantId};

use crate::http::problem::Problem;
use crate::state::AppState;

/// Routes that take no gateway credential: the API document, and the operator's read, which
/// takes the operator key ([`Operator`]).
const UNAUTHENTICATED: [&str; 2] = ["/v1/openapi.json", "/v1/logs"];

/// The credential of a `/v1` request.
#[derive(Clone, Debug)]
pub enum Resolved {
    Agent(Subject),
    Company {
        tenant: TenantId,
        key: KeyId,
    },
    Person(gateway::Person),
    /// A console user signed in with the session cookie.
    Session(ConsoleUser),
}

impl Resolved {
    /// What anything this request stores (an Idempotency-Key's answer) is scoped to.
    pub fn scope(&self) -> String {
        match self {
            Resolved::Agent(s) => s.key.to_string(),
            Resolved::Company { key, .. } => key.to_string(),
            Resolved::Person(p) => p.token.to_string(),
            Resolved::Session(u) => format!("session:{}", u.id),
        }
    }

    /// The credential, as streams re-check it; a session is checked by its cookie instead.
    pub fn credential(&self) -> Option<Credential> {
        match self {
            Resolved::Agent(s) => Some(Credential::Agent(s.clone())),
            Resolved::Company { tenant, key } => {
                Some(Credential::Company { tenant: tenant.clone(), key: key.clone() })
            }
            Resolved::Person(p) => Some(Credential::Person(p.clone())),
            Resolved::Session(_) => None,
        }
    }
}

pub fn bearer(parts: &axum::http::HeaderMap) -> Option<&str> {
    let header = parts.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    header.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim)
}

fn missing_key() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "missing_key",
        "send a key as `Authorization: Bearer nv_<prefix>_<secret>` (or a personal token, `nvu_…`)",
    )
}

fn mcp_only() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "token_for_mcp_only",
        "this OAuth access token was issued for /mcp only; use the agent's scoped key at /v1",
    )
}

fn invalid_key() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "invalid_key",
        "the key is malformed, unknown, revoked or expired; ask for a new key",
    )
}

/// The name a refusal envelope gives the route an agent called.
fn action_of(matched: &str, method: &axum::http::Method, path: &str) -> String {
    match matched {
        "/v1/users/{user_id}/{primitive}/{verb}" => {
            let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            format!("{}.{}", parts.get(3).unwrap_or(&""), parts.get(4).unwrap_or(&""))
        }
        "/v1/approvals/{id}" => "naive_approvals_get".into(),
        "/v1/policy/explain" => "naive_policy_explain".into(),
        "/v1/brain/proposals" => "naive_brain_proposals".into(),
        "/v1/brain/proposals/{id}" => "naive_brain_proposal".into(),
        "/v1/brain/proposals/{id}/decision" => gateway::domain::brain::DECIDE_TOOL.into(),
        "/v1/brain/writebacks" if method == axum::http::Method::POST => "brain.writeback".into(),
        "/v1/brain/writebacks" => "naive_brain_writebacks".into(),
        "/v1/brain/writebacks/{id}" => "naive_brain_writeback".into(),
        "/v1/brain/beliefs" => "naive_brain_beliefs".into(),
        other => other.trim_start_matches("/v1/").replace(['/', '-'], "_").replace(['{', '}'], ""),
    }
}

/// Resolves the request's credential (see the module doc), refusing a missing or bad one and
/// an agent whose profile is not active.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string()).unwrap_or_default();
    if UNAUTHENTICATED.contains(&matched.as_str()) {
        return next.run(req).await;
    }
    let resolved = match resolve(&state, req.headers()).await {
        Ok(r) => r,
        Err(p) => return p.into_response(),
    };
    if let Resolved::Agent(s) = &resolved {
        let action = action_of(&matched, req.method(), req.uri().path());
        match state.gateway.inactive_refusal(s, &action).await {
            Ok(Some(env)) => return (StatusCode::FORBIDDEN, axum::Json(env)).into_response(),
            Ok(None) => {}
            Err(e) => return Problem::from(e).into_response(),
        }
    }
    req.extensions_mut().insert(resolved);
    next.run(req).await
}

async fn resolve(state: &AppState, headers: &axum::http::HeaderMap) -> Result<Resolved, Problem> {
    let Some(token) = bearer(headers) else {
        return match crate::http::console_auth::session_user(state, headers).await? {
            Some(user) => Ok(Resolved::Session(user)),
            None => Err(missing_key()),
        };
    };
    Ok(match state.gateway.credential(token).await?.ok_or_else(invalid_key)? {
        // An OAuth access token is good at `/mcp` only (RFC 8707: its resource).
        Credential::Agent(s) if s.connection.is_some() => return Err(mcp_only()),
        Credential::Agent(s) => Resolved::Agent(s),
        Credential::Company { tenant, key } => Resolved::Company { tenant, key },
        Credential::Person(p) => Resolved::Person(p),
    })
}

fn resolved(parts: &Parts) -> Result<&Resolved, Problem> {
    parts.extensions.get::<Resolved>().ok_or_else(missing_key)
}

/// An authenticated agent.
pub struct Agent(pub Subject);

/// An agent or the company.
pub enum Caller {
    Agent(Subject),
    Company(TenantId),
}

impl Caller {
    pub fn tenant(&self) -> &TenantId {
        match self {
            Caller::Agent(s) => &s.tenant,
            Caller::Company(t) => t,
        }
    }

    /// The tenant, if this is the company key; agents are refused with `what` they tried.
    pub fn company(self, what: &str) -> Result<TenantId, Problem> {
        match self {
            Caller::Company(t) => Ok(t),
            Caller::Agent(_) => Err(Problem::new(
                StatusCode::FORBIDDEN,
                "company_key_required",
                format!("{what} needs the company key"),
            )),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Caller, Problem> {
        match resolved(parts)? {
            Resolved::Agent(s) => Ok(Caller::Agent(s.clone())),
            Resolved::Company { tenant, .. } => Ok(Caller::Company(tenant.clone())),
            Resolved::Person(_) | Resolved::Session(_) => Err(Problem::new(
                StatusCode::FORBIDDEN,
                "company_key_required",
                "this route takes an agent's key or the company key; a person's credential decides approvals and proposals",
            )),
        }
    }
}

impl FromRequestParts<AppState> for Agent {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Agent, Problem> {
        match resolved(parts)? {
            Resolved::Agent(s) => Ok(Agent(s.clone())),
            _ => Err(Problem::new(
                StatusCode::FORBIDDEN,
                "agent_key_required",
                "this route takes an agent's scoped key",
            )),
        }
    }
}

/// A human deciding with their own credential.
pub struct Human {
    pub tenant: TenantId,
    pub user: gateway::domain::principal::Human,
}

impl Human {
    /// The human behind `r`, or the refusal for an agent or the company key.
    pub fn from_resolved(r: &Resolved) -> Result<Human, Problem> {
        let (user, credential, groups) = match r {
            Resolved::Person(p) => (&p.user, p.credential_label(), p.groups),
            Resolved::Session(u) => (u, "console session".to_string(), true),
            Resolved::Agent(_) => {
                return Err(Problem::new(
                    StatusCode::FORBIDDEN,
                    "requester_cannot_decide",
                    "agents cannot decide; a human decides in the console or with their personal API token",
                ));
            }
            Resolved::Company { .. } => {
                return Err(Problem::new(
                    StatusCode::FORBIDDEN,
                    "human_credential_required",
                    "a decision needs the deciding person's own credential: a personal API token from their \
                     account page (Authorization: Bearer nvu_…) or the console; the company key decides for nobody",
                ));
            }
        };
        Ok(Human {
            tenant: user.tenant_id.clone(),
            user: gateway::domain::principal::Human {
                roles: user.roles.clone(),
                user_id: user.id.clone(),
                username: user.username.clone(),
                credential,
                via: gateway::audit::activity::Transport::Http,
                groups,
            },
        })
    }
}

impl FromRequestParts<AppState> for Human {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Human, Problem> {
        Human::from_resolved(resolved(parts)?)
    }
}

/// The shortest operator key accepted.
pub const MIN_OPERATOR_KEY_LEN: usize = 24;

/// The deployment's operator, who may read every tenant's activity log.
pub struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Operator, Problem> {
        let Some(expected) = &state.operator_key_hash else {
            return Err(Problem::new(
                StatusCode::FORBIDDEN,
                "operator_key_not_configured",
                "this server has no operator key; start it with --operator-key or NAIVE_OPERATOR_KEY",
            ));
        };
        let token = bearer(&parts.headers).ok_or_else(missing_key)?;
        if gateway::secrets::digest_eq(&gateway::secrets::hash_token(token), expected) {
            Ok(Operator)
        } else {
            Err(Problem::new(
                StatusCode::FORBIDDEN,
                "operator_key_required",
                "this read across every tenant (the log, /metrics) needs the operator key, not an agent or company key",
            ))
        }
    }
}
