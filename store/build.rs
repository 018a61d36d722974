//! `sqlx::migrate!` embeds the migrations when the crate compiles; a migration added later
//! must rebuild it, or a server built before would start on a schema without it.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
