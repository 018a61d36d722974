//! What goes over the wire compressed and what is cached (issue #48), black-box: the real
//! application on port 0 with a site directory of its own. An asset built with its brotli and
//! gzip files goes out as the browser accepts it, revalidated on each visit while its name
//! carries no hash; a page goes out compressed when the client accepts it; an event stream
//! never does.

mod common;

use common::{COMPANY_KEY, spawn_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_pages_and_streams_are_compressed_as_they_should_be() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("site/pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("naive.wasm"), b"the module itself").unwrap();
    std::fs::write(pkg.join("naive.wasm.br"), b"brotli bytes").unwrap();
    std::fs::write(pkg.join("naive.wasm.gz"), b"gzip bytes").unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut config = common::config(&url);
    config.site_root = dir.path().join("site").to_str().unwrap().into();
    let app = spawn_with(config).await;
    let raw = server::http_client();

    let get = async |path: &str, accept: Option<&str>| {
        let mut req = raw.get(format!("{}{path}", app.base));
        if let Some(a) = accept {
            req = req.header("accept-encoding", a);
        }
        req.send().await.unwrap()
    };
    let res = get("/pkg/naive.wasm", Some("br, gzip")).await;
    let encoding = res.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
    let cache = res.headers().get("cache-control").map(|v| v.to_str().unwrap().to_string());
    assert_eq!((encoding.as_deref(), cache.as_deref()), (Some("br"), Some("no-cache")));
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"brotli bytes");
    let res = get("/pkg/naive.wasm", Some("gzip")).await;
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let res = get("/pkg/naive.wasm", None).await;
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"the module itself");

    let page = get("/login", Some("br, gzip")).await;
    assert_eq!(
        page.headers().get("content-encoding").map(|v| v.to_str().unwrap()),
        Some("br"),
        "a page is compressed"
    );
    assert!(get("/login", None).await.headers().get("content-encoding").is_none());

    let stream = raw
        .get(format!("{}/v1/events", app.base))
        .bearer_auth(COMPANY_KEY)
        .header("accept-encoding", "br, gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert!(stream.headers().get("content-encoding").is_none(), "an event stream goes out as written");
}
