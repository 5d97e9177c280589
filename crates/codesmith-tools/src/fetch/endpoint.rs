//! The rule for an endpoint the user configured (an `[mcp_servers.X] url`, the
//! `[web_search]` backend): which URLs it may use and where the connection goes.
//! `fetch_url`'s hops to a configured origin and the MCP HTTP transport (with its OAuth
//! requests) both check here.
//!
//! The user wrote the URL, so it is not held to `fetch_url`'s public-internet-only rule:
//! loopback and private-network endpoints are fine. What still applies:
//! - only `http` and `https`, with no credentials in the URL (the configuration names an
//!   environment variable for a key or token instead);
//! - plain `http://` only to a loopback host (`localhost`, `127.0.0.0/8`, `::1`) unless
//!   the endpoint's configuration sets `allow_plain_http = true`, since a key or token
//!   would otherwise cross the network unencrypted;
//! - the `[network] deny` patterns of the user config (deny wins, as for `fetch_url`);
//! - every address the host resolves to is checked, and only public, loopback, private
//!   (RFC 1918, IPv6 unique-local, carrier-grade NAT) and the TUN fake-IP range pass:
//!   link-local and cloud-metadata addresses and the rest of the restricted table are
//!   refused. The caller pins the connection to the checked address (no second lookup
//!   can rebind it).
//!
//! An endpoint the configured one names in turn (an MCP server's OAuth metadata) passes a
//! stricter rule ([`check_named_endpoint`]).

use std::net::IpAddr;
use std::time::Duration;

use codesmith_policy::{
    NetworkDecision, NetworkPolicy, RestrictedRange, is_localhost_name, parse_ip_literal,
    restricted_range,
};
use url::{Host, Url};

use super::resolve::Resolver;

/// A checked endpoint: the URL and where the connection goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL as parsed.
    pub url: Url,
    /// The host name to pin (empty for an IP literal).
    pub host: String,
    /// The checked address the connection is pinned to.
    pub ip: IpAddr,
}

/// The ranges a user-configured endpoint may reach besides public addresses.
fn reachable(range: RestrictedRange) -> bool {
    matches!(
        range,
        RestrictedRange::Loopback
            | RestrictedRange::Private
            | RestrictedRange::UniqueLocal
            | RestrictedRange::SharedCgnat
            | RestrictedRange::Benchmark
    )
}

fn check_address(ip: IpAddr) -> Result<(), String> {
    match restricted_range(ip) {
        None => Ok(()),
        Some(r) if reachable(r.range) => Ok(()),
        Some(r) => Err(format!(
            "its address {r}, which a user-configured endpoint may not use"
        )),
    }
}

/// `url`'s host: a domain name to resolve (lowercase) and no address, or an empty name
/// and the literal address.
///
/// Errors: "host is not a valid address (…)" or "host is missing".
fn host_of(url: &Url) -> Result<(String, Option<IpAddr>), String> {
    match url.host() {
        Some(Host::Domain(d)) => match parse_ip_literal(d) {
            Ok(Some(ip)) => Ok((String::new(), Some(ip))),
            Ok(None) => Ok((d.to_ascii_lowercase(), None)),
            Err(e) => Err(format!("host is not a valid address ({e:?})")),
        },
        Some(Host::Ipv4(ip)) => Ok((String::new(), Some(IpAddr::V4(ip)))),
        Some(Host::Ipv6(ip)) => Ok((String::new(), Some(IpAddr::V6(ip)))),
        None => Err("host is missing".into()),
    }
}

/// Parses `raw` and checks it against the rules in the module documentation, resolving a
/// domain through `resolver`.
///
/// Errors: a sentence saying what was refused and how to fix it.
pub async fn check_endpoint(
    raw: &str,
    allow_plain_http: bool,
    network: &NetworkPolicy,
    resolver: &dyn Resolver,
) -> Result<Endpoint, String> {
    let url = Url::parse(raw).map_err(|e| format!("its url `{raw}` does not parse ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "its url must start with https:// (or http:// for a local endpoint), not {}://",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "its url carries credentials; put the key or token in the environment variable \
             its configuration names instead"
                .into(),
        );
    }
    let (host, literal) = host_of(&url).map_err(|e| format!("its url's {e}"))?;
    let label = url.host_str().unwrap_or_default().to_string();
    if network.decide(&label) == NetworkDecision::Deny {
        return Err(format!(
            "the [network] policy in config.toml denies the host {label}"
        ));
    }
    let loopback = is_localhost_name(&label)
        || literal.is_some_and(|ip| {
            restricted_range(ip).is_some_and(|r| r.range == RestrictedRange::Loopback)
        });
    if url.scheme() == "http" && !loopback && !allow_plain_http {
        return Err(format!(
            "its url uses plain http:// to {label}, which is not loopback; use https://, or set \
             allow_plain_http = true in its configuration"
        ));
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let ips = match literal {
        Some(ip) => vec![ip],
        None => tokio::time::timeout(Duration::from_secs(5), resolver.resolve(&host, port))
            .await
            .map_err(|_| format!("resolving {host} timed out"))?
            .map_err(|e| format!("could not resolve {host} ({e})"))?,
    };
    let Some(&first) = ips.first() else {
        return Err(format!("{host} resolved to no addresses"));
    };
    for ip in &ips {
        check_address(*ip)?;
    }
    Ok(Endpoint {
        url,
        host,
        ip: first,
    })
}

/// Parses `raw`, an endpoint the server's OAuth metadata names on another origin than
/// the configured URL (an authorization server, its token or registration endpoint),
/// and checks it under the rule for URLs CodeSmith did not get from the user:
/// - only `https`, or plain `http` to a loopback address when `server` is loopback
///   too; no credentials in the URL;
/// - the `[network] deny` patterns of the user config refuse it (deny wins);
/// - every address the host resolves to must be public, or of the class of the
///   configured server's own address (loopback beside a loopback server, a private
///   network beside a private-network server); link-local and cloud-metadata addresses
///   and the rest of the restricted table are always refused. The connection is pinned
///   to the checked address.
///
/// Errors: a sentence that names the endpoint and what was refused.
pub async fn check_named_endpoint(
    raw: &str,
    server: &Endpoint,
    network: &NetworkPolicy,
    resolver: &dyn Resolver,
) -> Result<Endpoint, String> {
    let shown = codesmith_policy::visible_controls(raw);
    let refused = |why: String| format!("the endpoint {shown} is refused: {why}");
    let url = Url::parse(raw).map_err(|e| refused(format!("it does not parse ({e})")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("it carries credentials".into()));
    }
    let (host, literal) = host_of(&url).map_err(|e| refused(format!("its {e}")))?;
    let label = url.host_str().unwrap_or_default().to_string();
    if network.decide(&label) == NetworkDecision::Deny {
        return Err(refused(format!(
            "the [network] policy in config.toml denies the host {label}"
        )));
    }
    let server_range = restricted_range(server.ip).map(|r| r.range);
    let allowed = |ip: IpAddr| -> Result<(), String> {
        match restricted_range(ip) {
            None => Ok(()),
            Some(r) if reachable(r.range) && Some(r.range) == server_range => Ok(()),
            Some(r) => Err(format!(
                "its address {r}, which an endpoint named by the server's metadata may not use \
                 (only public addresses, or the configured server's own kind)"
            )),
        }
    };
    if let Some(ip) = literal {
        allowed(ip).map_err(refused)?;
    }
    let loopback_server = server_range == Some(RestrictedRange::Loopback);
    match url.scheme() {
        "https" => {}
        "http" if loopback_server => {}
        other => {
            return Err(refused(format!("it must use https://, not {other}://")));
        }
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let ips = match literal {
        Some(ip) => vec![ip],
        None => tokio::time::timeout(Duration::from_secs(5), resolver.resolve(&host, port))
            .await
            .map_err(|_| refused(format!("resolving {host} timed out")))?
            .map_err(|e| refused(format!("could not resolve {host} ({e})")))?,
    };
    let Some(&first) = ips.first() else {
        return Err(refused(format!("{host} resolved to no addresses")));
    };
    for ip in &ips {
        allowed(*ip).map_err(refused)?;
    }
    if url.scheme() == "http"
        && ips
            .iter()
            .any(|ip| restricted_range(*ip).is_none_or(|r| r.range != RestrictedRange::Loopback))
    {
        return Err(refused(
            "plain http:// is only for loopback addresses".into(),
        ));
    }
    Ok(Endpoint {
        url,
        host,
        ip: first,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fetch::resolve::StaticResolver;

    async fn check(raw: &str, plain: bool, resolver: &StaticResolver) -> Result<Endpoint, String> {
        check_endpoint(raw, plain, &NetworkPolicy::default(), resolver).await
    }

    #[tokio::test]
    async fn plain_http_only_to_loopback_unless_allowed() {
        let r = StaticResolver::new()
            .answer("mcp.example.com", &["93.184.216.34".parse().unwrap()])
            .answer("lan.example", &["10.0.0.7".parse().unwrap()]);
        assert!(check("http://127.0.0.1:8000/mcp", false, &r).await.is_ok());
        assert!(check("http://[::1]:8000/mcp", false, &r).await.is_ok());
        let e = check("http://mcp.example.com/mcp", false, &r)
            .await
            .unwrap_err();
        assert!(e.contains("allow_plain_http"), "{e}");
        assert!(check("http://mcp.example.com/mcp", true, &r).await.is_ok());
        let ok = check("https://mcp.example.com/mcp", false, &r)
            .await
            .unwrap();
        assert_eq!(ok.ip, "93.184.216.34".parse::<IpAddr>().unwrap());
        assert_eq!(ok.host, "mcp.example.com");
        // A private-network server over https is the user's choice.
        assert!(check("https://lan.example/mcp", false, &r).await.is_ok());
    }

    #[tokio::test]
    async fn metadata_credentials_and_denied_hosts_are_refused() {
        let r =
            StaticResolver::new().answer("sneaky.example", &["169.254.169.254".parse().unwrap()]);
        let e = check("https://169.254.169.254/mcp", true, &r)
            .await
            .unwrap_err();
        assert!(e.contains("link-local"), "{e}");
        let e = check("https://sneaky.example/mcp", true, &r)
            .await
            .unwrap_err();
        assert!(e.contains("link-local"), "{e}");
        let e = check("https://u:pw@a.example/mcp", true, &r)
            .await
            .unwrap_err();
        assert!(e.contains("credentials") && !e.contains("pw"), "{e}");
        assert!(check("ftp://a.example/", true, &r).await.is_err());
        let deny = NetworkPolicy::new(
            NetworkDecision::Allow,
            vec![],
            vec![codesmith_policy::HostPattern::parse(".corp.example").unwrap()],
        );
        let e = check_endpoint("https://mcp.corp.example/", false, &deny, &r)
            .await
            .unwrap_err();
        assert!(e.contains("denies"), "{e}");
    }

    #[tokio::test]
    async fn endpoints_named_by_metadata_are_held_to_the_public_rule() {
        let r = StaticResolver::new()
            .answer("auth.example", &["93.184.216.34".parse().unwrap()])
            .answer("sso.corp", &["10.0.0.9".parse().unwrap()])
            .answer("sneaky.example", &["169.254.169.254".parse().unwrap()]);
        let none = NetworkPolicy::default();
        let public = check(
            "https://mcp.example.com/mcp",
            false,
            &StaticResolver::new().answer("mcp.example.com", &["93.184.216.34".parse().unwrap()]),
        )
        .await
        .unwrap();
        let local = check("http://127.0.0.1:8000/mcp", false, &r).await.unwrap();
        let lan = check("https://10.0.0.7/mcp", false, &r).await.unwrap();
        let named = |raw: &'static str, server: &Endpoint| {
            let (r, none, server) = (&r, &none, server.clone());
            async move { check_named_endpoint(raw, &server, none, r).await }
        };
        assert!(named("https://auth.example/token", &public).await.is_ok());
        // Metadata addresses, literal or resolved, are refused beside any server.
        for server in [&public, &local, &lan] {
            for raw in [
                "http://169.254.169.254/token",
                "https://sneaky.example/token",
            ] {
                let e = named(raw, server).await.unwrap_err();
                assert!(e.contains(raw) && e.contains("link-local"), "{e}");
            }
        }
        // Loopback and private addresses only beside a server of that kind.
        assert!(named("http://127.0.0.1:9000/token", &local).await.is_ok());
        let e = named("http://127.0.0.1:9000/token", &public)
            .await
            .unwrap_err();
        assert!(e.contains("127.0.0.1:9000/token"), "{e}");
        assert!(named("https://sso.corp/token", &lan).await.is_ok());
        assert!(named("https://sso.corp/token", &public).await.is_err());
        assert!(named("https://sso.corp/token", &local).await.is_err());
        // Plain http only to loopback; the [network] deny list applies.
        assert!(named("http://auth.example/token", &public).await.is_err());
        let deny = NetworkPolicy::new(
            NetworkDecision::Allow,
            vec![],
            vec![codesmith_policy::HostPattern::parse("auth.example").unwrap()],
        );
        let e = check_named_endpoint("https://auth.example/token", &public, &deny, &r)
            .await
            .unwrap_err();
        assert!(e.contains("denies the host auth.example"), "{e}");
    }
}
