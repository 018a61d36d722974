//! Who is calling `/v1`.
//!
//! - Agents present a scoped key, `Authorization: Bearer nv_…`, which resolves to a subject
//!   (tenant and profile): [`Agent`].
//! - Tenant administration presents the company key the same way: [`Caller::Company`]. A
//!   decision that needs a human also names the console user it is made for, in the
//!   `X-Naive-User` header, and that user must hold the right role: [`Human`].
//! - The operator of the deployment presents the operator key for the one read that crosses
//!   tenants, `GET /v1/logs`: [`Operator`].
//! - The console's session is another credential that the console issue adds beside these.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use gateway::keys::Subject;
use gateway::{Role, TenantId};

use crate::problem::Problem;
use crate::startup::AppState;

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

fn bearer(parts: &Parts) -> Result<&str, Problem> {
    let header = parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    header.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim).ok_or_else(|| {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "missing_key",
            "send a key as `Authorization: Bearer nv_<prefix>_<secret>`",
        )
    })
}

fn invalid_key() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "invalid_key",
        "the key is malformed, unknown, revoked or expired; ask for a new key",
    )
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, Problem> {
        let token = bearer(parts)?;
        if let Some(subject) = state.gateway.authenticate(token).await? {
            return Ok(Caller::Agent(subject));
        }
        match state.gateway.authenticate_company_key(token).await? {
            Some(tenant) => Ok(Caller::Company(tenant)),
            None => Err(invalid_key()),
        }
    }
}

impl FromRequestParts<AppState> for Agent {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Agent, Problem> {
        let token = bearer(parts)?;
        state.gateway.authenticate(token).await?.map(Agent).ok_or_else(invalid_key)
    }
}

/// A human decision over HTTP: the company key acting for a named console user.
pub struct Human {
    pub tenant: TenantId,
    pub user: gateway::approvals::Human,
    pub roles: Vec<Role>,
}

impl FromRequestParts<AppState> for Human {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Human, Problem> {
        let tenant = match Caller::from_request_parts(parts, state).await? {
            Caller::Company(t) => t,
            Caller::Agent(_) => {
                return Err(Problem::new(
                    StatusCode::FORBIDDEN,
                    "requester_cannot_decide",
                    "agents cannot decide approvals; a human decides in the console or with the company key",
                ));
            }
        };
        let name = parts.headers.get("x-naive-user").and_then(|v| v.to_str().ok()).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "user_required",
                "name the deciding console user in the X-Naive-User header",
            )
        })?;
        let user = state.gateway.user_named(&tenant, name).await?;
        Ok(Human {
            tenant,
            roles: user.roles.clone(),
            user: gateway::approvals::Human { user: user.id, username: user.username },
        })
    }
}

impl Human {
    /// Refuses unless the user holds one of `roles`.
    pub fn require(&self, roles: &[Role]) -> Result<(), Problem> {
        if self.roles.iter().any(|r| roles.contains(r)) {
            return Ok(());
        }
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        Err(Problem::new(
            StatusCode::FORBIDDEN,
            "role_required",
            format!("{} needs one of these roles: {}", self.user.username, names.join(", ")),
        ))
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
        let token = bearer(parts)?;
        if gateway::secrets::digest_eq(&gateway::secrets::hash_token(token), expected) {
            Ok(Operator)
        } else {
            Err(Problem::new(
                StatusCode::FORBIDDEN,
                "operator_key_required",
                "reading every tenant's log needs the operator key, not an agent or company key",
            ))
        }
    }
}
