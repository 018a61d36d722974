//! SCIM discovery (RFC 7644 §4): what this server supports, its two resource types, and the
//! schemas of exactly the attributes it keeps. Public, as the RFC allows: they describe the
//! server, nothing of a tenant.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use gateway::domain::scim::{GROUP_SCHEMA, MAX_PAGE, USER_SCHEMA};
use serde_json::{Value, json};

use super::{scim_error, scim_json};

const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";

pub async fn service_provider_config() -> Response {
    scim_json(
        StatusCode::OK,
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "documentationUri": "https://github.com/naive/naive/blob/main/docs/sso.md#provisioning",
            "patch": { "supported": true },
            "bulk": { "supported": false, "maxOperations": 0, "maxPayloadSize": 0 },
            "filter": { "supported": true, "maxResults": MAX_PAGE },
            "changePassword": { "supported": false },
            "sort": { "supported": false },
            "etag": { "supported": false },
            "authenticationSchemes": [{
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The tenant's SCIM token, issued once by an admin on the users page or with POST /v1/scim/token",
                "primary": true,
            }],
            "meta": { "resourceType": "ServiceProviderConfig", "location": "/scim/v2/ServiceProviderConfig" },
        }),
    )
}

fn resource_type_doc(name: &str) -> Option<Value> {
    let (endpoint, schema, description) = match name {
        "User" => ("/Users", USER_SCHEMA, "A console user"),
        "Group" => ("/Groups", GROUP_SCHEMA, "An approval group"),
        _ => return None,
    };
    Some(json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": name,
        "name": name,
        "endpoint": endpoint,
        "description": description,
        "schema": schema,
        "schemaExtensions": [],
        "meta": { "resourceType": "ResourceType", "location": format!("/scim/v2/ResourceTypes/{name}") },
    }))
}

fn list(items: Vec<Value>) -> Response {
    scim_json(
        StatusCode::OK,
        json!({ "schemas": [LIST_SCHEMA], "totalResults": items.len(), "startIndex": 1, "itemsPerPage": items.len(), "Resources": items }),
    )
}

pub async fn resource_types() -> Response {
    list(["User", "Group"].into_iter().filter_map(resource_type_doc).collect())
}

pub async fn resource_type(Path(name): Path<String>) -> Response {
    match resource_type_doc(&name) {
        Some(d) => scim_json(StatusCode::OK, d),
        None => scim_error(StatusCode::NOT_FOUND, None, &format!("no resource type `{name}`: User or Group")),
    }
}

fn attribute(name: &str, kind: &str, (required, uniqueness): (bool, &str), description: &str) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": false, "description": description,
        "required": required, "caseExact": false, "mutability": "readWrite", "returned": "default",
        "uniqueness": uniqueness,
    })
}

fn user_schema() -> Value {
    let mut emails = attribute(
        "emails",
        "complex",
        (false, "none"),
        "Email addresses; the primary one is shown on the users page",
    );
    emails["multiValued"] = json!(true);
    emails["subAttributes"] = json!([
        attribute("value", "string", (false, "none"), "The address"),
        attribute("type", "string", (false, "none"), "work, home or other"),
        attribute("primary", "boolean", (false, "none"), "Whether it is the primary address"),
    ]);
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": USER_SCHEMA, "name": "User", "description": "A console user",
        "attributes": [
            attribute("userName", "string", (true, "server"), "Unique in the tenant, case-insensitively"),
            attribute("displayName", "string", (false, "none"), "The name shown"),
            attribute("active", "boolean", (false, "none"), "false deactivates: sessions and tokens end, roles and groups go"),
            emails,
        ],
        "meta": { "resourceType": "Schema", "location": format!("/scim/v2/Schemas/{USER_SCHEMA}") },
    })
}

fn group_schema() -> Value {
    let mut members = attribute("members", "complex", (false, "none"), "The group's users");
    members["multiValued"] = json!(true);
    let mut value = attribute("value", "string", (false, "none"), "A user's id");
    value["mutability"] = json!("immutable");
    let mut reference = attribute("$ref", "reference", (false, "none"), "The user's URI");
    reference["referenceTypes"] = json!(["User"]);
    reference["mutability"] = json!("immutable");
    members["subAttributes"] =
        json!([value, reference, attribute("display", "string", (false, "none"), "The user's name")]);
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": GROUP_SCHEMA, "name": "Group", "description": "An approval group; a group the single sign-on mapping names gives roles",
        "attributes": [attribute("displayName", "string", (true, "server"), "Unique in the tenant"), members],
        "meta": { "resourceType": "Schema", "location": format!("/scim/v2/Schemas/{GROUP_SCHEMA}") },
    })
}

pub async fn schemas() -> Response {
    list(vec![user_schema(), group_schema()])
}

pub async fn schema(Path(urn): Path<String>) -> Response {
    match urn.as_str() {
        USER_SCHEMA => scim_json(StatusCode::OK, user_schema()),
        GROUP_SCHEMA => scim_json(StatusCode::OK, group_schema()),
        _ => scim_error(StatusCode::NOT_FOUND, None, &format!("no schema `{urn}`")),
    }
}
