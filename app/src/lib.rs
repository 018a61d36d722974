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
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{SsrMode, path};

use crate::components::layout::Layout;
use crate::pages::{
    activity::ActivityPage, inbox::InboxPage, kits::KitsPage, login::LoginPage, not_found::NotFound,
    profiles::ProfilesPage, proposals::ProposalsPage, spend::SpendPage,
};

/// The HTML document around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
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
        <Stylesheet id="leptos" href="/pkg/naive.css" />
        <Title text="Naïve console" />
        <Router>
            <Layout>
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=InboxPage ssr=SsrMode::Async />
                    <Route path=path!("/proposals") view=ProposalsPage ssr=SsrMode::Async />
                    <Route path=path!("/kits") view=KitsPage ssr=SsrMode::Async />
                    <Route path=path!("/spend") view=SpendPage ssr=SsrMode::Async />
                    <Route path=path!("/activity") view=ActivityPage ssr=SsrMode::Async />
                    <Route path=path!("/profiles") view=ProfilesPage ssr=SsrMode::Async />
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async />
                </Routes>
            </Layout>
        </Router>
    }
}
