//! [`SniRoute`]: sending a kubeconfig's `tls-server-name` as the TLS SNI, as client-go does.
//!
//! client-go puts `tls-server-name` into Go's `tls.Config.ServerName`, which is both the name the
//! server certificate is verified against and the SNI sent in the ClientHello. reqwest takes the
//! SNI from the request URL's host and has no separate setting, so the route works the other
//! way round: every request URL gets `tls-server-name` as its host, and the client's resolver is
//! told (`reqwest::ClientBuilder::resolve_to_addrs`) that this name stands for the real server's
//! addresses. TCP still goes to the server; TLS sees the configured name. Verification is not
//! touched: it was already against `tls-server-name` ([`TlsSettings`](super::config::TlsSettings)).
//!
//! Contract and trade-offs:
//! - A server host that is a DNS name is resolved **once**, when the client is built (blocking,
//!   at start-up). DNS changes after that are not followed; a restart picks them up. An IP host
//!   is used as it is.
//! - `Host` (HTTP/1.1) and `:authority` (HTTP/2) carry `tls-server-name`, not the server host
//!   that Go would send. Overriding `Host` by hand would make it disagree with `:authority`,
//!   which RFC 9113 §8.3.1 lets a server reject as malformed; kube-apiserver does not route on
//!   either, so the name in the URL is left alone.
//! - No route is taken when a proxy would carry the request (`proxy-url`, or `HTTPS_PROXY` and
//!   friends not excluded by `NO_PROXY` for the real server): the proxy would be asked to
//!   connect to `tls-server-name`, a name it may not resolve. The SNI then follows the server
//!   host, as it did before; verification still uses `tls-server-name`.
//! - No route is needed when `tls-server-name` is the URL host already, or an IP address (an IP
//!   is never sent as SNI), or the server speaks plain HTTP.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use url::{Host, Url};

use super::options::BuildError;

/// Requests to the server go to `tls-server-name` in the URL, resolved to the server's
/// addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniRoute {
    /// The server URL's host, as written in the kubeconfig.
    server_host: String,
    /// `tls-server-name`: the host put into each request URL, hence the SNI.
    server_name: String,
    /// Where the server is: its IP, or what its DNS name resolved to when the client was built.
    addresses: Vec<SocketAddr>,
}

impl SniRoute {
    /// The route for `server` with `tls-server-name` = `server_name`, or `None` when the SNI
    /// already is right or cannot be changed (see the module documentation). `proxied` says
    /// whether a proxy carries requests to `server`.
    pub fn plan(
        server: &Url,
        server_name: Option<&str>,
        proxied: bool,
    ) -> Result<Option<SniRoute>, BuildError> {
        let Some(server_name) = server_name else {
            return Ok(None);
        };
        let (Some(host), Some(port)) = (server.host(), server.port_or_known_default()) else {
            return Ok(None);
        };
        let same_name = host.to_string().eq_ignore_ascii_case(server_name);
        if server.scheme() != "https" || same_name || server_name.parse::<IpAddr>().is_ok() {
            return Ok(None);
        }
        if Url::parse(&format!("https://{server_name}/")).is_err() {
            // Only reachable with insecure-skip-tls-verify, which skips parsing the name for
            // verification: a name that cannot be a URL host cannot be routed through either.
            return Ok(None);
        }
        if proxied {
            tracing::debug!(
                server_name,
                "a proxy carries requests to the API server, so tls-server-name is used to \
                 verify its certificate but not sent as SNI"
            );
            return Ok(None);
        }
        Ok(Some(SniRoute {
            server_host: host.to_string(),
            server_name: server_name.to_owned(),
            addresses: server_addresses(&host, port)?,
        }))
    }

    /// Tells the HTTP client that `tls-server-name` stands for the server's addresses.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        builder.resolve_to_addrs(&self.server_name, &self.addresses)
    }

    /// The URL to send a request for `url` to: the server's host replaced by `tls-server-name`.
    /// A URL for another host is returned unchanged.
    pub fn url_for(&self, url: &Url) -> Url {
        let mut routed = url.clone();
        let to_server = url
            .host()
            .is_some_and(|h| h.to_string() == self.server_host);
        // `plan` checked that the name is a valid URL host, so `set_host` does not fail; keeping
        // the original URL is only the fallback of an impossible case.
        if to_server && routed.set_host(Some(&self.server_name)).is_err() {
            return url.clone();
        }
        routed
    }

    /// The addresses `tls-server-name` resolves to for this client.
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.addresses
    }
}

/// The server's socket addresses: the IP itself, or the DNS name resolved now.
fn server_addresses(host: &Host<&str>, port: u16) -> Result<Vec<SocketAddr>, BuildError> {
    let addresses: Vec<SocketAddr> = match host {
        Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(*ip), port)],
        Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(*ip), port)],
        Host::Domain(name) => (*name, port)
            .to_socket_addrs()
            .map_err(|source| BuildError::ResolveServer {
                host: name.to_string(),
                source,
            })?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(BuildError::ResolveServer {
            host: host.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no addresses"),
        });
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn an_ip_server_is_routed_through_the_name() {
        let route = SniRoute::plan(&url("https://10.0.0.1:6443"), Some("kubernetes"), false)
            .unwrap()
            .unwrap();
        assert_eq!(route.addresses(), ["10.0.0.1:6443".parse().unwrap()]);
        let routed = route.url_for(&url("https://10.0.0.1:6443/api/v1/pods?limit=5"));
        assert_eq!(
            routed.as_str(),
            "https://kubernetes:6443/api/v1/pods?limit=5"
        );
    }

    #[test]
    fn ipv6_and_default_port_are_kept() {
        let route = SniRoute::plan(&url("https://[::1]/prefix/"), Some("api.example"), false)
            .unwrap()
            .unwrap();
        assert_eq!(route.addresses(), ["[::1]:443".parse().unwrap()]);
        let routed = route.url_for(&url("https://[::1]/prefix/version"));
        assert_eq!(routed.as_str(), "https://api.example/prefix/version");
    }

    #[test]
    fn a_dns_server_is_resolved_once() {
        let route = SniRoute::plan(&url("https://localhost:6443"), Some("kubernetes"), false)
            .unwrap()
            .unwrap();
        assert!(route.addresses().iter().all(|a| a.ip().is_loopback()));
        assert!(route.addresses().iter().all(|a| a.port() == 6443));
    }

    #[test]
    fn no_route_when_nothing_would_change_or_a_proxy_carries_it() {
        let server = url("https://10.0.0.1:6443");
        let plan = |name, proxied| SniRoute::plan(&server, name, proxied).unwrap();
        assert_eq!(plan(None, false), None);
        assert_eq!(plan(Some("10.0.0.1"), false), None);
        assert_eq!(plan(Some("192.168.0.9"), false), None);
        assert_eq!(plan(Some("kubernetes"), true), None);
        assert_eq!(plan(Some("not a host"), false), None);
        let http = SniRoute::plan(&url("http://10.0.0.1:8080"), Some("kubernetes"), false);
        assert_eq!(http.unwrap(), None);
    }

    #[test]
    fn urls_for_other_hosts_are_untouched() {
        let route = SniRoute::plan(&url("https://10.0.0.1:6443"), Some("kubernetes"), false)
            .unwrap()
            .unwrap();
        let other = url("https://10.0.0.2:6443/api");
        assert_eq!(route.url_for(&other), other);
    }
}
