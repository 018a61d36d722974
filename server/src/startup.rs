//! Builds the whole application from a [`Config`]: `main` and the tests start the same thing.
//!
//! [`Application::build`] opens and migrates the database, seeds the demo tenant when asked,
//! binds the listener (port 0 picks a free one) and assembles the router: `/healthz`,
//! `/readyz`, `/v1`,
//! `/mcp`, the console's pages and server functions, and static files. [`Application::run_until`] serves
//! until the shutdown future resolves, then drains in-flight requests.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;
use gateway::Gateway;
use gateway::ops::demo::{DemoCredentials, DemoOptions};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::error::StartError;
use crate::http::limits::{MAX_BODY_BYTES, too_large_as_problem};
use crate::state::{AppState, Shared};

pub struct Application {
    listener: TcpListener,
    router: Router,
    gateway: Gateway,
    /// Expires overdue approvals and orphaned holds; stops when the application does.
    workers: Workers,
    /// Delivers the outbox; stops when the application does.
    stop_tx: tokio::sync::watch::Sender<bool>,
    /// What `/readyz` reads; set draining when the server starts stopping.
    readiness: std::sync::Arc<crate::state::Readiness>,
    /// How long to answer `/readyz` with 503 before stopping (`--drain-secs`).
    drain: std::time::Duration,
    /// The in-process demo agent, if started; it finishes (revoking its keys) before the
    /// database closes.
    demo_agent: Option<tokio::task::JoinHandle<()>>,
    /// Set when this start seeded the demo tenant.
    pub demo: Option<DemoCredentials>,
    /// The demo's reference upstream, a child process stopped with the application.
    demo_upstream: Option<crate::reference::demo_upstream::DemoUpstream>,
    /// The separate `/metrics` listener (`--metrics-addr`), if any.
    metrics_listener: Option<TcpListener>,
}

impl Application {
    pub async fn build(config: &Config) -> Result<Application, StartError> {
        let operator_key_hash = match &config.operator_key {
            Some(k) if k.trim().len() < crate::http::auth::MIN_OPERATOR_KEY_LEN => {
                return Err(StartError::Config(format!(
                    "the operator key (--operator-key or NAIVE_OPERATOR_KEY) must be at least {} characters",
                    crate::http::auth::MIN_OPERATOR_KEY_LEN
                )));
            }
            Some(k) => Some(gateway::secrets::hash_token(k.trim()).into()),
            None => None,
        };
        // Bound first, so notifications can link to the address it got; nothing is served
        // before `run_until`.
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| StartError::Bind { addr: config.bind, source })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind { addr: config.bind, source })?;
        let (gateway_config, demo_slack) = with_demo_slack(config, gateway_config(config, addr)?).await?;
        let metrics_listener = match config.metrics_addr {
            Some(at) => {
                Some(TcpListener::bind(at).await.map_err(|source| StartError::Bind { addr: at, source })?)
            }
            None => None,
        };
        let gateway = crate::master_key::open_gateway(config, gateway_config).await?;
        let demo = if config.no_demo {
            None
        } else {
            let opts = DemoOptions {
                admin_password: config.admin_password.clone(),
                company_key: config.company_key.clone(),
            };
            gateway.seed_demo_if_empty(&opts).await?
        };
        // After the demo's seed calls, which need not wait.
        gateway.sandbox().set_latency_ms(config.sandbox_latency_ms);
        let demo_upstream = if config.demo_upstream {
            let records = crate::reference::demo_upstream::records_path(&config.database_url);
            crate::reference::demo_upstream::start(&gateway, records, demo_slack).await?
        } else {
            None
        };
        let leptos_options = LeptosOptions::builder()
            .output_name(std::env::var("LEPTOS_OUTPUT_NAME").unwrap_or_else(|_| "naive".into()))
            .site_root(config.site_root.clone())
            .site_addr(addr)
            .hash_files(crate::http::assets::hashed())
            .build();
        let (stop_tx, stopping) = tokio::sync::watch::channel(false);
        let demo_agent = if config.demo_agent {
            start_demo_agent(&gateway, addr, config.demo_agent_per_minute, stopping.clone()).await?
        } else {
            None
        };
        let mut allowed_origins = config.mcp_allowed_origins.clone();
        allowed_origins.extend(crate::mcp::own_origins(&addr, gateway.config().public_url.as_str()));
        let mcp =
            crate::mcp::McpSettings { allowed_hosts: config.mcp_allowed_hosts.clone(), allowed_origins };
        let readiness = std::sync::Arc::new(crate::state::Readiness::default());
        let subscribers = crate::v1::events::subscriber_limit();
        let open = subscribers.clone();
        gateway.metrics().sample(
            |f| &f.sse_subscribers,
            move || Some((crate::v1::events::MAX_SUBSCRIBERS - open.available_permits()) as i64),
        );
        let router = router(
            AppState::new(Shared {
                leptos_options,
                gateway: gateway.clone(),
                subscribers,
                stopping,
                operator_key_hash,
                cookies: app::api::session::CookieSettings { secure: config.secure_cookies.applies(&addr) },
                readiness: readiness.clone(),
            }),
            &mcp,
            metrics_listener.is_none(),
        );
        let workers = Workers::start(&gateway, config, &readiness).await?;
        Ok(Application {
            listener,
            router,
            gateway,
            workers,
            stop_tx,
            readiness,
            drain: std::time::Duration::from_secs(config.drain_secs),
            demo_agent,
            demo,
            demo_upstream,
            metrics_listener,
        })
    }

    /// The application's gateway, for operator commands and test setup.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// The separate `/metrics` listener's address (`--metrics-addr`), if there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().map(|l| l.local_addr().expect("a bound listener has an address"))
    }

    /// Serves until `shutdown` resolves, then finishes in-flight requests and closes the pool.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        let (stop_tx, readiness, drain) = (self.stop_tx, self.readiness, self.drain);
        let stop_rx = stop_tx.subscribe();
        let shutdown = async move {
            shutdown.await;
            // Not ready first, while still serving, so a load balancer takes this instance out
            // before it stops accepting requests.
            readiness.draining.store(true, std::sync::atomic::Ordering::SeqCst);
            if !drain.is_zero() {
                tracing::info!(
                    secs = drain.as_secs(),
                    "draining: /readyz answers 503 until the server stops"
                );
                tokio::time::sleep(drain).await;
            }
            // Event streams never end on their own; tell them to, so draining can finish.
            let _ = stop_tx.send(true);
        };
        if let Some(listener) = self.metrics_listener {
            let (router, mut stopping) = (crate::http::metrics::separate(self.gateway.clone()), stop_rx);
            tokio::spawn(async move {
                let stopped = async move {
                    let _ = stopping.wait_for(|s| *s).await;
                };
                if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(stopped).await {
                    tracing::error!(error = %e, "the metrics listener stopped");
                }
            });
        }
        crate::http::serve::serve(self.listener, self.router, shutdown).await?;
        if let Some(agent) = self.demo_agent {
            let _ = agent.await;
        }
        // A sweep in progress commits before the pool closes under it.
        self.workers.stop().await;
        drop(self.demo_upstream);
        self.gateway.store().close().await;
        Ok(())
    }
}

/// The gateway's settings from the server's, for a server listening on `addr`.
fn gateway_config(config: &Config, addr: SocketAddr) -> Result<gateway::GatewayConfig, StartError> {
    let gateway_config = gateway::GatewayConfig {
        public_url: config.public_url.clone().unwrap_or_else(|| format!("http://{addr}")),
        approval_ttl_secs: config.approval_ttl_secs.max(1),
        hold_lease_secs: config.hold_lease_secs.max(1),
        outbox: gateway::delivery::outbox::OutboxConfig {
            max_attempts: config.outbox_max_attempts.max(1),
            backoff_base_ms: config.outbox_backoff_base_ms.max(1),
            backoff_max_ms: config.outbox_backoff_max_ms.max(1),
            retention_secs: i64::from(config.outbox_retention_days) * 86_400,
            dead_retention_secs: i64::from(config.outbox_dead_retention_days) * 86_400,
            max_queued: config.outbox_max_queued.max(1),
        },
        egress_allow: gateway::delivery::egress::Allowance::parse(&config.egress_allow)
            .map_err(StartError::Config)?,
        oauth_access_secs: i64::from(config.oauth_access_token_secs.clamp(1, 3600)),
        slack_api_url: config.slack_api_url.clone(),
        egress_roots: egress_roots(config.egress_ca.as_deref()).map_err(StartError::Config)?,
        metrics: config.metrics == crate::config::Switch::On,
        archive_url: config.archive_location(),
        ..Default::default()
    };
    crate::config::refuse_test_switches().map_err(StartError::Config)?;
    #[cfg(feature = "test-switches")]
    let gateway_config = switched(gateway_config, &config.switches);
    Ok(gateway_config)
}

/// The server's background work: the sweeper, the delivery worker, the log streams' worker and
/// the archiver.
struct Workers {
    sweeper: gateway::ops::approvals::SweeperHandle,
    delivery: gateway::delivery::outbox::delivery::DeliveryHandle,
    streams: gateway::delivery::outbox::delivery::DeliveryHandle,
    archiver: Option<gateway::ops::archive::ArchiverHandle>,
}

impl Workers {
    /// Ends what lapsed while no instance was sweeping, then starts each worker, watched by
    /// readiness. A crashed run's holds whose leases have not lapsed yet end on a later tick;
    /// another live instance's calls in flight hold live leases and are left alone.
    async fn start(
        gateway: &Gateway,
        config: &Config,
        readiness: &crate::state::Readiness,
    ) -> Result<Workers, StartError> {
        let recovered = gateway.sweep().await?;
        if recovered.holds_expired > 0 || recovered.approvals_expired > 0 {
            tracing::info!(?recovered, "expired what lapsed before this start");
        }
        let sweeper = gateway.start_sweeper();
        let delivery = gateway.start_delivery();
        let streams = gateway.start_streams();
        let archiver = start_archiver(gateway, config)?;
        let mut tasks = readiness.tasks.lock().expect("readiness lock");
        tasks.extend(sweeper.watch().map(|t| ("sweeper", t)));
        tasks.extend(delivery.watch().map(|t| ("delivery", t)));
        tasks.extend(streams.watch().map(|t| ("streams", t)));
        tasks.extend(archiver.as_ref().and_then(|a| a.watch()).map(|t| ("archiver", t)));
        drop(tasks);
        Ok(Workers { sweeper, delivery, streams, archiver })
    }

    /// Stops each, letting what it is in the middle of finish.
    async fn stop(self) {
        self.sweeper.stop().await;
        self.delivery.stop().await;
        self.streams.stop().await;
        if let Some(archiver) = self.archiver {
            archiver.stop().await;
        }
    }
}

/// The archiver on the archive the configuration names, if it names one.
fn start_archiver(
    gateway: &Gateway,
    config: &Config,
) -> Result<Option<gateway::ops::archive::ArchiverHandle>, StartError> {
    let Some(url) = config.archive_location() else { return Ok(None) };
    let archive = gateway::ops::archive::open_store(&url).map_err(|e| StartError::Config(e.to_string()))?;
    let every = std::time::Duration::from_secs(config.archive_every_secs.max(1));
    Ok(Some(gateway.start_archiver(archive, every)))
}

/// The certificate authorities in `--egress-ca`, if given.
fn egress_roots(path: Option<&std::path::Path>) -> Result<Vec<reqwest::Certificate>, String> {
    let Some(path) = path else { return Ok(Vec::new()) };
    let pem = std::fs::read(path).map_err(|e| format!("--egress-ca {}: {e}", path.display()))?;
    reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("--egress-ca {}: not a PEM bundle of certificates ({e})", path.display()))
}

/// The gateway's settings with the test switches set (a build with `test-switches`).
#[cfg(feature = "test-switches")]
fn switched(mut g: gateway::GatewayConfig, s: &crate::config::TestSwitches) -> gateway::GatewayConfig {
    if let Some(f) = &s.test_clock_file {
        tracing::warn!(file = %f.display(), "the clock is read from a file (a test's setting)");
        g.clock = gateway::domain::periods::Clock::File(f.clone());
    }
    if s.egress_unguarded_for_benchmarks {
        tracing::warn!(
            "the egress guard is off (a benchmark's setting): tenants' URLs reach this machine's network"
        );
        g.egress_unguarded_for_benchmarks = true;
    }
    if s.test_archive_pause_ms > 0 {
        tracing::warn!(
            ms = s.test_archive_pause_ms,
            "the archiver pauses after each object (a crash test's setting)"
        );
        g.archive_pause_ms = s.test_archive_pause_ms;
    }
    g
}

/// Mints the demo agents' keys and starts driving them against this server's own address.
async fn start_demo_agent(
    gateway: &Gateway,
    addr: SocketAddr,
    per_minute: u32,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<Option<tokio::task::JoinHandle<()>>, StartError> {
    let Some((tenant, agents)) = crate::reference::demo_agent::keys_in_process(gateway).await? else {
        tracing::warn!("--demo-agent: there is no demo tenant in this database, so no demo agent runs");
        return Ok(None);
    };
    let gw = gateway.clone();
    Ok(Some(tokio::spawn(async move {
        crate::reference::demo_agent::drive(&format!("http://{addr}"), &agents, per_minute, stopping).await;
        crate::reference::demo_agent::revoke_in_process(&gw, &tenant, &agents).await;
    })))
}

/// The console's icon where a browser looks for it by itself: on a page without a
/// `<link rel="icon">` (a JSON answer opened in a tab) it asks for `/favicon.ico`, which
/// would otherwise be a 404 in the log and in the browser's console.
async fn favicon() -> axum::response::Response {
    use axum::response::IntoResponse;
    const ICON: &[u8] = include_bytes!("../../public/favicon.svg");
    (
        [
            (axum::http::header::CONTENT_TYPE, "image/svg+xml"),
            (axum::http::header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        ICON,
    )
        .into_response()
}

/// The main listener's router; `/metrics` is on it unless it has its own listener.
/// The demo's Slack workspace (`--demo-upstream` without a real Slack named) starts before the
/// gateway, whose Slack Web API it is.
async fn with_demo_slack(
    config: &Config,
    mut gateway_config: gateway::GatewayConfig,
) -> Result<(gateway::GatewayConfig, Option<crate::reference::demo_upstream::DemoSlack>), StartError> {
    let demo_slack = crate::reference::demo_upstream::start_slack(config).await?;
    if let Some(s) = &demo_slack {
        gateway_config.slack_api_url = format!("{}/api", s.base);
    }
    Ok((gateway_config, demo_slack))
}

fn router(state: AppState, mcp: &crate::mcp::McpSettings, metrics_here: bool) -> Router {
    let routes = generate_route_list(app::App);
    let gw = state.gateway.clone();
    let cookies = state.cookies;
    let base = if metrics_here {
        Router::new().route("/metrics", get(crate::http::metrics::with_operator_key))
    } else {
        Router::new()
    };
    base.route("/healthz", get(crate::http::health::healthz))
        .route("/readyz", get(crate::http::health::readyz))
        .route("/favicon.ico", get(favicon))
        .route("/login", axum::routing::post(crate::http::console_auth::login))
        .route("/logout", axum::routing::post(crate::http::console_auth::logout))
        .route("/login/sso", get(crate::http::sso::by_email))
        .route("/login/sso/callback", get(crate::http::sso::callback))
        .route("/login/sso/{tenant_id}", get(crate::http::sso::by_tenant))
        .merge(crate::scim::routes(&state))
        .merge(crate::http::oauth::routes())
        .merge(crate::http::slack::routes())
        .route("/spend/export.csv", get(crate::http::console::export_ledger_csv))
        .route("/approvals/export.csv", get(crate::http::console::export_approvals_csv))
        .route("/console/events", get(crate::http::console::events))
        // Authentication wraps the Idempotency-Key claim: nothing is claimed or replayed for
        // a request whose credential did not resolve.
        .merge(crate::v1::v1(&state).route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::http::auth::authenticate,
        )))
        .nest_service("/mcp", crate::mcp::endpoint(&state, mcp))
        .nest_service("/pkg", crate::http::assets::pkg(&state.leptos_options))
        .leptos_routes_with_context(
            &state,
            routes,
            move || {
                provide_context(gw.clone());
                provide_context(cookies);
            },
            {
                let options = state.leptos_options.clone();
                move || app::shell(options.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(
            {
                let gw = state.gateway.clone();
                move || {
                    provide_context(gw.clone());
                    provide_context(cookies);
                }
            },
            app::shell,
        ))
        // Bodies are small, for every route (the console's server functions included):
        // anything bigger is refused before it is read.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(axum::middleware::map_response(too_large_as_problem))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::http::console_auth::require_sign_in,
        ))
        .layer(axum::middleware::from_fn(crate::http::console_auth::same_origin_writes))
        .layer(crate::http::assets::compression())
        .layer(axum::middleware::from_fn(crate::telemetry::traced_request))
        .with_state(state)
}
