//! Approvals for teams over `/v1` and the console (issue #34), on the real server with a
//! fresh database, a clock the test drives (`NAIVE_TEST_CLOCK_FILE`) and the reference webhook
//! receiver as its own process: two approvers one of them finance, the owner refused, one
//! person counted once across a token and a session, one deny after one approve, expiry at
//! "1 of 2", an escalation delivered once at its time, the agent's justification, groups and
//! bulk decisions with their refusals.

mod common;

use common::process::{Receiver, start_receiver};
use common::{ADMIN_PASSWORD, COMPANY_KEY, TestApp, spawn_with};
use gateway::Role;
use serde_json::{Value, json};

const KIT: &str = r#"{"name":"Team","primitives":["cards"],"limits":{"budget":{"hard_cap":"100000"},"approve":{"rules":[
    {"above":"30","window":"10m"},
    {"above":"500","approvers":2,"role":"finance","window":"4h","escalate":{"after":"1h","group":"treasury"}}
]}}}"#;

struct Team {
    app: TestApp,
    clock: std::path::PathBuf,
    profile: String,
    key: String,
    /// Personal tokens: carol (approver), fiona (finance), tess (reviewer, in treasury; her
    /// token acts for her groups).
    carol: String,
    fiona: String,
    tess: String,
    _dir: tempfile::TempDir,
    _cluster: Option<gateway::testing::Cluster>,
}

impl Team {
    async fn start() -> Team {
        let dir = tempfile::tempdir().unwrap();
        let clock = dir.path().join("clock");
        std::fs::write(&clock, "2027-05-03T09:00:00Z").unwrap();
        let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
        let config = common::clocked(&url, &clock);
        let app = spawn_with(config).await;
        let gw = &app.gateway;
        let tenant = gw.tenants().await.unwrap().remove(0).id;
        let mut ids = Vec::new();
        for (name, role) in [("carol", Role::Approver), ("fiona", Role::Finance), ("tess", Role::Reviewer)] {
            ids.push(gw.create_user(&tenant, name, ADMIN_PASSWORD, &[role]).await.unwrap().id);
        }
        let (s, _, b) =
            app.send("POST", "/v1/groups", Some(COMPANY_KEY), Some(json!({"name": "treasury"})), &[]).await;
        assert_eq!(s, 201, "{b}");
        let member = format!("/v1/groups/treasury/members/{}", ids[2]);
        let (s, _, b) = app.send("PUT", &member, Some(COMPANY_KEY), None, &[]).await;
        assert_eq!((s, b["members"][0]["username"].as_str()), (200, Some("tess")), "{b}");
        app.put_kit(serde_json::from_str(KIT).unwrap()).await;
        let (profile, _, key) = app.new_agent("buyer", "Team", Some("admin")).await;
        let carol = app.personal_token("carol", &["approver"]).await.1;
        let fiona = app.personal_token("fiona", &["finance"]).await.1;
        let tess = app.personal_token("tess", &["reviewer", "groups"]).await.1;
        Team { app, clock, profile, key, carol, fiona, tess, _dir: dir, _cluster: cluster }
    }

    fn set_clock(&self, at: &str) {
        std::fs::write(&self.clock, at).unwrap();
    }

    /// A charge of `amount`, with a justification if given: the approval it parked on.
    async fn park(&self, amount: &str, why: Option<&str>) -> String {
        let headers: Vec<(&str, &str)> = why.iter().map(|w| ("naive-justification", *w)).collect();
        let path = format!("/v1/users/{}/cards/charge", self.profile);
        let body = json!({"amount": amount, "merchant": "acme"});
        let (s, _, b) = self.app.send("POST", &path, Some(&self.key), Some(body), &headers).await;
        assert_eq!(s, 202, "{b}");
        b["recovery"][0]["approval_id"].as_str().unwrap().to_string()
    }

    async fn decide(&self, id: &str, verb: &str, token: &str, body: Value) -> (u16, Value) {
        let (s, _, b) =
            self.app.send("POST", &format!("/v1/approvals/{id}/{verb}"), Some(token), Some(body), &[]).await;
        (s, b)
    }

    async fn approval(&self, id: &str) -> Value {
        let (s, _, b) =
            self.app.send("GET", &format!("/v1/approvals/{id}"), Some(COMPANY_KEY), None, &[]).await;
        assert_eq!(s, 200, "{b}");
        b
    }

    async fn until_status(&self, id: &str, status: &str) -> Value {
        for _ in 0..100 {
            let a = self.approval(id).await;
            if a["status"] == status {
                return a;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{id} never became {status}: {}", self.approval(id).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvers_one_from_finance_the_same_person_once_across_token_and_session() {
    let t = Team::start().await;
    // Percent-encoded UTF-8 in the header reads back as the agent wrote it.
    let id = t.park("900", Some("Lieferant%20M%C3%BCller%2C%20invoice%20%234411")).await;
    let a = t.approval(&id).await;
    assert_eq!(a["justification"], "Lieferant Müller, invoice #4411");
    assert_eq!((a["quorum"]["required"].as_u64(), a["quorum"]["role"].as_str()), (Some(2), Some("finance")));
    assert_eq!(a["expires_at"], "2027-05-03T13:00:00Z", "the rule's 4h window");

    // The owner of the agent (admin) may not decide.
    let admin = t.app.personal_token("admin", &["admin", "approver"]).await.1;
    assert_eq!(t.decide(&id, "approve", &admin, json!({})).await.1["code"], "requester_cannot_decide");
    let (s, b) = t.decide(&id, "approve", &t.carol, json!({"note": "vendor checked"})).await;
    assert_eq!(
        (s, b["status"].as_str(), b["quorum"]["votes"][0]["username"].as_str()),
        (202, Some("pending"), Some("carol")),
        "{b}"
    );
    // Carol again, signed in to the console this time: still one person.
    let cookie = t.app.sign_in("carol", ADMIN_PASSWORD).await;
    let res = t.app.post_form(&cookie, "approve", "/", &[("id", id.as_str())]).await;
    let location = res.headers().get("location").unwrap().to_str().unwrap().to_string();
    assert!(location.contains("error") && location.contains("approved"), "{location}");
    let (s, b) = t.decide(&id, "approve", &t.carol, json!({})).await;
    assert_eq!((s, b["code"].as_str()), (409, Some("already_approved")));

    let (s, b) = t.decide(&id, "approve", &t.fiona, json!({})).await;
    assert_eq!((s, b["ok"].as_bool()), (200, Some(true)), "{b}");
    let a = t.approval(&id).await;
    let steps: Vec<&str> =
        a["trail"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["requested", "justified", "voted", "approved", "executed"]);
    let (_, _, budget) =
        t.app.send("GET", &format!("/v1/users/{}/budget", t.profile), Some(&t.key), None, &[]).await;
    assert_eq!(budget["totals"]["posted"], "900.00", "{budget}");
    t.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_deny_after_one_approve_ends_it_and_an_approval_expires_at_one_of_two() {
    let t = Team::start().await;
    let (denied, lapsing) = (t.park("600", None).await, t.park("700", None).await);
    for id in [&denied, &lapsing] {
        assert_eq!(t.decide(id, "approve", &t.fiona, json!({})).await.0, 202);
    }
    let (s, b) = t.decide(&denied, "deny", &t.carol, json!({"reason": "duplicate invoice"})).await;
    assert_eq!((s, b["status"].as_str()), (200, Some("denied")), "{b}");
    t.set_clock("2027-05-03T13:00:01Z");
    let a = t.until_status(&lapsing, "expired").await;
    assert_eq!(a["quorum"]["votes"].as_array().unwrap().len(), 1, "{a}");
    let (_, _, budget) =
        t.app.send("GET", &format!("/v1/users/{}/budget", t.profile), Some(&t.key), None, &[]).await;
    assert_eq!(
        (budget["totals"]["posted"].as_str(), budget["totals"]["pending"].as_str()),
        (Some("0.00"), Some("0.00"))
    );
    t.app.stop().await;
}

/// Waits until the receiver has answered 200 to a message of `kind`; every such body.
async fn delivered(receiver: &Receiver, kind: &str) -> Vec<Value> {
    for _ in 0..300 {
        let bodies: Vec<Value> = receiver
            .received()
            .await
            .iter()
            .filter(|r| r["answered"] == 200)
            .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
            .filter(|b: &Value| b["type"] == kind)
            .collect();
        if !bodies.is_empty() {
            return bodies;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no {kind} was delivered: {:?}", receiver.received().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_fires_once_at_its_time_with_its_webhook_and_its_group_then_decides() {
    let t = Team::start().await;
    let receiver = start_receiver(&[]);
    let hook = json!({"url": format!("{}/hook", receiver.base), "events": ["approval.parked", "approval.escalated"]});
    let (s, _, b) = t.app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(hook), &[]).await;
    assert_eq!(s, 201, "{b}");
    let id = t.park("800", Some("quarterly rent")).await;
    let parked = delivered(&receiver, "approval.parked").await;
    assert_eq!(parked[0]["data"]["justification"], "quarterly rent");
    assert_eq!(parked[0]["data"]["needs"], "2 approvers, one of them with role finance");
    assert_eq!(t.decide(&id, "approve", &t.tess, json!({})).await.1["code"], "role_required");
    t.set_clock("2027-05-03T10:00:30Z");
    let escalated = delivered(&receiver, "approval.escalated").await;
    assert_eq!(escalated[0]["data"]["approval_id"], id.as_str());
    assert_eq!(escalated[0]["data"]["fallback_group"], "treasury");
    // Several more sweeps pass; it escalated once.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(delivered(&receiver, "approval.escalated").await.len(), 1);
    let a = t.approval(&id).await;
    assert_eq!(a["trail"].as_array().unwrap().iter().filter(|s| s["step"] == "escalated").count(), 1);
    // Treasury now stands in for finance.
    assert_eq!(t.decide(&id, "approve", &t.carol, json!({})).await.0, 202);
    let (s, b) = t.decide(&id, "approve", &t.tess, json!({})).await;
    assert_eq!((s, b["ok"].as_bool()), (200, Some(true)), "{b}");
    t.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_decisions_account_for_every_item_and_bad_input_is_refused_whole() {
    let t = Team::start().await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(t.park("40", None).await);
    }
    assert_eq!(t.decide(&ids[4], "deny", &t.carol, json!({"reason": "no"})).await.0, 200);
    ids.push("apr_0000000000000000000000000000dead".into());
    let bulk = |body: Value| {
        let app = &t.app;
        let token = t.carol.clone();
        async move { app.send("POST", "/v1/approvals/decide", Some(&token), Some(body), &[]).await }
    };
    let (s, _, b) = bulk(json!({"ids": ids, "decision": "approve", "note": "batch"})).await;
    assert_eq!(s, 200, "{b}");
    let outcomes: Vec<(&str, &str)> = b["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_str().unwrap(), i["outcome"].as_str().unwrap()))
        .collect();
    let expect: Vec<(&str, &str)> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| {
            (
                id.as_str(),
                ["executed", "executed", "executed", "executed", "approval_already_decided", "not_found"][n],
            )
        })
        .collect();
    assert_eq!(outcomes, expect);
    for (body, code) in [
        (json!({"ids": [], "decision": "approve"}), "invalid_bulk"),
        (json!({"ids": [ids[0], ids[0]], "decision": "deny", "note": "x"}), "duplicate_approval"),
        (json!({"ids": [ids[0]], "decision": "deny"}), "reason_required"),
        (json!({"ids": [ids[0]], "decision": "maybe"}), "invalid_json"),
    ] {
        let (s, _, b) = bulk(body).await;
        assert_eq!((s, b["code"].as_str()), (400, Some(code)), "{b}");
    }
    // The company key is no person: it decides nothing, in bulk or alone.
    let (s, _, b) = t
        .app
        .send(
            "POST",
            "/v1/approvals/decide",
            Some(COMPANY_KEY),
            Some(json!({"ids": [ids[0]], "decision": "approve"})),
            &[],
        )
        .await;
    assert_eq!((s, b["code"].as_str()), (403, Some("human_credential_required")));
    t.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kits_and_groups_refuse_what_the_tenants_people_cannot_meet() {
    let t = Team::start().await;
    let kit = |rule: Value| json!({"name": "Strict", "primitives": ["cards"], "limits": {"approve": {"rules": [rule]}}});
    for (rule, status, code) in [
        (json!({"above": "1", "approvers": 9}), 400, "approval_rule_unmeetable"),
        (json!({"above": "1", "group": "nobody"}), 400, "unknown_group"),
        (json!({"above": "1", "window": "9d"}), 400, "invalid_kit"),
        (json!({"above": "1", "role": "boss"}), 400, "invalid_kit"),
    ] {
        let (s, _, b) = t.app.send("PUT", "/v1/kits/Strict", Some(COMPANY_KEY), Some(kit(rule)), &[]).await;
        assert_eq!((s, b["code"].as_str()), (status, Some(code)), "{b}");
    }
    let (s, _, _) = t.app.send("GET", "/v1/kits/Strict", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 404, "nothing was saved");
    let (s, _, b) = t.app.send("DELETE", "/v1/groups/treasury", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!((s, b["code"].as_str()), (409, Some("group_in_use")));
    let (s, _, b) =
        t.app.send("POST", "/v1/groups", Some(COMPANY_KEY), Some(json!({"name": "Bad Name"})), &[]).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_group_name")));
    let long = "x".repeat(501);
    let path = format!("/v1/users/{}/cards/charge", t.profile);
    let (s, _, b) = t
        .app
        .send(
            "POST",
            &path,
            Some(&t.key),
            Some(json!({"amount": "40", "merchant": "acme"})),
            &[("naive-justification", &long)],
        )
        .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("justification_too_long")));
    let (s, _, b) = t
        .app
        .send(
            "POST",
            &path,
            Some(&t.key),
            Some(json!({"amount": "40", "merchant": "acme"})),
            &[("naive-justification", "%FF")],
        )
        .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_justification")));
    t.app.stop().await;
}

/// The console user named `name`.
async fn user_id(t: &Team, name: &str) -> gateway::UserId {
    let tenant = t.app.gateway.tenants().await.unwrap().remove(0).id;
    t.app.gateway.users(&tenant).await.unwrap().into_iter().find(|u| u.username == name).unwrap().id
}

/// #47 finding 7: an approval counts a vote only while its voter still holds what made it
/// count, judged at every vote on who holds what now; and a personal token acts for its
/// user's groups only when it was given them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_counts_only_while_its_voter_holds_what_made_it_count() {
    let t = Team::start().await;
    let tenant = t.app.gateway.tenants().await.unwrap().remove(0).id;
    let posted = async || {
        let path = format!("/v1/users/{}/budget", t.profile);
        t.app.send("GET", &path, Some(COMPANY_KEY), None, &[]).await.2["totals"]["posted"].clone()
    };

    // A token of tess's without her groups does not approve through treasury.
    let escalated = t.park("800", None).await;
    t.set_clock("2027-05-03T10:00:30Z");
    for _ in 0..100 {
        let trail = t.approval(&escalated).await["trail"].clone();
        if trail.as_array().unwrap().iter().any(|s| s["step"] == "escalated") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(t.decide(&escalated, "approve", &t.carol, json!({})).await.0, 202);
    let reviewer_only = t.app.personal_token("tess", &["reviewer"]).await.1;
    let (s, b) = t.decide(&escalated, "approve", &reviewer_only, json!({})).await;
    assert_eq!((s, b["code"].as_str()), (403, Some("role_required")), "{b}");
    assert_eq!(posted().await, "0.00");

    // fiona's finance vote stops counting once she no longer holds finance.
    let id = t.park("900", None).await;
    assert_eq!(t.decide(&id, "approve", &t.fiona, json!({})).await.0, 202);
    let fiona = user_id(&t, "fiona").await;
    t.app.gateway.set_user_roles(&tenant, &fiona, &[Role::Reviewer], "admin").await.unwrap();
    let (s, b) = t.decide(&id, "approve", &t.carol, json!({})).await;
    assert_eq!((s, b["status"].as_str()), (202, Some("pending")), "{b}");
    assert_eq!(posted().await, "0.00", "nothing ran on a vote that no longer counts");

    // tess's treasury vote stops counting once she leaves treasury.
    let tess = user_id(&t, "tess").await;
    let (s, b) = t.decide(&escalated, "approve", &t.tess, json!({})).await;
    assert_eq!((s, b["ok"].as_bool()), (200, Some(true)), "tess, with her groups, completes it: {b}");
    let third = t.park("700", None).await;
    t.set_clock("2027-05-03T11:01:00Z");
    for _ in 0..100 {
        let trail = t.approval(&third).await["trail"].clone();
        if trail.as_array().unwrap().iter().any(|s| s["step"] == "escalated") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(t.decide(&third, "approve", &t.tess, json!({})).await.0, 202);
    let member = format!("/v1/groups/treasury/members/{tess}");
    assert_eq!(t.app.send("DELETE", &member, Some(COMPANY_KEY), None, &[]).await.0, 200);
    let (s, b) = t.decide(&third, "approve", &t.carol, json!({})).await;
    assert_eq!((s, b["status"].as_str()), (202, Some("pending")), "{b}");
    t.app.stop().await;
}
