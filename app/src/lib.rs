//! `app`: the Leptos console.
//!
//! Pages are server-rendered from the database and read fully without JavaScript; only what
//! must react is an `#[island]`. Server functions in [`api`] are thin calls into `gateway`
//! (feature `ssr`); feature `hydrate` is the browser side of the islands.
//!
//! - [`pages`]: one module per console view.
//! - [`components`]: shared widgets (layout, money, the connection indicator island).
//! - [`api`]: server functions by domain.

#![recursion_limit = "256"]

pub mod api;
pub mod components;
pub mod pages;

use leptos::prelude::*;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{SsrMode, path};

use crate::components::layout::Layout;
use crate::pages::{
    account::AccountPage,
    activity::ActivityPage,
    beliefs::BeliefsPage,
    connectors::ConnectorsPage,
    inbox::InboxPage,
    kits::{KitEditPage, KitsPage},
    login::LoginPage,
    not_found::NotFound,
    overview::OverviewPage,
    profiles::{ProfileDetailPage, ProfilesPage},
    proposals::{ProposalDetailPage, ProposalsPage},
    replay::KitReplayPage,
    runtime::RuntimePage,
    spend::SpendPage,
    users::UsersPage,
};

/// The Content-Security-Policy of a page, with its per-request script nonce: scripts only
/// from this origin or carrying the nonce (the hydration bootstrap), wasm compiled from this
/// origin, no plugins, no framing, forms posting only here.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws://127.0.0.1:*; \
         object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )
}

/// The HTML document around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(res)) =
        (leptos::nonce::use_nonce(), use_context::<leptos_axum::ResponseOptions>())
        && let Ok(v) = axum::http::HeaderValue::from_str(&content_security_policy(nonce.as_inner()))
    {
        res.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, v);
    }
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
                <HashedStylesheet options=options.clone() id="leptos" />
                <HydrationScripts options islands=true />
                <MetaTags />
            </head>
            <body class="bg-zinc-50 text-zinc-900 antialiased dark:bg-zinc-950 dark:text-zinc-100">
                <App />
            </body>
        </html>
    }
}

/// The console: a left navigation, a top bar and one page per route.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Title text="Naïve console" />
        <Router>
            <Layout>
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=InboxPage ssr=SsrMode::Async />
                    <Route path=path!("/proposals") view=ProposalsPage ssr=SsrMode::Async />
                    <Route path=path!("/proposals/:id") view=ProposalDetailPage ssr=SsrMode::Async />
                    <Route path=path!("/overview") view=OverviewPage ssr=SsrMode::Async />
                    <Route path=path!("/beliefs") view=BeliefsPage ssr=SsrMode::Async />
                    <Route path=path!("/kits") view=KitsPage ssr=SsrMode::Async />
                    <Route path=path!("/kits/:name") view=KitEditPage ssr=SsrMode::Async />
                    <Route path=path!("/kits/:name/replay") view=KitReplayPage ssr=SsrMode::Async />
                    <Route path=path!("/spend") view=SpendPage ssr=SsrMode::Async />
                    <Route path=path!("/activity") view=ActivityPage ssr=SsrMode::Async />
                    <Route path=path!("/profiles") view=ProfilesPage ssr=SsrMode::Async />
                    <Route path=path!("/profiles/:id") view=ProfileDetailPage ssr=SsrMode::Async />
                    <Route path=path!("/connectors") view=ConnectorsPage ssr=SsrMode::Async />
                    <Route path=path!("/runtime") view=RuntimePage ssr=SsrMode::Async />
                    <Route path=path!("/users") view=UsersPage ssr=SsrMode::Async />
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async />
                    <Route path=path!("/connect") view=pages::connect::ConnectPage ssr=SsrMode::Async />
                    <Route path=path!("/slack/link") view=pages::slack_link::SlackLinkPage ssr=SsrMode::Async />
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async />
                </Routes>
            </Layout>
        </Router>
    }
}
