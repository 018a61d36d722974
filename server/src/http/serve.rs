//! The HTTP/1.1 accept loop: each connection served by hyper's HTTP/1 connection directly,
//! with TCP_NODELAY, upgrades, and a graceful end.
//!
//! `axum::serve` does the same through hyper-util's protocol-sniffing builder. That builder's
//! connection state and the task around it cost more per connection than the HTTP/1 connection
//! alone, and an event-stream subscriber is one long-lived connection: at thousands of
//! dashboards that difference is most of their memory. Nothing here serves HTTP/2 (no client
//! of this plain-HTTP server negotiates it), so nothing is lost.
//!
//! On shutdown the loop stops accepting, asks every connection to end gracefully (finish the
//! request in flight, close when idle) and returns once the last one has closed.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Serves `router` on `listener` until `shutdown` resolves, then drains the connections.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Connections watch `stop_rx` go away; the loop waits for every `open_rx` clone to drop.
    let (stop_tx, stop_rx) = watch::channel(());
    let (open_tx, open_rx) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            tcp = accept(&listener) => tcp,
            () = &mut shutdown => break,
        };
        // Each connection gets a clone of the built router, a reference count; serving a
        // `Router` whose state is applied per connection would rebuild every route's map.
        tokio::spawn(connection(tcp, router.clone(), stop_tx.clone(), open_rx.clone()));
    }
    drop((stop_rx, listener, open_rx));
    open_tx.closed().await;
    Ok(())
}

/// The next connection; a failed accept (out of file descriptors) is logged and retried after
/// a pause, as `axum::serve` does, rather than ending the server.
async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((tcp, _)) => {
                // Answers written in more than one piece (an MCP call's event stream: headers,
                // the event, the end) would otherwise wait on Nagle's algorithm for an ACK.
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::warn!(error = %e, "could not set TCP_NODELAY");
                }
                return tcp;
            }
            Err(e) if is_per_connection(&e) => continue,
            Err(e) => {
                tracing::error!(error = %e, "accepting a connection failed; retrying in a second");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// An accept error that concerns one connection only (the peer gave up before we took it).
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// Serves one connection until it closes, ending it gracefully once `stop` has no receiver.
async fn connection(tcp: TcpStream, router: Router, stop: watch::Sender<()>, _open: watch::Receiver<()>) {
    let service = TowerToHyperService::new(router);
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service);
    let mut conn = pin!(conn.with_upgrades());
    let mut stopping = pin!(stop.closed());
    // `closed` must not be polled again once it has resolved.
    let mut asked_to_stop = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = &mut stopping, if !asked_to_stop => {
                asked_to_stop = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use axum::routing::get;
    use tokio::sync::{Notify, oneshot};

    struct Running {
        base: String,
        stop: oneshot::Sender<()>,
        server: tokio::task::JoinHandle<()>,
        /// `/held` has started answering.
        held: Arc<Notify>,
        /// Lets `/held` finish.
        release: Arc<Notify>,
    }

    /// A server with `/fast`, and `/held`, which answers only once released.
    async fn start() -> Running {
        let (held, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let (h, r) = (held.clone(), release.clone());
        let router = Router::new()
            .route(
                "/held",
                get(move || async move {
                    h.notify_one();
                    r.notified().await;
                    "done"
                }),
            )
            .route("/fast", get(|| async { "ok" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            serve(listener, router, async move { drop(stopped.await) }).await.unwrap();
        });
        Running { base, stop, server, held, release }
    }

    #[tokio::test]
    async fn a_request_in_flight_at_shutdown_is_answered_and_idle_connections_do_not_hold_it_up() {
        let s = start().await;
        let client = crate::http_client();
        // A keep-alive connection left idle in the client's pool.
        assert_eq!(client.get(format!("{}/fast", s.base)).send().await.unwrap().text().await.unwrap(), "ok");
        let in_flight = tokio::spawn({
            let url = format!("{}/held", s.base);
            async move { crate::http_client().get(url).send().await?.text().await }
        });
        s.held.notified().await;
        s.stop.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!s.server.is_finished(), "the server waits for the call in flight");
        s.release.notify_one();
        assert_eq!(in_flight.await.unwrap().unwrap(), "done", "the call in flight finishes");
        tokio::time::timeout(Duration::from_secs(10), s.server)
            .await
            .expect("the idle connection is closed, so the server stops")
            .unwrap();
        let refused = crate::http_client().get(format!("{}/fast", s.base)).send().await;
        assert!(refused.is_err(), "nothing accepts after shutdown: {refused:?}");
    }

    #[tokio::test]
    async fn one_connection_carries_many_requests() {
        let s = start().await;
        let client = crate::http_client_builder().pool_max_idle_per_host(1).build().unwrap();
        for _ in 0..20 {
            let res = client.get(format!("{}/fast", s.base)).send().await.unwrap();
            assert_eq!(res.version(), reqwest::Version::HTTP_11);
            assert_eq!(res.text().await.unwrap(), "ok");
        }
        s.stop.send(()).unwrap();
        s.server.await.unwrap();
    }
}
