//! OAuth client ID metadata documents (the MCP authorization spec's preferred way for a client
//! to identify itself): the client's id is an HTTPS URL, and the document at that URL names
//! the client and its redirect URIs.
//!
//! Guarantees:
//! - The document is fetched through the one egress client ([`Egress`]), so an address in the
//!   operator's network is refused unless the operator allowed it; no redirect is followed.
//! - A fetch is bounded: [`MAX_DOCUMENT_BYTES`] of body and [`FETCH_TIMEOUT`] in all. A
//!   document that is too large, too slow, not JSON, or whose `client_id` is not its own URL
//!   is refused with the reason, and nothing is cached for it.
//! - A good document is cached for [`CACHE_TTL`], so a consent and its token exchange, and
//!   every refresh after, fetch it at most once in that time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::delivery::egress::{self, Egress, ReadError};

/// The largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The longest a fetch may take, connection included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a fetched document is trusted.
pub const CACHE_TTL: Duration = Duration::from_secs(600);
/// The most documents kept at once; the oldest go first.
const MAX_CACHED: usize = 1024;

/// What a client's document says, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientDocument {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    /// A client that registered itself here (RFC 7591), not one identified by a document.
    pub registered: bool,
}

#[derive(Deserialize)]
struct Raw {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
}

/// Why a client's document was refused, in words for the person consenting and the client.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// The documents fetched lately, by client id.
#[derive(Default)]
pub struct ClientDocuments {
    cache: Mutex<HashMap<String, (ClientDocument, Instant)>>,
}

impl ClientDocuments {
    /// The client's document: cached, or fetched now.
    pub async fn get(&self, egress: &Egress, client_id: &str) -> Result<ClientDocument, ClientError> {
        let cached = self.cache.lock().expect("client cache").get(client_id).cloned();
        if let Some((doc, at)) = cached.filter(|(_, at)| at.elapsed() < CACHE_TTL) {
            let _ = at;
            return Ok(doc);
        }
        let doc = fetch(egress, client_id).await?;
        let mut cache = self.cache.lock().expect("client cache");
        if cache.len() >= MAX_CACHED {
            let oldest = cache.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone());
            oldest.map(|k| cache.remove(&k));
        }
        cache.insert(client_id.to_string(), (doc.clone(), Instant::now()));
        Ok(doc)
    }
}

/// Checks that a client id is a URL a document may live at: HTTPS, with a path, no fragment
/// and no credentials.
pub fn check_client_id(client_id: &str) -> Result<url::Url, ClientError> {
    let url = url::Url::parse(client_id).map_err(|_| {
        ClientError("client_id must be the HTTPS URL of the client's metadata document".into())
    })?;
    let ok = url.scheme() == "https"
        && url.path() != "/"
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if !ok {
        return Err(ClientError(
            "client_id must be an HTTPS URL with a path, without a fragment or credentials (a client ID metadata document)"
                .into(),
        ));
    }
    Ok(url)
}

async fn fetch(egress: &Egress, client_id: &str) -> Result<ClientDocument, ClientError> {
    let url = check_client_id(client_id)?;
    egress
        .check_url(&url)
        .map_err(|r| ClientError(format!("the client's metadata document could not be fetched: {r}")))?;
    let body = tokio::time::timeout(FETCH_TIMEOUT, read(egress, url))
        .await
        .map_err(|_| ClientError(format!("the client's metadata document took over {FETCH_TIMEOUT:?}")))??;
    parse(client_id, &body)
}

async fn read(egress: &Egress, url: url::Url) -> Result<Vec<u8>, ClientError> {
    let unreachable = |e: reqwest::Error| match egress::refusal(&e) {
        Some(r) => ClientError(format!("the client's metadata document could not be fetched: {r}")),
        None => ClientError(format!("the client's metadata document could not be fetched: {e}")),
    };
    let res =
        egress.client().get(url).header("accept", "application/json").send().await.map_err(unreachable)?;
    if !res.status().is_success() {
        return Err(ClientError(format!("the client's metadata document answered {}", res.status())));
    }
    egress::read_limited(res, MAX_DOCUMENT_BYTES).await.map_err(|e| match e {
        ReadError::TooLarge => {
            ClientError(format!("the client's metadata document is over {MAX_DOCUMENT_BYTES} bytes"))
        }
        ReadError::Transport(e) => unreachable(e),
    })
}

/// Checks a fetched document: JSON, its `client_id` its own URL, at least one redirect URI,
/// each an absolute URL without a fragment.
pub fn parse(client_id: &str, body: &[u8]) -> Result<ClientDocument, ClientError> {
    let raw: Raw = serde_json::from_slice(body).map_err(|e| {
        ClientError(format!("the client's metadata document is not valid JSON metadata: {e}"))
    })?;
    if raw.client_id != client_id {
        return Err(ClientError(
            "the client's metadata document names another client_id than its own URL".into(),
        ));
    }
    let bad =
        |u: &String| url::Url::parse(u).map_or(true, |u| u.fragment().is_some() || u.cannot_be_a_base());
    if raw.redirect_uris.is_empty() || raw.redirect_uris.iter().any(bad) {
        return Err(ClientError(
            "the client's metadata document must list redirect_uris, each an absolute URL without a fragment"
                .into(),
        ));
    }
    let host =
        url::Url::parse(client_id).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default();
    let name: String =
        raw.client_name.unwrap_or(host).chars().filter(|c| !c.is_control()).take(100).collect();
    Ok(ClientDocument {
        client_id: raw.client_id,
        client_name: name,
        redirect_uris: raw.redirect_uris,
        registered: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "https://client.example/oauth/client.json";

    #[test]
    fn a_document_names_itself_and_its_redirects() {
        let body = br#"{"client_id":"https://client.example/oauth/client.json","client_name":"Claude","redirect_uris":["https://client.example/cb"]}"#;
        let doc = parse(ID, body).unwrap();
        assert_eq!(doc.client_name, "Claude");
        let other =
            br#"{"client_id":"https://evil.example/c.json","redirect_uris":["https://client.example/cb"]}"#;
        assert!(parse(ID, other).is_err());
        let no_redirects = br#"{"client_id":"https://client.example/oauth/client.json"}"#;
        assert!(parse(ID, no_redirects).is_err());
    }

    #[test]
    fn client_ids_are_https_urls_with_a_path() {
        assert!(check_client_id(ID).is_ok());
        assert!(check_client_id("http://client.example/c.json").is_err());
        assert!(check_client_id("https://client.example/").is_err());
        assert!(check_client_id("https://u:p@client.example/c.json").is_err());
        assert!(check_client_id("claude").is_err());
    }
}
