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
    let res =
        app.client.post(format!("{}/v1/scim/token", app.base)).bearer_auth(COMPANY_KEY).send().await.unwrap();
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
    let (status, g) = scim(
        &app,
        &t,
        "POST",
        "/Groups",
        Some(json!({ "displayName": "Treasury Team", "members": [{ "value": id }] })),
    )
    .await;
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
async fn deactivating_a_user_ends_their_sessions_tokens_and_slack_link_at_once() {
    let app = spawn_app().await;
    let t = token(&app).await;
    let (_, created) = scim(&app, &t, "POST", "/Users", Some(user("dana"))).await;
    let id = created["id"].as_str().unwrap().to_string();
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let u = app.gateway.user_named(&tenant, "dana").await.unwrap();
    let u = app.gateway.set_user_roles(&tenant, &u.id, &[gateway::Role::Approver], "admin").await.unwrap();
    let session = app.gateway.start_session(&u).await.unwrap();
    assert!(app.gateway.session_user(&session).await.unwrap().is_some());
    let (_, personal) =
        app.gateway.issue_user_token(&u, "laptop", (&[gateway::Role::Approver], false)).await.unwrap();
    let decide = |t: String| {
        let (client, base) = (app.client.clone(), app.base.clone());
        async move {
            client
                .get(format!("{base}/v1/approvals/apr_none"))
                .bearer_auth(t)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_ne!(decide(personal.clone()).await, 401, "the personal token works before");
    // Their Slack user, linked through the single-use link a click sends.
    let slack = gateway::delivery::slack::interact::SlackUser { id: "U0DANA".into(), name: "dana".into() };
    let url = app.gateway.slack_link_url(&tenant, &slack).await.unwrap();
    let code = url.split("code=").nth(1).unwrap();
    app.gateway.link_slack(code, &u).await.unwrap();
    assert_eq!(app.gateway.slack_links(&tenant).await.unwrap().len(), 1);
    let off = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                      "Operations": [{ "op": "replace", "path": "active", "value": false }] });
    let (status, body) = scim(&app, &t, "PATCH", &format!("/Users/{id}"), Some(off)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["active"], false);
    assert!(app.gateway.session_user(&session).await.unwrap().is_none(), "the session ended at once");
    assert_eq!(decide(personal).await, 401, "the personal token ended at once");
    assert!(app.gateway.user(&tenant, &u.id).await.unwrap().roles.is_empty(), "roles taken");
    assert!(app.gateway.slack_links(&tenant).await.unwrap().is_empty(), "the Slack link removed");
    let log = app.gateway.log(&tenant, &Default::default()).await.unwrap();
    assert!(
        log.iter()
            .any(|e| matches!(&e.actor, gateway::audit::activity::Actor::User(a) if a.starts_with("scim:"))
                && e.detail["change"] == "deactivated")
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_the_sso_mapping_names_gives_its_members_roles_at_once() {
    let app = spawn_app().await;
    let t = token(&app).await;
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    // The mapping names the directory's group `Finance Team`; no provider is reached here.
    let settings = json!({ "issuer": "https://idp.example.com", "client_id": "naive", "client_secret": "s",
                           "mapping": [{ "group": "Finance Team", "roles": ["finance", "approver"] }] });
    let res = app
        .client
        .put(format!("{}/v1/sso/oidc", app.base))
        .bearer_auth(COMPANY_KEY)
        .json(&settings)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let (_, created) = scim(&app, &t, "POST", "/Users", Some(user("fay"))).await;
    let id = created["id"].as_str().unwrap().to_string();
    let fay = || async { app.gateway.user_named(&tenant, "fay").await.unwrap().roles };
    assert!(fay().await.is_empty(), "provisioned without a role");
    let (status, g) = scim(
        &app,
        &t,
        "POST",
        "/Groups",
        Some(json!({ "displayName": "Finance Team", "members": [{ "value": id }] })),
    )
    .await;
    assert_eq!(status, 201, "{g}");
    assert_eq!(fay().await, vec![gateway::Role::Approver, gateway::Role::Finance]);
    let gid = g["id"].as_str().unwrap();
    let out = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                      "Operations": [{ "op": "remove", "path": "members", "value": [{ "value": id }] }] });
    assert_eq!(scim(&app, &t, "PATCH", &format!("/Groups/{gid}"), Some(out)).await.0, 200);
    assert!(fay().await.is_empty(), "out of the group, out of its roles");
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
    let (other, _) = app.gateway.create_tenant("Other Co", policy::Money::ZERO, None).await.unwrap();
    let other_token = app
        .gateway
        .create_scim_token(&other.id, "test", gateway::audit::activity::Transport::Http)
        .await
        .unwrap();
    assert_eq!(scim(&app, &other_token, "GET", &format!("/Users/{id}"), None).await.0, 404);
    assert_eq!(scim(&app, "nvs_nope_nope", "GET", "/Users", None).await.0, 401);
    app.stop().await;
}
