//! The `server` binary: parse the configuration, start the application, print the demo
//! credentials once, and shut down gracefully on SIGINT or SIGTERM.

use std::process::ExitCode;

/// glibc malloc was an eighth of the writer thread's time; mimalloc lifts throughput by a
/// sixth on the same load (`make bench-gateway`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use server::config::{Cli, Command, TenantCommand, VaultCommand};
use server::startup::Application;

#[tokio::main]
async fn main() -> ExitCode {
    // Every HTTP client in the process (ours, the MCP SDK's, the OTLP exporter's) is reqwest on
    // rustls, whose provider the build leaves to us.
    gateway::delivery::egress::install_tls_provider();
    let cli = Cli::parse();
    let telemetry = server::telemetry::init(cli.config.log_format);
    let code = run(cli).await;
    telemetry.shutdown();
    code
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(cli.config).await,
        Command::Tenant(TenantCommand::Create { name, credit, admin }) => {
            create_tenant(&cli.config, &name, &credit, admin.as_deref()).await
        }
        Command::DemoAgent { base_url } => demo_agent(&cli.config, &base_url).await,
        Command::Check { archive } => check(&cli.config, archive.as_deref()).await,
        Command::Upstream { listen, records, secret, latency_ms, exit_with_stdin } => {
            let serving = server::reference::upstream::serve(listen, &records, &secret, latency_ms);
            reference(exit_with_stdin, serving).await
        }
        Command::TeamRuntime { listen, board, secret, seed_tasks, latency_ms, exit_with_stdin } => {
            let serving =
                server::reference::team_runtime::serve(listen, &board, &secret, seed_tasks, latency_ms);
            reference(exit_with_stdin, serving).await
        }
        Command::OtlpReceiver { listen, max_record_bytes, exit_with_stdin } => {
            reference(exit_with_stdin, server::reference::otlp_receiver::serve(listen, max_record_bytes))
                .await
        }
        Command::HecReceiver { listen, token, exit_with_stdin } => {
            reference(exit_with_stdin, server::reference::hec_receiver::serve(listen, token)).await
        }
        Command::Slack { listen, rate_limit_first, signing_secret, exit_with_stdin } => {
            let page = server::reference::slack_page::routes();
            let serving = server::reference::slack::serve(listen, rate_limit_first, signing_secret, page);
            reference(exit_with_stdin, serving).await
        }
        Command::WebhookReceiver {
            listen,
            secret,
            fail_first,
            always_fail,
            latency_ms,
            max_body,
            exit_with_stdin,
        } => {
            let how = server::reference::webhook_receiver::Behaviour {
                fail_first,
                always_fail,
                latency_ms,
                max_body,
            };
            reference(exit_with_stdin, server::reference::webhook_receiver::serve(listen, secret, how)).await
        }
        Command::Vault(VaultCommand::RotateMaster { new_key }) => {
            match server::master_key::rotate(&cli.config, new_key.as_deref()).await {
                Ok(said) => {
                    println!("{said}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Runs a reference program until it ends (or, with `exit_with_stdin`, until the standard
/// input its parent holds closes).
async fn reference<E: std::fmt::Display>(
    exit_with_stdin: bool,
    serving: impl std::future::Future<Output = Result<(), E>>,
) -> ExitCode {
    if exit_with_stdin {
        server::reference::upstream::exit_when_stdin_closes();
    }
    match serving.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `server check`: the ledger's invariants (every account's entries sum to its running totals,
/// no hold ends twice) and every tenant's audit chain, on the
/// database at DATABASE_URL (a running server's too), and with `--archive URL` the log's
/// archive there. Exits 1 when anything is broken.
async fn check(config: &server::config::Config, archive: Option<&str>) -> ExitCode {
    let result = async {
        let gw = gateway::Gateway::open(&config.database_url).await?;
        let archive = archive.map(gateway::ops::archive::open_store).transpose()?;
        let mut broken = false;
        for t in gw.tenants().await? {
            let ledger = gw.check_ledger(&t.id).await?;
            let chain = gw.verify_log(&t.id).await?;
            broken |= !ledger.violations.is_empty() || !chain.ok;
            let mut line =
                serde_json::json!({ "tenant": t.id, "ledger_violations": ledger.violations, "chain": chain });
            if let Some(a) = &archive {
                let report = gw.check_tenant_archive(a.as_ref(), &t.id).await?;
                broken |= !report.ok;
                line["archive"] = serde_json::json!(report);
            }
            println!("{line}");
        }
        gw.store().close().await;
        Ok::<_, gateway::Error>(broken)
    };
    match result.await {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `server tenant create --name NAME`: an operator's way in without the demo.
async fn create_tenant(
    config: &server::config::Config,
    name: &str,
    credit: &str,
    admin: Option<&str>,
) -> ExitCode {
    let Ok(credit) = credit.parse::<policy::Money>() else {
        eprintln!("error: --credit is an amount of dollars such as 250 or 99.50 (at most four decimals)");
        return ExitCode::FAILURE;
    };
    let result = async {
        let gw = gateway::Gateway::open(&config.database_url).await?;
        let (tenant, key) = gw.create_tenant(name, credit, None).await?;
        let admin = match admin {
            Some(username) => {
                let password = gateway::secrets::random_password();
                gw.create_user(&tenant.id, username, &password, &[gateway::Role::Admin]).await?;
                Some((username.to_string(), password))
            }
            None => None,
        };
        Ok::<_, gateway::Error>((tenant, key, admin))
    }
    .await;
    match result {
        Ok((tenant, key, admin)) => {
            println!("Created tenant \"{}\" ({})", tenant.name, tenant.id);
            println!("  company key: {}   (shown once; store it now)", key.token);
            if let Some((username, password)) = admin {
                println!("  console admin: {username}  password: {password}   (shown once)");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `server demo-agent`: the demo tenant's agents at work against a running server.
async fn demo_agent(config: &server::config::Config, base_url: &str) -> ExitCode {
    use server::reference::demo_agent::{drive, keys_over_http, revoke_over_http};
    let Some(company_key) = &config.company_key else {
        eprintln!(
            "error: the demo agent needs the demo tenant's company key: pass --company-key or set NAIVE_COMPANY_KEY"
        );
        return ExitCode::FAILURE;
    };
    let base = base_url.trim_end_matches('/');
    let minted = match keys_over_http(base, company_key).await {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("Demo agent driving {} agents at {base}; Ctrl-C stops it and revokes their keys.", minted.len());
    let agents: Vec<_> = minted.iter().map(|(a, _)| a.clone()).collect();
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    drive(base, &agents, config.demo_agent_per_minute, stop).await;
    revoke_over_http(base, company_key, &minted).await;
    ExitCode::SUCCESS
}

async fn serve(config: server::config::Config) -> ExitCode {
    let stop = shutdown_signal();
    let app = match Application::build(&config).await {
        Ok(app) => app,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(demo) = &app.demo {
        // Printed to the terminal once, never logged.
        println!("Seeded demo tenant \"{}\" ({})", demo.tenant_name, demo.tenant);
        match &demo.generated_admin_password {
            Some(pw) => println!(
                "  console user: {}  password: {pw}   (shown once; set NAIVE_ADMIN_PASSWORD to choose it)",
                demo.admin_username
            ),
            None => println!("  console user: {}  password: from NAIVE_ADMIN_PASSWORD", demo.admin_username),
        }
        println!("  also: approver, reviewer, finance (one role each, same password)");
        match &demo.generated_company_key {
            Some(k) => println!("  company key: {k}   (shown once; set NAIVE_COMPANY_KEY to choose it)"),
            None => println!("  company key: from NAIVE_COMPANY_KEY"),
        }
    }
    let addr = app.local_addr();
    println!("Naïve console listening on http://{addr}");
    tracing::info!(%addr, database = %gateway::store::redact(&config.database_url), "serving");
    match app.run_until(stop).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: server failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: a signal that arrives while the server is
/// still starting waits for it instead of killing it with the default action, ungracefully.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::interrupt()).ok(), signal(SignalKind::terminate()).ok())
    };
    async move {
        #[cfg(unix)]
        tokio::select! {
            () = received(interrupt) => {},
            () = received(terminate) => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutdown signal received; finishing in-flight requests");
    }
}

/// The first delivery of `signal`; never, if its handler could not be installed.
#[cfg(unix)]
async fn received(signal: Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(mut s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}
