//! Groups of console users over HTTP (company key): approval rules name them ("one of the
//! approvers from treasury"). `GET/POST /v1/groups`, `DELETE /v1/groups/{name}`,
//! `PUT/DELETE /v1/groups/{name}/members/{user_id}`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::domain::groups::Group;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing groups";

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct GroupList {
    pub items: Vec<Group>,
}

#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    /// 1 to 64 lowercase letters, digits, `-` and `_`.
    #[schema(pattern = "^[a-z0-9_-]{1,64}$")]
    name: String,
}

#[utoipa::path(get, path = "/v1/groups", tag = "groups", operation_id = "list_groups",
    responses((status = 200, description = "The tenant's groups with their members.", body = GroupList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(GroupList { items: state.gateway.groups(&tenant).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/groups", tag = "groups", operation_id = "create_group",
    request_body = NewGroup,
    responses((status = 201, description = "Added, with no members.", body = Group),
        (status = 409, description = "`group_exists`.", body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let g: NewGroup = json_body(&body, r#"{"name": "treasury"}"#)?;
    Ok((StatusCode::CREATED, Json(state.gateway.create_group(&tenant, &g.name, ACTOR).await?))
        .into_response())
}

#[utoipa::path(delete, path = "/v1/groups/{name}", tag = "groups", operation_id = "delete_group",
    params(("name" = String, Path, description = "The group's name.")),
    responses((status = 204, description = "Deleted with its memberships."),
        (status = 409, description = "`group_in_use`: a kit's approval rule names it.", body = Problem)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_group(&tenant, &name, ACTOR).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(put, path = "/v1/groups/{name}/members/{user_id}", tag = "groups", operation_id = "add_group_member",
    params(("name" = String, Path, description = "The group's name."), ("user_id" = String, Path, description = "A console user's id.")),
    responses((status = 200, description = "The group, with the user in it.", body = Group)))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, user)): Path<(String, String)>,
) -> Result<Response, Problem> {
    member(state, caller, (name, user), true).await
}

#[utoipa::path(delete, path = "/v1/groups/{name}/members/{user_id}", tag = "groups", operation_id = "remove_group_member",
    params(("name" = String, Path, description = "The group's name."), ("user_id" = String, Path, description = "A console user's id.")),
    responses((status = 200, description = "The group, without the user.", body = Group)))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, user)): Path<(String, String)>,
) -> Result<Response, Problem> {
    member(state, caller, (name, user), false).await
}

async fn member(
    state: AppState,
    caller: Caller,
    (name, user): (String, String),
    on: bool,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    // An id that is not a user's names nobody here: the same answer as an unknown user's.
    let user = gateway::UserId::parse(&user)
        .ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "not_found", "console user not found"))?;
    Ok(Json(state.gateway.set_group_member(&tenant, (&name, &user), on, ACTOR).await?).into_response())
}
