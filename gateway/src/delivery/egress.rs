//! Egress: every call the gateway makes to a place a tenant configured (a connector's upstream,
//! a connected app, the team runtime, a webhook endpoint) goes through one HTTP client that
//! cannot reach the operator's own network unless the operator allows it.
//!
//! Guarantees:
//! - An address is *internal* when it is loopback, unspecified (`0.0.0.0`, `::`), private
//!   (RFC 1918), carrier-grade NAT (100.64.0.0/10), link-local (169.254.0.0/16, where cloud
//!   metadata lives, and fe80::/10), unique-local (fc00::/7), multicast, broadcast, reserved or
//!   documentation space, or an IPv6 form that carries such an IPv4 address (IPv4-mapped,
//!   IPv4-compatible, NAT64, 6to4). [`internal`] names which.
//! - An internal address is refused unless the operator's allowance ([`Allowance`], from
//!   `--egress-allow`) covers it: a CIDR covers every port, an `address:port` that one port.
//! - The check runs before any connection, so no spelling of a host gets past it and nothing
//!   is sent to a refused address: on the URL before a request is built
//!   ([`Egress::check_url`]: literal addresses, exact port), on the connection's target in the
//!   client's connector layer (literal addresses again, exact port), and on every address a
//!   name resolves to (the client's resolver, with the connection's port). The address a
//!   connection reached is checked once more as it opens, before the request is written. A
//!   refused call's error is [`Refused`], which [`refusal`] finds in any error the client
//!   returns.
//! - The client follows no redirects and uses no proxy, so the address checked is the address
//!   reached.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use ipnet::IpNet;

use crate::error::{Error, Result};

/// The longest a connection to a tenant's target may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a name's resolution may take when a setting is saved.
const RESOLVE_AT_SAVE: Duration = Duration::from_secs(2);

/// Why an address may not be reached: the range it falls in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("egress refused: {addr} is {range} and --egress-allow does not cover it")]
pub struct Refused {
    pub addr: SocketAddr,
    pub range: &'static str,
}

/// The range an internal address is in; `None` for a public one.
pub fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => "unspecified",
        (127, ..) => "loopback",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "private",
        (100, 64..=127, _) => "carrier-grade NAT",
        (169, 254, _) => "link-local",
        (192, 0, 0) | (198, 18..=19, _) | (240..=255, ..) => "reserved",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (224..=239, ..) => "multicast",
        _ => return None,
    })
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // The IPv6 forms that carry an IPv4 address are as internal as the address they carry.
    let carried = match s {
        [0, 0, 0, 0, 0, 0xffff, ..]
        | [0, 0, 0, 0, 0xffff, 0, ..]
        | [0, 0, 0, 0, 0, 0, ..]
        | [0x64, 0xff9b, 0, 0, 0, 0, ..] => {
            Some(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8))
        }
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    };
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = carried {
        // IPv4-compatible and IPv4-translated forms are deprecated or for translators only.
        let legacy = s[0] == 0 && s[5] != 0xffff;
        return internal_v4(v4).or(legacy.then_some("reserved"));
    }
    Some(match s[0] {
        0xfc00..=0xfdff => "unique-local",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x2001 if s[1] == 0 => "reserved",
        0x0064 if s[1] == 0xff9b => "reserved",
        0x0100 if s[1..4] == [0, 0, 0] => "reserved",
        _ => return None,
    })
}

/// What the operator lets through although it is internal: whole networks (every port) and
/// single `address:port`s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowance {
    nets: Vec<IpNet>,
    sockets: Vec<SocketAddr>,
}

impl Allowance {
    /// Parses `--egress-allow` entries: a CIDR (`10.0.0.0/8`), an address (`10.1.2.3`, every
    /// port), an `address:port` (`127.0.0.1:4010`, `[::1]:4010`), or a `name:port`
    /// (`localhost:4010`), which stands for every address the name resolves to now.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> std::result::Result<Allowance, String> {
        let mut allow = Allowance::default();
        for entry in entries.iter().map(|e| e.as_ref().trim()).filter(|e| !e.is_empty()) {
            if let Ok(net) = entry.parse::<IpNet>() {
                allow.nets.push(net.trunc());
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                allow.nets.push(IpNet::from(ip));
            } else if let Ok(socket) = entry.parse::<SocketAddr>() {
                allow.sockets.push(socket);
            } else if entry.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
                let resolved = entry
                    .to_socket_addrs()
                    .map_err(|e| format!("--egress-allow `{entry}`: the name does not resolve here ({e})"))?;
                allow.sockets.extend(resolved);
            } else {
                return Err(format!(
                    "--egress-allow `{entry}` is not a CIDR (10.0.0.0/8), an address, or a host:port (127.0.0.1:4010)"
                ));
            }
        }
        Ok(allow)
    }

    /// Allows every loopback address, as the demo does for its reference programs.
    pub fn loopback() -> Allowance {
        Allowance::parse(&["127.0.0.0/8", "::1/128"]).expect("loopback ranges parse")
    }

    pub fn is_empty(&self) -> bool {
        self.nets.is_empty() && self.sockets.is_empty()
    }

    /// Whether a connection to `addr` may be opened: exactly, port included.
    pub fn permits(&self, addr: SocketAddr) -> std::result::Result<(), Refused> {
        let ip = canonical(addr.ip());
        let Some(range) = internal(ip) else { return Ok(()) };
        let covered = self.nets.iter().any(|n| n.contains(&ip))
            || self.sockets.iter().any(|s| canonical(s.ip()) == ip && s.port() == addr.port());
        if covered { Ok(()) } else { Err(Refused { addr, range }) }
    }

    /// Whether `ip` may be a resolved address, before the port is known: some port of it is
    /// allowed. The connection is checked again, port included, once it is open.
    fn permits_some_port(&self, ip: IpAddr) -> std::result::Result<(), Refused> {
        let ip = canonical(ip);
        let Some(range) = internal(ip) else { return Ok(()) };
        let covered =
            self.nets.iter().any(|n| n.contains(&ip)) || self.sockets.iter().any(|s| canonical(s.ip()) == ip);
        if covered { Ok(()) } else { Err(Refused { addr: SocketAddr::new(ip, 0), range }) }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is, so one allowance covers both.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The one client for outbound calls, and the allowance it enforces.
#[derive(Clone)]
pub struct Egress {
    allow: Arc<Allowance>,
    client: reqwest::Client,
    /// False only in [`Egress::unguarded_for_benchmarks`].
    guarded: bool,
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress").field("allow", &self.allow).finish_non_exhaustive()
    }
}

impl Egress {
    /// The client, guarded by `allow`: pooled connections, no Nagle delay, no redirects (a
    /// redirect could carry a credential header elsewhere), no proxy.
    pub fn new(allow: Allowance) -> Egress {
        Egress::trusting(allow, Vec::new())
    }

    /// [`Egress::new`], trusting `roots` for https besides the system's: the operator's own
    /// certificate authorities (`--egress-ca`), for targets inside its network it allowed.
    pub fn trusting(allow: Allowance, roots: Vec<reqwest::Certificate>) -> Egress {
        let allow = Arc::new(allow);
        let client = base_builder()
            .tls_certs_merge(roots)
            .dns_resolver(Arc::new(Resolver { allow: allow.clone() }))
            .connector_layer(GuardLayer { allow: allow.clone() })
            .build()
            .expect("an HTTP client builds");
        Egress { allow, client, guarded: true }
    }

    /// The same client without the guard: no check of URLs, resolved names or connections.
    /// Only the benchmarks that measure what the guard costs use it, side by side with a
    /// guarded one; nothing a deployment configures reaches it.
    #[doc(hidden)]
    pub fn unguarded_for_benchmarks() -> Egress {
        let client = base_builder().build().expect("an HTTP client builds");
        Egress { allow: Arc::default(), client, guarded: false }
    }

    /// The guarded client. Check a URL with [`Egress::check_url`] before sending to it.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn allowance(&self) -> &Allowance {
        &self.allow
    }

    /// Refuses a URL whose host is a literal internal address the allowance does not cover
    /// (a name is checked when it resolves). Every request goes through this first, so a
    /// literal address is refused before a connection is attempted.
    pub fn check_url(&self, url: &url::Url) -> std::result::Result<(), Refused> {
        if !self.guarded {
            return Ok(());
        }
        let port = url.port_or_known_default().unwrap_or(0);
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.allow.permits(SocketAddr::new(ip.into(), port)),
            Some(url::Host::Ipv6(ip)) => self.allow.permits(SocketAddr::new(ip.into(), port)),
            _ => Ok(()),
        }
    }

    /// A setting's URL, checked when it is saved: a literal address exactly, and a name on
    /// the addresses it resolves to now (refused when every one of them is). A name that
    /// does not resolve here is accepted: each call checks again where it resolves then.
    pub async fn check_setting(&self, url: &url::Url) -> Result<()> {
        if !self.guarded {
            return Ok(());
        }
        self.check_url(url).map_err(|r| refused_setting(url, &r))?;
        let Some(url::Host::Domain(name)) = url.host() else { return Ok(()) };
        let port = url.port_or_known_default().unwrap_or(0);
        let lookup = tokio::time::timeout(RESOLVE_AT_SAVE, tokio::net::lookup_host((name, port))).await;
        let Ok(Ok(addrs)) = lookup else { return Ok(()) };
        let verdicts: Vec<_> = addrs.map(|a| self.allow.permits(a)).collect();
        match verdicts.iter().find_map(|v| v.as_ref().err()) {
            Some(r) if verdicts.iter().all(|v| v.is_err()) => Err(refused_setting(url, r)),
            _ => Ok(()),
        }
    }
}

/// Makes rustls on the ring provider the process's TLS for every reqwest 0.13 client (ours,
/// rmcp's, the server's OTLP exporter's); the first call wins, later ones change nothing.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What the guarded and the unguarded client share: pooled connections, no Nagle delay, no
/// redirects, no proxy, rustls on the ring provider for https targets (rmcp's reqwest shares it).
fn base_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(30))
}

fn refused_setting(url: &url::Url, r: &Refused) -> Error {
    let host = url.host_str().unwrap_or_default();
    Error::invalid(
        "egress_refused",
        format!(
            "`{host}` is {} ({}): the gateway does not call into its operator's network. Use a public address, or ask the operator to allow it with --egress-allow",
            r.range,
            r.addr.ip()
        ),
    )
}

/// The stable code of a call egress refused: the target is in the operator's network.
pub const EGRESS_REFUSED: &str = "egress_refused";

/// Why a request through the client failed in transport, for the caller's own codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// Egress refused the target ([`EGRESS_REFUSED`]).
    Refused,
    Timeout,
    Unreachable,
}

/// What a transport error of the client means.
pub fn failed(e: &reqwest::Error) -> Failed {
    if refusal(e).is_some() {
        Failed::Refused
    } else if e.is_timeout() {
        Failed::Timeout
    } else {
        Failed::Unreachable
    }
}

/// The largest answer body a caller reads by default: a connector's, the runtime's.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Why an answer's body was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Over the caller's limit, refused before it was all read.
    TooLarge,
    Transport(reqwest::Error),
}

/// The body of `res`, refusing one over `max` bytes without reading it all.
pub async fn read_limited(mut res: reqwest::Response, max: usize) -> std::result::Result<Vec<u8>, ReadError> {
    if res.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(ReadError::Transport)? {
        if body.len() + chunk.len() > max {
            return Err(ReadError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The egress refusal inside an error the client returned, if that is why it failed.
pub fn refusal<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<Refused>() {
            return Some(r);
        }
        cur = err.source();
    }
    None
}

tokio::task_local! {
    /// The port of the connection being opened, set by [`Guard`] around the connector so the
    /// resolver checks each address with its port, before anything is sent.
    static CONNECTING_PORT: u16;
}

/// Resolves names with the system resolver and keeps only the addresses the allowance lets
/// through, port included when the connection's is known; a name with none left fails to
/// resolve.
struct Resolver {
    allow: Arc<Allowance>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow.clone();
        let name = name.as_str().to_string();
        let port = CONNECTING_PORT.try_with(|p| *p).ok();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let mut refused = None;
            let check = |a: &SocketAddr| match port {
                Some(p) => allow.permits(SocketAddr::new(a.ip(), p)),
                None => allow.permits_some_port(a.ip()),
            };
            let kept: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|a| match check(a) {
                    Ok(()) => true,
                    Err(r) => {
                        refused.get_or_insert(r);
                        false
                    }
                })
                .collect();
            match (kept.is_empty(), refused) {
                (true, Some(r)) => Err(Box::new(r) as BoxError),
                _ => Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

/// Wraps the client's connector: a connection whose peer the allowance refuses is closed
/// before anything is written to it.
#[derive(Clone)]
struct GuardLayer {
    allow: Arc<Allowance>,
}

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guard<S>;
    fn layer(&self, inner: S) -> Guard<S> {
        Guard { inner, allow: self.allow.clone() }
    }
}

#[derive(Clone)]
struct Guard<S> {
    inner: S,
    allow: Arc<Allowance>,
}

/// The host and port a connection is for, read from reqwest's description of its target
/// (`Unnameable(<uri>)`, the only way it shows it); `None` if that ever reads otherwise, and
/// then the resolver checks an address on any port of it and the connection is checked once
/// open.
fn destination(dst: &impl fmt::Debug) -> Option<(String, u16)> {
    let shown = format!("{dst:?}");
    let inner = shown.strip_prefix("Unnameable(")?.strip_suffix(')')?;
    let uri: http::Uri = inner.parse().ok()?;
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    })?;
    Some((uri.host()?.trim_matches(|c| c == '[' || c == ']').to_string(), port))
}

impl<S, R> tower_service::Service<R> for Guard<S>
where
    S: tower_service::Service<R, Error = BoxError>,
    S::Response: Connection + Send + 'static,
    S::Future: Send + 'static,
    R: fmt::Debug,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, dst: R) -> Self::Future {
        let target = destination(&dst);
        // A literal address is checked, port and all, before a connection is attempted.
        if let Some((host, port)) = &target
            && let Ok(ip) = host.parse::<IpAddr>()
            && let Err(r) = self.allow.permits(SocketAddr::new(ip, *port))
        {
            return Box::pin(async move { Err(Box::new(r) as BoxError) });
        }
        let (connecting, allow) = (self.inner.call(dst), self.allow.clone());
        Box::pin(async move {
            let conn = match target {
                Some((_, port)) => CONNECTING_PORT.scope(port, connecting).await?,
                None => connecting.await?,
            };
            let mut extras = http::Extensions::new();
            conn.connected().get_extras(&mut extras);
            let Some(peer) = extras.get::<HttpInfo>().map(HttpInfo::remote_addr) else {
                return Err("egress refused: the connection's peer address is unknown".into());
            };
            allow.permits(peer)?;
            Ok(conn)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: &str) -> Option<&'static str> {
        let addr: SocketAddr = s.parse().unwrap();
        Allowance::default().permits(addr).err().map(|r| r.range)
    }

    #[test]
    fn every_internal_form_is_refused_and_public_addresses_pass() {
        for (addr, range) in [
            ("127.0.0.1:80", "loopback"),
            ("127.1.2.3:80", "loopback"),
            ("0.0.0.0:80", "unspecified"),
            ("10.1.2.3:80", "private"),
            ("172.20.0.1:80", "private"),
            ("192.168.1.1:80", "private"),
            ("100.100.0.1:80", "carrier-grade NAT"),
            ("169.254.169.254:80", "link-local"),
            ("224.0.0.1:80", "multicast"),
            ("255.255.255.255:80", "reserved"),
            ("[::1]:80", "loopback"),
            ("[::]:80", "unspecified"),
            ("[::ffff:127.0.0.1]:80", "loopback"),
            ("[::ffff:169.254.169.254]:80", "link-local"),
            ("[::ffff:0:127.0.0.1]:80", "loopback"),
            ("[::ffff:0:93.184.216.34]:80", "reserved"),
            ("[::127.0.0.1]:80", "loopback"),
            ("[64:ff9b::a00:1]:80", "private"),
            ("[2002:7f00:1::]:80", "loopback"),
            ("[fd00::1]:80", "unique-local"),
            ("[fe80::1]:80", "link-local"),
            ("[ff02::1]:80", "multicast"),
        ] {
            assert_eq!(refused(addr), Some(range), "{addr}");
        }
        for public in
            ["93.184.216.34:443", "[2606:2800:220:1::]:443", "[::ffff:93.184.216.34]:443", "172.32.0.1:80"]
        {
            assert_eq!(refused(public), None, "{public}");
        }
    }

    #[test]
    fn an_allowance_covers_a_network_on_every_port_and_a_socket_on_its_own() {
        let allow = Allowance::parse(&["10.0.0.0/8", "127.0.0.1:4010", "[::1]:4011", "192.168.1.7"]).unwrap();
        let ok = |s: &str| allow.permits(s.parse().unwrap()).is_ok();
        assert!(ok("10.9.9.9:22") && ok("127.0.0.1:4010") && ok("[::1]:4011") && ok("192.168.1.7:1"));
        assert!(ok("[::ffff:127.0.0.1]:4010"), "the mapped form is the same address");
        assert!(!ok("127.0.0.1:4011") && !ok("127.0.0.2:4010") && !ok("[::1]:4010") && !ok("192.168.1.8:1"));
        assert!(
            Allowance::parse(&["localhost:4010"]).unwrap().permits("127.0.0.1:4010".parse().unwrap()).is_ok()
        );
        for bad in ["10.0.0.0/33", "nonsense", "host:port"] {
            assert!(Allowance::parse(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn literal_urls_are_refused_in_every_spelling() {
        let egress = Egress::new(Allowance::default());
        for url in [
            "http://127.0.0.1:3000/v1",
            "http://127.1:3000/",
            "http://0.0.0.0/",
            "http://[::ffff:127.0.0.1]:3000/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "https://169.254.169.254/latest/meta-data",
        ] {
            let parsed = url::Url::parse(url).unwrap();
            assert!(egress.check_url(&parsed).is_err(), "{url} parsed as {parsed}");
        }
        assert!(egress.check_url(&url::Url::parse("https://processor.example.com/").unwrap()).is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused_when_saved_and_when_called() {
        let egress = Egress::new(Allowance::default());
        let url = url::Url::parse("http://localhost:9/").unwrap();
        assert_eq!(egress.check_setting(&url).await.unwrap_err().code(), "egress_refused");
        let err = egress.client().get(url).send().await.unwrap_err();
        assert!(refusal(&err).is_some(), "{err:?}");
        // Two listeners on loopback: the allowance names one. The other is refused before a
        // connection is attempted, by name and by address.
        let allowed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (a, b) = (allowed.local_addr().unwrap().port(), other.local_addr().unwrap().port());
        let egress = Egress::new(Allowance::parse(&[format!("127.0.0.1:{a}")]).unwrap());
        for url in [format!("http://localhost:{b}/"), format!("http://127.0.0.1:{b}/")] {
            let err = egress.client().get(&url).send().await.unwrap_err();
            assert!(refusal(&err).is_some(), "{url}: {err:?}");
        }
        let accepted = tokio::time::timeout(Duration::from_millis(200), other.accept()).await;
        assert!(accepted.is_err(), "nothing connected to the refused port");
        let served = tokio::spawn(async move { allowed.accept().await.is_ok() });
        let reached =
            egress.client().get(format!("http://localhost:{a}/")).timeout(Duration::from_millis(300));
        let _ = reached.send().await;
        assert!(served.await.unwrap(), "the allowed address:port is reached");
    }
}
