//! SCIM 2.0 provisioning on the real server over HTTP: a directory creates, reads, filters,
//! pages, replaces, patches and deletes users and groups with the tenant's SCIM token; groups
//! are approval groups and mapped groups give roles at once; deactivating a user ends their
//! sessions and personal tokens at once; another tenant's token, a malformed filter or PATCH
//! get the RFC's error body and change nothing.

mod common;

use common::{COMPANY_KEY, TestApp, spawn_app};
use serde_json::{Value, json};

async fn scim(app: &TestApp, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app
        .client
        .request(method.parse().unwrap(), format!("{}/scim/v2{path}", app.base))
        .bearer_auth(token)
        .header("content-type", "application/scim+json");
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    if status != 204 {
        assert_eq!(res.headers()["content-type"], "application/scim+json", "{method} {path}");
    }
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn token(app: &TestApp) -> String {
    let res = app.client.post(format!("{}/v1/scim/token", app.base)).bearer_auth(COMPANY_KEY).send().await.unwrap();
    assert_eq!(res.status(), 201);
    res.json::<Value>().await.unwrap()["secret"].as_str().unwrap().to_string()
}

fn user(name: &str) -> Value {
    json!({ "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": name,
            "displayName": name, "emails": [{ "value": format!("{}@example.com", name.to_lowercase()), "primary": true }] })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_provisions_users_and_groups() {
    let app = spawn_app().await;
    let t = token(&app).await;
    let (status, created) = scim(&app, &t, "POST", "/Users", Some(user("Ann.Lee"))).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["meta"]["resourceType"], "User");
    let (status, _) = scim(&app, &t, "POST", "/Users", Some(user("ann.lee"))).await;
    assert_eq!(status, 409, "userName is unique case-insensitively");
    let (_, found) = scim(&app, &t, "GET", "/Users?filter=userName%20eq%20%22ANN.LEE%22", None).await;
    assert_eq!(found["totalResults"], 1);
    assert_eq!(found["Resources"][0]["id"], id.as_str());
    for i in 0..5 {
        assert_eq!(scim(&app, &t, "POST", "/Users", Some(user(&format!("u{i}")))).await.0, 201);
    }
    let (_, page) = scim(&app, &t, "GET", "/Users?startIndex=2&count=2", None).await;
    assert_eq!((page["totalResults"].as_u64(), page["itemsPerPage"].as_u64()), (Some(6), Some(2)));
    assert_eq!(page["startIndex"], 2);

    // A group is an approval group; its members are the approval group's.
    let (status, g) = scim(&app, &t, "POST", "/Groups", Some(json!({ "displayName": "Treasury Team", "members": [{ "value": id }] }))).await;
    assert_eq!(status, 201, "{g}");
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let approval = app.gateway.group(&tenant, "treasury-team").await.unwrap();
    assert_eq!(approval.members.len(), 1);
    let gid = g["id"].as_str().unwrap().to_string();
    let remove = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                         "Operations": [{ "op": "remove", "path": format!("members[value eq \"{id}\"]") }] });
    assert_eq!(scim(&app, &t, "PATCH", &format!("/Groups/{gid}"), Some(remove)).await.0, 200);
    assert!(app.gateway.group(&tenant, "treasury-team").await.unwrap().members.is_empty());
    assert_eq!(scim(&app, &t, "DELETE", &format!("/Groups/{gid}"), None).await.0, 204);
    assert_eq!(scim(&app, &t, "GET", &format!("/Groups/{gid}"), None).await.0, 404);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivating_a_user_ends_their_sessions_and_tokens_at_once() {
    let app = spawn_app().await;
    let t = token(&app).await;
    let (_, created) = scim(&app, &t, "POST", "/Users", Some(user("dana"))).await;
    let id = created["id"].as_str().unwrap().to_string();
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let u = app.gateway.user_named(&tenant, "dana").await.unwrap();
    app.gateway.set_user_roles(&tenant, &u.id, &[gateway::Role::Approver], "admin").await.unwrap();
    let session = app.gateway.start_session(&u).await.unwrap();
    assert!(app.gateway.session_user(&session).await.unwrap().is_some());
    let off = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                      "Operations": [{ "op": "replace", "path": "active", "value": false }] });
    let (status, body) = scim(&app, &t, "PATCH", &format!("/Users/{id}"), Some(off)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["active"], false);
    assert!(app.gateway.session_user(&session).await.unwrap().map_or(true, |u| u.roles.is_empty()));
    assert!(app.gateway.user(&tenant, &u.id).await.unwrap().roles.is_empty(), "roles taken");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_rfc_error_and_change_nothing() {
    let app = spawn_app().await;
    let t = token(&app).await;
    let (_, created) = scim(&app, &t, "POST", "/Users", Some(user("erin"))).await;
    let id = created["id"].as_str().unwrap().to_string();
    let (status, e) = scim(&app, &t, "GET", "/Users?filter=userName%20xx%20%22a%22", None).await;
    assert_eq!((status, e["scimType"].as_str()), (400, Some("invalidFilter")));
    assert_eq!(e["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error");
    let bad = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                      "Operations": [{ "op": "replace", "path": "displayName", "value": "x" },
                                     { "op": "remove", "path": "emails[type eq \"nope\"]" }] });
    let (status, e) = scim(&app, &t, "PATCH", &format!("/Users/{id}"), Some(bad)).await;
    assert_eq!((status, e["scimType"].as_str()), (400, Some("noTarget")));
    let (_, now) = scim(&app, &t, "GET", &format!("/Users/{id}"), None).await;
    assert_eq!(now["displayName"], "erin", "the first operation was not kept");
    // Another tenant's token: its resources do not exist here.
    let other = app.gateway.create_tenant("Other Co").await.unwrap();
    let other_token = app.gateway.create_scim_token(&other.id, "test", gateway::audit::activity::Transport::Http).await.unwrap();
    assert_eq!(scim(&app, &other_token, "GET", &format!("/Users/{id}"), None).await.0, 404);
    assert_eq!(scim(&app, "nvs_nope_nope", "GET", "/Users", None).await.0, 401);
    app.stop().await;
}
