//! SCIM lists at size (issue #49), on the path production takes: the real application on
//! port 0 (SQLite), 10,000 users provisioned over `/scim/v2`, then pages of 100 read at
//! random offsets and `userName eq` lookups, as a directory's sync does.
//!
//! Prints p50/p90/p99 of each (target: a page at p50 under 50 ms).
//!
//!   cargo bench -p server --bench scim [-- --users 10000]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{COMPANY_KEY, spawn_app};
use serde_json::{Value, json};

fn line(what: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
    println!("{what:<44} p50 {:7.2} ms   p90 {:7.2} ms   p99 {:7.2} ms", at(0.5), at(0.9), at(0.99));
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize =
        std::env::args().skip_while(|a| a != "--users").nth(1).and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let app = spawn_app().await;
    let res =
        app.client.post(format!("{}/v1/scim/token", app.base)).bearer_auth(COMPANY_KEY).send().await.unwrap();
    let token = res.json::<Value>().await.unwrap()["secret"].as_str().unwrap().to_string();
    let scim = format!("{}/scim/v2", app.base);
    let seeding = Instant::now();
    for i in 0..n {
        let body = json!({ "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": format!("person{i:05}@example.com"),
                           "displayName": format!("Person {i}"), "emails": [{ "value": format!("person{i:05}@example.com"), "primary": true }] });
        let res =
            app.client.post(format!("{scim}/Users")).bearer_auth(&token).json(&body).send().await.unwrap();
        assert_eq!(res.status(), 201);
    }
    println!(
        "SCIM, {n} users provisioned in {:.1} s (one SQLite file, two cores)",
        seeding.elapsed().as_secs_f64()
    );
    let (mut pages, mut lookups) = (Vec::new(), Vec::new());
    for i in 0..300usize {
        let start = 1 + (i * 7919) % n.saturating_sub(100).max(1);
        let t = Instant::now();
        let res = app
            .client
            .get(format!("{scim}/Users?startIndex={start}&count=100"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        pages.push(t.elapsed());
        assert_eq!(body["totalResults"].as_u64(), Some(n as u64));
        let who = format!("person{:05}@example.com", (i * 31) % n);
        let t = Instant::now();
        let res = app
            .client
            .get(format!("{scim}/Users?filter=userName%20eq%20%22{who}%22"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        lookups.push(t.elapsed());
        assert_eq!(body["totalResults"], 1);
    }
    line("a page of 100 users (GET /Users, count=100)", pages);
    println!("  (target: at most 50 ms p50)");
    line("one user by userName (filter userName eq)", lookups);
    app.stop().await;
}
