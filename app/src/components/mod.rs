//! Widgets shared by the pages: the layout, empty and error states, money and status
//! displays, and the connection indicator island.

#[cfg(feature = "hydrate")]
pub mod browser;
pub mod common;
pub mod connection;
pub mod countdown;
pub mod kit_editor;
pub mod layout;
pub mod live;
pub mod replay;
pub mod secret;
