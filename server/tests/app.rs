//! Black-box tests of the application: the real router on port 0 with a fresh SQLite file.

mod common;

use common::{config, spawn_app, spawn_with};
use server::{error::StartError, startup::Application};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_reports_the_database() {
    let app = spawn_app().await;
    let (status, body) = app.get("/healthz").await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["database"], "ok");
    app.stop().await;
}

/// A browser asks for `/favicon.ico` by itself on a page with no icon link (a JSON answer
/// opened in a tab): it gets the console's icon, not a 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_icon_is_where_browsers_look_for_it() {
    let app = spawn_app().await;
    let (status, body) = app.get("/favicon.ico").await;
    assert_eq!(status, 200);
    assert!(body.contains("<svg"), "{body}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_is_server_rendered_from_the_database() {
    let app = spawn_app().await;
    let pages = [
        ("/", "Approval inbox", "amount: 30.00 · memo: servo motors · merchant: globex-parts"),
        ("/proposals", "Proposals", "Globex Parts ships servo motors in 3 business days"),
        ("/kits", "Kits", "raises hard cap from $40.00 to $50.00"),
        ("/spend", "Spend", "$50.00"),
        ("/activity", "Activity", "chain verified"),
        ("/profiles", "Profiles", "receipts-clerk"),
    ];
    let cookie = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    for (path, heading, content) in pages {
        let (status, html) = app.get_signed_in(path, &cookie).await;
        assert_eq!(status, 200, "{path}");
        assert!(html.contains(&format!(">{heading}</h1>")), "{path} lacks its heading");
        assert!(
            html.contains(content),
            "{path} lacks `{content}`; the page says: {}",
            html.split("<main").nth(1).unwrap_or(&html).chars().take(1500).collect::<String>()
        );
        assert!(html.contains("Acme Robotics"), "{path} lacks the tenant in the top bar");
        assert!(html.contains("data-testid=\"connection\""), "{path} lacks the island");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_get_the_styled_404() {
    let app = spawn_app().await;
    let (status, html) = app.get("/no/such/page").await;
    assert_eq!(status, 404);
    assert!(html.contains("There is no page here"));
    assert!(!html.contains("href=\"/profiles\""), "signed out, no view is offered");
    let admin = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let (status, html) = app.get_signed_in("/no/such/page", &admin).await;
    assert_eq!(status, 404);
    assert!(html.contains("href=\"/profiles\""), "the 404 keeps the signed-in user's navigation");
    let reviewer = app.sign_in("reviewer", common::ADMIN_PASSWORD).await;
    let (_, html) = app.get_signed_in("/no/such/page", &reviewer).await;
    assert!(html.contains("href=\"/proposals\"") && !html.contains("href=\"/profiles\""));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_is_seeded_once_and_only_into_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/naive.db", dir.path().display());
    let first = Application::build(&config(&url)).await.unwrap();
    let creds = first.demo.clone().expect("first start seeds the demo");
    assert!(creds.generated_admin_password.is_none(), "the password came from the config");
    assert!(creds.generated_company_key.is_none(), "the company key came from the config");
    let key = common::COMPANY_KEY.to_string();
    drop(first);
    let second = Application::build(&config(&url)).await.unwrap();
    assert!(second.demo.is_none(), "a restart does not seed again");
    drop(second);

    let gw = gateway::Gateway::open(&url).await.unwrap();
    assert_eq!(gw.tenants().await.unwrap().len(), 1);
    assert_eq!(gw.authenticate_company_key(&key).await.unwrap(), Some(creds.tenant.clone()));
    let admin = gw.verify_login("admin", common::ADMIN_PASSWORD).await.unwrap().expect("admin logs in");
    assert!(admin.has(gateway::Role::Admin));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_demo_leaves_the_database_empty_and_pages_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&format!("sqlite://{}/naive.db", dir.path().display()));
    cfg.no_demo = true;
    let app = spawn_with(cfg).await;
    let res = app.raw_client().get(format!("{}/profiles", app.base)).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 303, "signed out: to the sign-in page");
    assert_eq!(res.headers()["location"], "/login?next=/profiles");
    let (status, html) = app.get("/login?next=/profiles").await;
    assert_eq!(status, 200);
    assert!(html.contains("tenant create"), "the sign-in page says where the first admin comes from");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_is_a_clear_error() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&format!("sqlite://{}/other.db", dir.path().display()));
    cfg.bind = app.base.trim_start_matches("http://").parse().unwrap();
    let err = Application::build(&cfg).await.err().expect("the port is taken");
    assert!(matches!(err, StartError::Bind { .. }));
    assert!(err.to_string().contains("cannot listen on"), "{err}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_database_url_lists_the_accepted_schemes() {
    let err = Application::build(&config("mysql://localhost/x")).await.err().unwrap();
    assert!(err.to_string().contains("sqlite://PATH"), "{err}");
}
