//! What a console form post answers. The forms work without JavaScript, and a plain form
//! post cannot read a response body, so each action sends the browser back to the page it
//! came from with what happened in `?done=` or what went wrong in `?error=`; the page shows
//! either ([`crate::components::common::FormOutcome`]), announced to assistive technology.

#[cfg(feature = "ssr")]
use leptos::prelude::ServerFnError;

#[cfg(feature = "ssr")]
use crate::api::session::encode_query_value;

/// For a plain form post, which cannot read a response body: sends the browser back to the
/// page it came from with the error's message in `?error=`, which the page shows
/// ([`crate::components::common::FormOutcome`]). Returns the error for callers with JavaScript.
#[cfg(feature = "ssr")]
pub(crate) async fn back_with_error(e: ServerFnError) -> ServerFnError {
    // What the user should read: the stable code and what to do, without the transport's prefix.
    let text = e.to_string();
    let message = text.rsplit("error running server function: ").next().unwrap_or(&text);
    back_to_page("error", message).await;
    e
}

/// For a plain form post that succeeded: sends the browser back to the page it came from with
/// what happened, in words, in `?done=`, which the page announces
/// ([`crate::components::common::FormOutcome`]).
#[cfg(feature = "ssr")]
pub(crate) async fn back_with_notice(message: &str) {
    back_to_page("done", message).await;
}

/// Redirects to the referring page with `key=message`, dropping an earlier outcome.
#[cfg(feature = "ssr")]
async fn back_to_page(key: &str, message: &str) {
    if let Ok(headers) = leptos_axum::extract::<axum::http::HeaderMap>().await
        && let Some(referer) = headers.get(axum::http::header::REFERER).and_then(|v| v.to_str().ok())
    {
        // Only a path on this site: drop the scheme and host, and any earlier outcome.
        let path = referer.splitn(4, '/').nth(3).map_or("/".to_string(), |p| format!("/{p}"));
        let (base, query) = path.split_once('?').unwrap_or((&path, ""));
        let mut target = format!("{base}?");
        let earlier = |kv: &&str| kv.is_empty() || kv.starts_with("error=") || kv.starts_with("done=");
        for kv in query.split('&').filter(|kv| !earlier(kv)) {
            target.push_str(kv);
            target.push('&');
        }
        target.push_str(key);
        target.push('=');
        target.push_str(&encode_query_value(message));
        leptos_axum::redirect(&target);
    }
}

/// Runs a form's server function, turning its error into [`back_with_error`].
#[cfg(feature = "ssr")]
pub(crate) async fn form<T>(
    run: impl std::future::Future<Output = Result<T, ServerFnError>>,
) -> Result<T, ServerFnError> {
    match run.await {
        Ok(v) => Ok(v),
        Err(e) => Err(back_with_error(e).await),
    }
}
