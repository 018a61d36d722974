//! Configuration from flags and environment. Every setting has a flag and an environment
//! variable; flags win. Switches take `1`/`0`, `true`/`false`, `yes`/`no` or `on`/`off` from
//! the environment.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "server", version, about = "Naïve governance gateway and console")]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the console and gateway (the default).
    Serve,
    /// Drive the demo tenant's agents over /v1 against a running server, with keys minted
    /// with the company key (NAIVE_COMPANY_KEY), until Ctrl-C; then revoke those keys.
    DemoAgent {
        /// The server to call.
        #[arg(long, env = "NAIVE_BASE_URL", default_value = "http://127.0.0.1:3000")]
        base_url: String,
    },
    /// Check the ledger's invariants and every tenant's audit chain in the database at
    /// DATABASE_URL; prints one JSON line per tenant and exits 1 when anything is broken.
    Check {
        /// Also verify the log's archive at this URL (a directory or an object store URL):
        /// every range against its manifest, the ranges' order, and the ranges the database
        /// records as archived; each modified, missing or reordered object is named.
        #[arg(long)]
        archive: Option<String>,
    },
    /// Manage tenants in the database at DATABASE_URL.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Manage the vault of the database at DATABASE_URL.
    #[command(subcommand)]
    Vault(VaultCommand),
    /// Run the reference upstream for HTTP connectors: a small card processor
    /// (`POST /cards/charge`, bearer) and mail relay (`POST /mail/send`, signed body) that
    /// record what they do in their own SQLite file.
    Upstream {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// The SQLite file of what it did.
        #[arg(long, default_value = "data/upstream.db")]
        records: String,
        /// The credential the gateway must present (bearer) or sign with (HMAC).
        #[arg(long, env = "NAIVE_UPSTREAM_SECRET", hide_env_values = true)]
        secret: String,
        /// Answer every call this many milliseconds late, like a real provider.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Exit when standard input closes: a parent that pipes it in takes this process
        /// with it however it ends, even by SIGKILL.
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Run the reference team runtime: a board of tasks, runs and comments in its own SQLite
    /// file, speaking the control wire (signed requests, commands applied once by id).
    TeamRuntime {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// The SQLite file of the board.
        #[arg(long, default_value = "data/team-runtime.db")]
        board: String,
        /// The shared secret every request is signed with (at least 16 characters).
        #[arg(long, env = "NAIVE_RUNTIME_SECRET", hide_env_values = true)]
        secret: String,
        /// Tasks to create (T-1…T-n, every third blocked) when the board is empty.
        #[arg(long, default_value_t = 6)]
        seed_tasks: usize,
        /// Answer each batch of commands this many milliseconds after applying it, like a
        /// runtime on the far side of a network (tests kill the gateway in that window).
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Exit when standard input closes (see `upstream`).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Run a reference OpenTelemetry collector for traces and logs: it counts the spans
    /// exported to it by name (`GET /spans`) and keeps the log records (`GET /logs`), for
    /// tests and benchmarks.
    OtlpReceiver {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Reject each log record whose body is longer than this many bytes, as a collector
        /// with a record size limit does: the export is still answered 200, with OTLP's
        /// `partial_success` counting the rejected records.
        #[arg(long)]
        max_record_bytes: Option<usize>,
        /// Exit when standard input closes (see `upstream`).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Run a reference Splunk HTTP Event Collector: it takes batched HEC events on
    /// `/services/collector/event` with `Authorization: Splunk <token>`, answers as HEC does
    /// (codes included), and keeps the events for `GET /received`.
    HecReceiver {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// The token a request must carry.
        #[arg(long)]
        token: String,
        /// Exit when standard input closes (see `upstream`).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Run a reference for the Slack Web API methods the gateway calls (`auth.test`,
    /// `chat.postMessage`, `chat.update`, `views.open`), keeping what it got for `GET /calls`
    /// and `GET /messages`.
    Slack {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Answer the first N `chat.postMessage` calls 429 with `Retry-After: 1`.
        #[arg(long, default_value_t = 0)]
        rate_limit_first: u32,
        /// The signing secret its driver (`POST /interact`) signs interaction requests with,
        /// as Slack signs them with the app's.
        #[arg(long, default_value = crate::reference::slack::SIGNING_SECRET)]
        signing_secret: String,
        /// Exit when standard input closes (see `upstream`).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Run the reference webhook receiver: it verifies Standard Webhooks signatures (with
    /// the secret, once known) and lists what it received at `GET /received`.
    WebhookReceiver {
        /// Where to listen; port 0 picks a free one (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// The endpoint's signing secret (`whsec_…`); it can also be set later with
        /// `POST /secret`.
        #[arg(long, env = "NAIVE_WEBHOOK_SECRET", hide_env_values = true)]
        secret: Option<String>,
        /// Answer 500 to the first N deliveries of each message.
        #[arg(long, default_value_t = 0)]
        fail_first: u32,
        /// Answer 500 to every delivery.
        #[arg(long)]
        always_fail: bool,
        /// Answer each delivery this many milliseconds late (a slow receiver).
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Answer 413 to a body longer than this many bytes (a collector's size limit).
        #[arg(long)]
        max_body: Option<usize>,
        /// Exit when standard input closes (see `upstream`).
        #[arg(long)]
        exit_with_stdin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum VaultCommand {
    /// Re-wrap every tenant's data key under a new master key in one transaction, then put
    /// the new key in the key file (or print it once, when the key came from
    /// NAIVE_MASTER_KEY). Restart every instance with the new key afterwards.
    RotateMaster {
        /// The new key, 64 hex characters; generated when unset.
        #[arg(long, env = "NAIVE_NEW_MASTER_KEY", hide_env_values = true)]
        new_key: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant with the Default kit; prints its id and company key once.
    Create {
        /// The company's name.
        #[arg(long)]
        name: String,
        /// Platform credit to start with, in dollars, such as 250 or 99.50.
        #[arg(long, default_value = "0")]
        credit: String,
        /// Also create a console admin with this username; its password is printed once.
        #[arg(long)]
        admin: Option<String>,
    },
}

/// What a test or a benchmark may switch that a deployment never may; compiled in only with
/// the `test-switches` feature (see [`refuse_test_switches`]).
#[cfg(feature = "test-switches")]
#[derive(Clone, Debug, Default, Args)]
pub struct TestSwitches {
    /// Benchmarks only (`bench/http.sh` measures what the egress guard costs, side by side):
    /// outbound calls without the guard. Never set it where tenants are not trusted.
    #[arg(long, env = "NAIVE_EGRESS_UNGUARDED_FOR_BENCHMARKS", hide = true, global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub egress_unguarded_for_benchmarks: bool,

    /// Tests only: a file holding an RFC 3339 moment that budget periods, rate windows and
    /// approval expiries read as "now" (the system clock until the file holds one), so a
    /// test reaches a boundary without sleeping.
    #[arg(long, env = "NAIVE_TEST_CLOCK_FILE", hide = true, global = true)]
    pub test_clock_file: Option<std::path::PathBuf>,

    /// Tests only: milliseconds the archiver waits after storing each object of a range, so
    /// a crash test can kill the server between them.
    #[arg(long, env = "NAIVE_TEST_ARCHIVE_PAUSE_MS", hide = true, global = true, default_value_t = 0)]
    pub test_archive_pause_ms: u64,
}

impl Config {
    /// Where this server archives the log, if anywhere ([`Config::archive_url`]).
    pub fn archive_location(&self) -> Option<String> {
        match self.archive_url.as_deref() {
            Some("off") => None,
            Some(url) => Some(url.to_string()),
            None if self.database_url.starts_with("sqlite::memory:") => None,
            None => match self.database_url.strip_prefix("sqlite:") {
                Some(rest) => {
                    let path = rest.trim_start_matches("//");
                    Some(format!("{}.archive", path.split('?').next().unwrap_or(path)))
                }
                None => Some("naive-archive".to_string()),
            },
        }
    }
}

/// The environment variables of `TestSwitches` (a build with the `test-switches` feature).
pub const TEST_SWITCH_VARIABLES: [&str; 3] =
    ["NAIVE_TEST_CLOCK_FILE", "NAIVE_EGRESS_UNGUARDED_FOR_BENCHMARKS", "NAIVE_TEST_ARCHIVE_PAUSE_MS"];

/// In a build without the `test-switches` feature (a release), an error naming each test
/// switch the environment sets: such a build has none, and starting as if it were not set
/// would hide a mistake in a deployment's settings.
pub fn refuse_test_switches() -> Result<(), String> {
    if cfg!(feature = "test-switches") {
        return Ok(());
    }
    let set: Vec<&str> =
        TEST_SWITCH_VARIABLES.into_iter().filter(|v| std::env::var_os(v).is_some()).collect();
    if set.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} set, but this build has no test switches (they are for tests and benchmarks, built with the `test-switches` feature); unset {}",
        set.join(" and "),
        if set.len() == 1 { "it" } else { "them" }
    ))
}

#[derive(Clone, Debug, Args)]
pub struct Config {
    /// Database URL. Accepted: sqlite://PATH (created and migrated on first start), sqlite::memory:.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/naive.db", global = true)]
    pub database_url: String,

    /// Address to listen on. Port 0 picks a free port.
    #[arg(long, env = "NAIVE_BIND", default_value = "127.0.0.1:3000", global = true)]
    pub bind: SocketAddr,

    /// Do not seed the demo tenant into an empty database.
    #[arg(long, env = "NAIVE_NO_DEMO", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub no_demo: bool,

    /// Password for the demo `admin` user; generated and printed once if unset.
    #[arg(long, env = "NAIVE_ADMIN_PASSWORD", hide_env_values = true, global = true)]
    pub admin_password: Option<String>,

    /// Company key for the demo tenant (nv_<prefix>_<secret>); generated and printed once if unset.
    #[arg(long, env = "NAIVE_COMPANY_KEY", hide_env_values = true, global = true)]
    pub company_key: Option<String>,

    /// The operator's key, for the one read across tenants (`GET /v1/logs`). At least 24
    /// characters; unset means that route is closed.
    #[arg(long, env = "NAIVE_OPERATOR_KEY", hide_env_values = true, global = true)]
    pub operator_key: Option<String>,

    /// Also run the demo agent inside the server, driving the demo tenant's agents over /v1.
    #[arg(long, env = "NAIVE_DEMO_AGENT", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub demo_agent: bool,

    /// Start the reference upstream (`server upstream`) beside the server and run the demo
    /// tenant's `cards` and `email` on it over HTTP, with a credential from its vault.
    #[arg(long, env = "NAIVE_DEMO_UPSTREAM", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub demo_upstream: bool,

    /// How many times the outbox tries a delivery that gets no answer before it is a dead
    /// letter (shown on the console's Runtime page, where an admin can retry it).
    #[arg(long, env = "NAIVE_OUTBOX_MAX_ATTEMPTS", default_value_t = 10, global = true)]
    pub outbox_max_attempts: u32,

    /// The outbox's first retry delay in milliseconds; each next one doubles (with jitter).
    #[arg(long, env = "NAIVE_OUTBOX_BACKOFF_BASE_MS", default_value_t = 500, global = true)]
    pub outbox_backoff_base_ms: u64,

    /// The longest delay between two delivery attempts, in milliseconds.
    #[arg(long, env = "NAIVE_OUTBOX_BACKOFF_MAX_MS", default_value_t = 60_000, global = true)]
    pub outbox_backoff_max_ms: u64,

    /// The most commands a tenant's runtime queue holds: an agent's runtime write past it is
    /// refused `outbox_full` until earlier ones are delivered (or an admin purges them).
    #[arg(long, env = "NAIVE_OUTBOX_MAX_QUEUED", default_value_t = gateway::delivery::outbox::MAX_QUEUED, global = true)]
    pub outbox_max_queued: i64,

    /// How many days delivered and purged outbox rows are kept before they are deleted.
    #[arg(long, env = "NAIVE_OUTBOX_RETENTION_DAYS", default_value_t = 7, global = true)]
    pub outbox_retention_days: u32,

    /// How many days dead letters and rejected commands are kept, from when they were
    /// queued, for an admin to retry them (or purge them sooner).
    #[arg(long, env = "NAIVE_OUTBOX_DEAD_RETENTION_DAYS", default_value_t = 30, global = true)]
    pub outbox_dead_retention_days: u32,

    /// Where people reach the console (`https://naive.example.com`), for the links in
    /// notifications. Unset: this server's own address.
    #[arg(long, env = "NAIVE_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,

    /// How many calls a minute the demo agent makes.
    #[arg(long, env = "NAIVE_DEMO_AGENT_PER_MINUTE", default_value_t = 20, global = true)]
    pub demo_agent_per_minute: u32,

    /// Whether the session cookie is Secure (and named with the `__Host-` prefix): `auto` is
    /// secure unless the server listens on loopback (local development over plain HTTP);
    /// `always` is for a server behind a TLS proxy, whatever address it listens on.
    #[arg(long, env = "NAIVE_SECURE_COOKIES", value_enum, default_value = "auto", global = true)]
    pub secure_cookies: SecureCookies,

    /// How long a parked action waits for a human before it expires into a denial.
    #[arg(long, env = "NAIVE_APPROVAL_TTL_SECS", default_value_t = 900, global = true)]
    pub approval_ttl_secs: i64,

    /// How long a hold whose call is in flight stays leased to this instance without a
    /// renewal (renewed every second while the call runs). After a crash, its holds end this
    /// long after its last renewal, whichever instance sweeps.
    #[arg(long, env = "NAIVE_HOLD_LEASE_SECS", default_value_t = gateway::domain::ledger::leases::DEFAULT_LEASE_SECS, global = true)]
    pub hold_lease_secs: i64,

    /// Where closed ranges of the log are archived (docs/archive.md): a directory
    /// (`file:///srv/naive-archive` or a path, created if missing) or an object store URL;
    /// `off` archives nothing. Unset: `<database file>.archive` beside a SQLite file,
    /// `naive-archive` with PostgreSQL, nothing for an in-memory database.
    #[arg(long, env = "NAIVE_ARCHIVE_URL", global = true)]
    pub archive_url: Option<String>,

    /// How often this instance looks for closed ranges of the log to archive.
    #[arg(long, env = "NAIVE_ARCHIVE_EVERY_SECS", default_value_t = 60, global = true)]
    pub archive_every_secs: u64,

    /// How long a stopping server stays up answering `/readyz` with 503 (and serving
    /// everything else) before it stops accepting requests, so a load balancer takes it out
    /// first. 0 stops at once.
    #[arg(long, env = "NAIVE_DRAIN_SECS", default_value_t = 0, global = true)]
    pub drain_secs: u64,

    /// How log lines are written to stderr: `text` for people, `json` (one object per line)
    /// for log shippers.
    #[arg(long, env = "NAIVE_LOG_FORMAT", value_enum, default_value = "text", global = true)]
    pub log_format: LogFormat,

    /// Whether the gateway counts what it does for `/metrics` (`on`, `off`).
    #[arg(long, env = "NAIVE_METRICS", value_enum, default_value = "on", global = true)]
    pub metrics: Switch,

    /// Serve `/metrics` on this separate address (`127.0.0.1:9464`), without a key, and not
    /// on the main one. Unset, `/metrics` is on the main address and takes the operator key.
    #[arg(long, env = "NAIVE_METRICS_ADDR", global = true)]
    pub metrics_addr: Option<SocketAddr>,

    /// Delay every action the built-in sandbox connector carries out by this many
    /// milliseconds, to see calls in flight (timeouts, approvals that take a while).
    #[arg(long, env = "NAIVE_SANDBOX_LATENCY_MS", default_value_t = 0, global = true)]
    pub sandbox_latency_ms: u64,

    /// Host names `/mcp` answers besides loopback, comma-separated (`gateway.example.com`, or
    /// `name:port`): the names a proxy in front of the server forwards. Other `Host` values
    /// are refused, against DNS rebinding.
    #[arg(long, env = "NAIVE_MCP_ALLOWED_HOSTS", value_delimiter = ',', global = true)]
    pub mcp_allowed_hosts: Vec<String>,

    /// Addresses in the operator's own network that outbound calls (connectors, connected
    /// apps, the team runtime, webhooks) may reach anyway, comma-separated: CIDRs
    /// (`10.20.0.0/16`, every port) and `host:port`s (`127.0.0.1:4010`, `upstream.internal:8443`).
    /// None by default: loopback, private, link-local and the like are refused.
    #[arg(long, env = "NAIVE_EGRESS_ALLOW", value_delimiter = ',', global = true)]
    pub egress_allow: Vec<String>,

    /// How many seconds an OAuth access token for `/mcp` works (1 to 3600); clients refresh it.
    #[arg(long, env = "NAIVE_OAUTH_ACCESS_TOKEN_SECS", default_value_t = 3600, global = true)]
    pub oauth_access_token_secs: u32,

    /// A PEM file of certificate authorities that outbound https calls trust besides the
    /// system's: the operator's own CA, for services inside its network it allowed with
    /// `--egress-allow` (an OpenID provider, an MCP client's metadata document).
    #[arg(long, env = "NAIVE_EGRESS_CA", global = true)]
    pub egress_ca: Option<std::path::PathBuf>,

    /// Slack's Web API, where tenants' Slack apps post approvals (docs/slack.md); the
    /// reference program's address in tests and `make run`.
    #[arg(long, env = "NAIVE_SLACK_API_URL", default_value = gateway::delivery::slack::DEFAULT_API_URL, global = true)]
    pub slack_api_url: String,

    /// Settings for tests and benchmarks, in a build with the `test-switches` feature only.
    #[cfg(feature = "test-switches")]
    #[command(flatten)]
    pub switches: TestSwitches,

    /// Browser origins allowed to call `/mcp`, comma-separated (`https://app.example.com:443`).
    /// None by default: a request with any `Origin` is refused; agents send none.
    #[arg(long, env = "NAIVE_MCP_ALLOWED_ORIGINS", value_delimiter = ',', global = true)]
    pub mcp_allowed_origins: Vec<String>,

    /// The vault's master key, 64 hex characters (`openssl rand -hex 32`). Unset, the key
    /// file holds it (created on the first start).
    #[arg(long, env = "NAIVE_MASTER_KEY", hide_env_values = true, global = true)]
    pub master_key: Option<String>,

    /// The file that holds the vault's master key when NAIVE_MASTER_KEY is unset; created
    /// with mode 0600 on the first start. Default: beside a SQLite database
    /// (`data/naive.db.master-key`), else `naive.master-key` in the working directory.
    #[arg(long, env = "NAIVE_MASTER_KEY_FILE", global = true)]
    pub master_key_file: Option<std::path::PathBuf>,

    /// Where the built site (pkg/ with wasm, js and css) lives.
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site", global = true)]
    pub site_root: String,
}

/// When the session cookie is marked Secure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SecureCookies {
    /// Secure unless the server listens on a loopback address.
    Auto,
    Always,
    Never,
}

impl SecureCookies {
    pub fn applies(self, addr: &SocketAddr) -> bool {
        match self {
            SecureCookies::Auto => !addr.ip().is_loopback(),
            SecureCookies::Always => true,
            SecureCookies::Never => false,
        }
    }
}

/// A feature turned on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
