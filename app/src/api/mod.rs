//! Server functions, one module per domain. Each is a thin call into `gateway`; the types
//! here are what crosses to the page, so the browser build never needs `gateway`.

pub mod account;
pub mod activity;
pub mod archive;
pub mod beliefs;
pub mod connectors;
pub mod forms;
pub mod inbox;
pub mod kits;
pub mod oauth;
pub mod overview;
pub mod profiles;
pub mod proposals;
pub mod replay;
pub mod runtime;
pub mod session;
pub mod slack;
pub mod spend;
pub mod sso;
pub mod streams;
pub mod users;

#[cfg(feature = "ssr")]
use leptos::prelude::ServerFnError;

/// The gateway handle the server put into context.
#[cfg(feature = "ssr")]
pub(crate) fn gateway() -> Result<gateway::Gateway, ServerFnError> {
    leptos::prelude::use_context::<gateway::Gateway>().ok_or_else(|| {
        ServerFnError::new("the gateway is not in context; build the router with server::startup")
    })
}

/// A gateway error as the page shows it: its stable code and what to do.
#[cfg(feature = "ssr")]
pub(crate) fn to_fn_error(e: gateway::Error) -> ServerFnError {
    ServerFnError::new(format!("{}: {e}", e.code()))
}

/// The agent's name in place of a recorded actor or profile id, and the id behind it for the
/// hover; anything that is not a profile id of `profiles` (a user's name, `system`) as it is.
#[cfg(feature = "ssr")]
pub(crate) fn named(profiles: &[gateway::Profile], id: String) -> (String, Option<String>) {
    match profiles.iter().find(|p| p.id.as_str() == id) {
        Some(p) => (p.name.clone(), Some(id)),
        None => (id, None),
    }
}
