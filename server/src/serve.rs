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
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = &mut stopping => conn.as_mut().graceful_shutdown(),
        }
    }
}
