//! The real server binary as its own process: started on port 0 on a given database,
//! killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{ADMIN_PASSWORD, COMPANY_KEY};

/// A running server process on `db`, and its base URL.
pub struct Server {
    pub child: Child,
    pub base: String,
}

/// How long the processes' holds in flight stay leased without a renewal: after a kill, the
/// next process ends them this long after the last renewal.
pub const LEASE_SECS: u64 = 2;

pub fn start(db: &str, sandbox_latency_ms: u64) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["--database-url", db, "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .env("NAIVE_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("NAIVE_COMPANY_KEY", COMPANY_KEY)
        .env("NAIVE_SANDBOX_LATENCY_MS", sandbox_latency_ms.to_string())
        .env("NAIVE_HOLD_LEASE_SECS", LEASE_SECS.to_string())
        .env_remove("NAIVE_DEMO_AGENT")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the server exited before listening");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    Server { child, base }
}

impl Server {
    /// SIGKILL: nothing in flight gets to finish.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// A test that fails part-way leaves no server running behind it.
impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until the server at `base` answers its health check.
pub async fn wait_until_listening(base: &str) {
    for _ in 0..200 {
        if reqwest::get(format!("{base}/healthz")).await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{base} never answered");
}
