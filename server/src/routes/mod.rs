//! HTTP routes outside the console pages, one module per area.

pub mod health;
