//! What every handler can reach: the application's shared state. A leaf: it imports nothing
//! of this crate, so every layer above (the HTTP machinery, `/v1`, MCP, the console's routes,
//! startup) can depend on it without a cycle. Handlers that need only the gateway take
//! `State<Gateway>`, which [`FromRef`] cuts out of [`AppState`].

use axum::extract::FromRef;
use gateway::Gateway;
use leptos::prelude::LeptosOptions;

/// What every handler can reach. Cloned for every request (axum hands each middleware layer
/// its own copy), so it is one reference count.
#[derive(Clone, Debug)]
pub struct AppState(std::sync::Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> AppState {
        AppState(std::sync::Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Debug)]
pub struct Shared {
    pub leptos_options: LeptosOptions,
    pub gateway: Gateway,
    /// Bounds concurrent `/v1/events` subscribers.
    pub subscribers: std::sync::Arc<tokio::sync::Semaphore>,
    /// Turns true when the server starts shutting down, so long-lived streams end.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// SHA-256 of the operator's key, when one is configured.
    pub operator_key_hash: Option<std::sync::Arc<str>>,
    /// Failed console sign-ins by username.
    /// How the session cookie is named and marked (`--secure-cookies`).
    pub cookies: app::api::session::CookieSettings,
    /// What `/readyz` reads besides the database.
    pub readiness: std::sync::Arc<Readiness>,
}

/// Whether this instance should get traffic: not while it drains, nor once a background
/// task it needs has ended.
#[derive(Debug, Default)]
pub struct Readiness {
    /// Set when the server starts stopping; `/readyz` answers 503 from then on.
    pub draining: std::sync::atomic::AtomicBool,
    /// The background tasks this instance needs, by name (the sweeper, the delivery worker).
    pub tasks: std::sync::Mutex<Vec<(&'static str, tokio::task::AbortHandle)>>,
    /// The last probe of the database, the schema and the writer, and when it ran
    /// (`crate::http::health`): one at a time, and at most one a second however often asked.
    pub last_probe: tokio::sync::Mutex<Option<(std::time::Instant, [String; 3])>>,
}

impl Readiness {
    /// The needed tasks that are no longer running.
    pub fn stopped_tasks(&self) -> Vec<&'static str> {
        let tasks = self.tasks.lock().expect("readiness lock");
        tasks.iter().filter(|(_, t)| t.is_finished()).map(|(n, _)| *n).collect()
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> LeptosOptions {
        s.leptos_options.clone()
    }
}

impl FromRef<AppState> for Gateway {
    fn from_ref(s: &AppState) -> Gateway {
        s.gateway.clone()
    }
}
