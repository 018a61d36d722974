//! What goes over the wire compressed and what is cached: the console's static assets under
//! `/pkg` (the wasm, its loader and the stylesheet) are served from the site's directory as the
//! browser accepts them, the brotli or gzip file built beside each when the release site was
//! built with `--precompress`, and cached for good when their names carry their content's hash
//! (cargo-leptos `hash-files`, a `hash.txt` beside the binary), else revalidated on each visit;
//! every other answer of a kilobyte or more (a page, a JSON body) is compressed on the fly
//! when the client accepts it, except event streams, whose heartbeats must go out as written.

use std::path::Path;

use axum::Router;
use axum::http::{HeaderValue, header};
use leptos::config::LeptosOptions;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

/// How long a hashed asset may be kept: a year, and it never changes under its name.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// An asset whose name does not change with it: kept, but asked again on each visit.
const REVALIDATE: &str = "no-cache";
/// Smaller answers go out as they are: compressing them saves less than it costs.
const MIN_COMPRESSED_BYTES: u16 = 1024;

/// Whether the site's assets carry content hashes: cargo-leptos wrote `hash.txt` beside this
/// binary when it built them so.
pub fn hashed() -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("hash.txt")))
        .is_some_and(|f| f.exists())
}

/// `/pkg`: the site's package directory, precompressed where it can be, with its caching.
pub fn pkg(options: &LeptosOptions) -> Router {
    let dir = Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    let cache = if options.hash_files { IMMUTABLE } else { REVALIDATE };
    Router::new()
        .fallback_service(ServeDir::new(dir).precompressed_br().precompressed_gzip())
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static(cache)))
}

/// On-the-fly compression (brotli or gzip, as the client accepts) of answers of at least
/// [`MIN_COMPRESSED_BYTES`], never of an event stream; an answer already encoded (a
/// precompressed asset) passes as it is.
pub fn compression() -> CompressionLayer<impl Predicate> {
    let predicate = SizeAbove::new(MIN_COMPRESSED_BYTES)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE);
    CompressionLayer::new().compress_when(predicate)
}
