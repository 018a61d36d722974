//! What starting the application can fail with, for `main` to print and the tests to match.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Database(#[from] gateway::Error),
    #[error(
        "cannot listen on {addr}: {source} (is another server running? pick another address with --bind or NAIVE_BIND)"
    )]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Config(String),
}
