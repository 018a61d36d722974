//! The OpenID Connect relying party's wire (docs/sso.md): discovery, the JWKS, the code
//! exchange, userinfo, and the ID token's checks, all over the one guarded client
//! ([`super::egress`]), with the `openidconnect` crate doing discovery and the token's checks.
//!
//! Guarantees:
//! - An ID token is accepted only when its signature verifies against the issuer's published
//!   keys with an asymmetric algorithm of [`ALLOWED_ALGS`] (never `none`, never an HMAC, so
//!   never a public key used as an HMAC secret), and its issuer, audience, expiry and nonce
//!   are this sign-in's.
//! - Discovery and keys are cached per issuer. A key id the cache lacks refetches the keys at
//!   most once per [`JWKS_REFETCH_GAP`], so a rotation is picked up on the next sign-in and a
//!   flood of made-up key ids costs one fetch per gap.
//! - Every answer is read up to [`MAX_IDP_ANSWER`] bytes within [`IDP_TIMEOUT`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreGenderClaim, CoreJsonWebKey, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AdditionalClaims, ClaimsVerificationError, ClientId, HttpRequest, HttpResponse, IdToken, IdTokenVerifier,
    IssuerUrl, Nonce, SignatureVerificationError,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::egress::{Egress, read_limited};

/// The signature algorithms an ID token may use: asymmetric only.
pub const ALLOWED_ALGS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];
/// The least time between two fetches of one issuer's keys for an unknown key id.
pub const JWKS_REFETCH_GAP: Duration = Duration::from_secs(10);
/// How long discovery is trusted before it is read again.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
/// The longest the provider may take to answer one request.
pub const IDP_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read from the provider.
pub const MAX_IDP_ANSWER: usize = 256 * 1024;

/// Why a step with the provider failed; the callers turn each into a page or a code.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached, or answered what is not OpenID Connect.
    #[error("{0}")]
    Provider(String),
    /// The provider refused the code (used, expired, or for another client).
    #[error("{0}")]
    Exchange(String),
    /// The ID token failed a check.
    #[error("{0}")]
    Token(String),
}

/// The claims beyond the standard ones, where the groups claim is found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    pub claims: Map<String, Value>,
}
impl AdditionalClaims for OtherClaims {}

type Token =
    IdToken<OtherClaims, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

/// One issuer's discovery document and keys, as cached.
#[derive(Clone)]
pub struct Provider {
    pub metadata: CoreProviderMetadata,
    keys: CoreJsonWebKeySet,
    discovered: Instant,
    keys_fetched: Instant,
}

impl Provider {
    pub fn authorization_endpoint(&self) -> &str {
        self.metadata.authorization_endpoint().as_str()
    }
}

/// Who the provider says signed in, once every check passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub name: Option<String>,
    /// The groups claim, if the ID token carried it (`None`: ask userinfo).
    pub groups: Option<Vec<String>>,
}

/// The providers this process has discovered, by issuer, and how often keys were fetched.
#[derive(Default)]
pub struct Providers {
    cache: Mutex<HashMap<String, Provider>>,
    /// Key set fetches since start (discovery's included), for the benchmark and tests.
    pub key_fetches: std::sync::atomic::AtomicU64,
}

impl Providers {
    /// The issuer's provider, discovered now unless cached and fresh.
    pub async fn get(&self, egress: &Egress, issuer: &str) -> Result<Provider, OidcError> {
        if let Some(p) = self.cached(issuer).filter(|p| p.discovered.elapsed() < DISCOVERY_TTL) {
            return Ok(p);
        }
        let p = discover(egress, issuer).await?;
        self.key_fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.cache.lock().expect("oidc cache").insert(issuer.to_string(), p.clone());
        Ok(p)
    }

    fn cached(&self, issuer: &str) -> Option<Provider> {
        self.cache.lock().expect("oidc cache").get(issuer).cloned()
    }

    /// Forgets an issuer (its connection changed).
    pub fn forget(&self, issuer: &str) {
        self.cache.lock().expect("oidc cache").remove(issuer);
    }

    /// Checks `id_token` for this client and nonce. A key id the cached keys lack refetches
    /// them once, unless they were fetched within [`JWKS_REFETCH_GAP`].
    pub async fn verify(
        &self,
        egress: &Egress,
        provider: &Provider,
        (client_id, nonce, groups_claim): (&str, &str, &str),
        id_token: &str,
    ) -> Result<Verified, OidcError> {
        let token: Token =
            id_token.parse().map_err(|e| OidcError::Token(format!("the ID token is not a JWT: {e}")))?;
        let check = |p: &Provider| check(&token, p, (client_id, nonce, groups_claim));
        match check(provider) {
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) if provider.keys_fetched.elapsed() >= JWKS_REFETCH_GAP => {
                let fresh = self.refetch_keys(egress, provider).await?;
                check(&fresh).map_err(token_error)
            }
            verified => verified.map_err(token_error),
        }
    }

    async fn refetch_keys(&self, egress: &Egress, provider: &Provider) -> Result<Provider, OidcError> {
        let http = client(egress);
        let keys = CoreJsonWebKeySet::fetch_async(provider.metadata.jwks_uri(), &http)
            .await
            .map_err(|e| OidcError::Provider(format!("the provider's keys could not be read: {e}")))?;
        self.key_fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fresh = Provider { keys, keys_fetched: Instant::now(), ..provider.clone() };
        let issuer = provider.metadata.issuer().to_string();
        self.cache.lock().expect("oidc cache").insert(issuer, fresh.clone());
        Ok(fresh)
    }
}

fn check(
    token: &Token,
    provider: &Provider,
    (client_id, nonce, groups_claim): (&str, &str, &str),
) -> Result<Verified, ClaimsVerificationError> {
    let verifier: IdTokenVerifier<'_, CoreJsonWebKey> = IdTokenVerifier::new_public_client(
        ClientId::new(client_id.to_string()),
        provider.metadata.issuer().clone(),
        provider.keys.clone(),
    )
    .set_allowed_algs(ALLOWED_ALGS);
    let claims = token.claims(&verifier, &Nonce::new(nonce.to_string()))?;
    Ok(Verified {
        issuer: claims.issuer().to_string(),
        subject: claims.subject().to_string(),
        email: claims.email().map(|e| e.to_string()),
        name: claims.name().and_then(|n| n.get(None)).map(|n| n.to_string()),
        groups: groups_in(claims.additional_claims().claims.get(groups_claim)),
    })
}

/// The groups in a claim's value: a list of strings, or one string.
pub fn groups_in(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::Array(items) => Some(items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()),
        Value::String(one) => Some(vec![one.clone()]),
        _ => None,
    }
}

fn token_error(e: ClaimsVerificationError) -> OidcError {
    OidcError::Token(match e {
        ClaimsVerificationError::Expired(_) => "the ID token has expired".into(),
        ClaimsVerificationError::InvalidAudience(_) => "the ID token is for another client".into(),
        ClaimsVerificationError::InvalidIssuer(_) => "the ID token is from another issuer".into(),
        ClaimsVerificationError::InvalidNonce(_) => "the ID token is not for this sign-in (nonce)".into(),
        ClaimsVerificationError::SignatureVerification(s) => format!("the ID token's signature: {s}"),
        other => format!("the ID token: {other}"),
    })
}

async fn discover(egress: &Egress, issuer: &str) -> Result<Provider, OidcError> {
    let url = IssuerUrl::new(issuer.to_string())
        .map_err(|e| OidcError::Provider(format!("the issuer `{issuer}` is not a URL: {e}")))?;
    let http = client(egress);
    let metadata = CoreProviderMetadata::discover_async(url, &http)
        .await
        .map_err(|e| OidcError::Provider(format!("discovery at {issuer} failed: {}", chain(&e))))?;
    if metadata.token_endpoint().is_none() {
        return Err(OidcError::Provider(format!("{issuer} publishes no token endpoint")));
    }
    let keys = metadata.jwks().clone();
    let now = Instant::now();
    Ok(Provider { metadata, keys, discovered: now, keys_fetched: now })
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// What the token endpoint answered.
#[derive(Deserialize)]
pub struct Tokens {
    pub id_token: Option<String>,
    pub access_token: Option<String>,
}

/// Exchanges `code` (with its PKCE verifier) at the provider's token endpoint, the client
/// authenticating with its secret (HTTP Basic, as RFC 6749 §2.3.1 encodes it).
pub async fn exchange(
    egress: &Egress,
    provider: &Provider,
    (client_id, secret): (&str, &str),
    (code, verifier, redirect): (&str, &str, &str),
) -> Result<Tokens, OidcError> {
    let endpoint = provider.metadata.token_endpoint().expect("checked at discovery").url().clone();
    check_target(egress, &endpoint)?;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", redirect),
    ];
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let res = egress
        .client()
        .post(endpoint)
        .basic_auth(enc(client_id), Some(enc(secret)))
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .timeout(IDP_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            OidcError::Provider(format!("the token endpoint could not be reached: {}", chain(&e)))
        })?;
    let status = res.status();
    let body = read_limited(res, MAX_IDP_ANSWER)
        .await
        .map_err(|_| OidcError::Provider("the token endpoint's answer could not be read".into()))?;
    if !status.is_success() {
        let why: Value = serde_json::from_slice(&body).unwrap_or_default();
        let error = why.get("error").and_then(Value::as_str).unwrap_or("no error code");
        return Err(OidcError::Exchange(format!("the provider refused the code ({status}, {error})")));
    }
    serde_json::from_slice(&body).map_err(|e| {
        OidcError::Provider(format!("the token endpoint answered what is not a token response: {e}"))
    })
}

/// The groups claim from the userinfo endpoint, for providers that leave it out of the ID
/// token; its `sub` must be the ID token's.
pub async fn userinfo_groups(
    egress: &Egress,
    provider: &Provider,
    access_token: &str,
    (subject, claim): (&str, &str),
) -> Result<Option<Vec<String>>, OidcError> {
    let Some(endpoint) = provider.metadata.userinfo_endpoint() else { return Ok(None) };
    let endpoint = endpoint.url().clone();
    check_target(egress, &endpoint)?;
    let res = egress
        .client()
        .get(endpoint)
        .bearer_auth(access_token)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(IDP_TIMEOUT)
        .send()
        .await
        .map_err(|e| OidcError::Provider(format!("userinfo could not be reached: {}", chain(&e))))?;
    if !res.status().is_success() {
        return Err(OidcError::Provider(format!("userinfo answered {}", res.status())));
    }
    let body = read_limited(res, MAX_IDP_ANSWER)
        .await
        .map_err(|_| OidcError::Provider("userinfo's answer could not be read".into()))?;
    let info: Map<String, Value> = serde_json::from_slice(&body).map_err(|_| {
        OidcError::Provider(
            "userinfo answered what is not JSON claims (signed userinfo is not supported)".into(),
        )
    })?;
    if info.get("sub").and_then(Value::as_str) != Some(subject) {
        return Err(OidcError::Token("userinfo is for another subject than the ID token".into()));
    }
    Ok(groups_in(info.get(claim)))
}

fn check_target(egress: &Egress, url: &url::Url) -> Result<(), OidcError> {
    egress.check_url(url).map_err(|r| OidcError::Provider(format!("egress refused {url}: {r}")))
}

/// The `openidconnect` crate's HTTP client: the guarded one, bounded in time and size.
struct EgressHttp<'a>(&'a Egress);

fn client(egress: &Egress) -> EgressHttp<'_> {
    EgressHttp(egress)
}

impl<'c> openidconnect::AsyncHttpClient<'c> for EgressHttp<'_> {
    type Error = OidcFetchError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<HttpResponse, OidcFetchError>> + Send + 'c>,
    >;

    fn call(&'c self, req: HttpRequest) -> Self::Future {
        Box::pin(fetch(self.0, req))
    }
}

async fn fetch(egress: &Egress, req: HttpRequest) -> Result<HttpResponse, OidcFetchError> {
    let url = url::Url::parse(&req.uri().to_string()).map_err(|e| OidcFetchError(e.to_string()))?;
    egress.check_url(&url).map_err(|r| OidcFetchError(format!("egress refused {url}: {r}")))?;
    let (parts, body) = req.into_parts();
    let res = egress
        .client()
        .request(parts.method, url)
        .headers(parts.headers)
        .body(body)
        .timeout(IDP_TIMEOUT)
        .send()
        .await
        .map_err(|e| OidcFetchError(chain(&e)))?;
    let mut out = http::Response::builder().status(res.status());
    for (k, v) in res.headers() {
        out = out.header(k, v);
    }
    let body = read_limited(res, MAX_IDP_ANSWER)
        .await
        .map_err(|_| OidcFetchError(format!("an answer over {MAX_IDP_ANSWER} bytes, or cut short")))?;
    out.body(body).map_err(|e| OidcFetchError(e.to_string()))
}

/// A fetch for discovery or keys that failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OidcFetchError(String);

/// The fields of a sign-in that the browser carries to the provider and back.
pub struct Challenge {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    pub challenge: String,
}

impl Challenge {
    pub fn new() -> Challenge {
        let (challenge, verifier) = openidconnect::PkceCodeChallenge::new_random_sha256();
        Challenge {
            state: openidconnect::CsrfToken::new_random().secret().clone(),
            nonce: Nonce::new_random().secret().clone(),
            verifier: verifier.secret().clone(),
            challenge: challenge.as_str().to_string(),
        }
    }
}

impl Default for Challenge {
    fn default() -> Self {
        Challenge::new()
    }
}

/// The provider's authorization URL for this sign-in (code flow, S256 PKCE).
pub fn authorize_url(
    provider: &Provider,
    (client_id, redirect, scopes): (&str, &str, &[String]),
    c: &Challenge,
) -> String {
    let mut url = provider.metadata.authorization_endpoint().url().clone();
    let mut scope: Vec<&str> = vec!["openid"];
    scope.extend(scopes.iter().map(String::as_str).filter(|s| *s != "openid"));
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect)
        .append_pair("scope", &scope.join(" "))
        .append_pair("state", &c.state)
        .append_pair("nonce", &c.nonce)
        .append_pair("code_challenge", &c.challenge)
        .append_pair("code_challenge_method", "S256");
    url.to_string()
}
