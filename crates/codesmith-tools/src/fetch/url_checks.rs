//! The seven checks a URL passes before (and on every hop of) a fetch.
//!
//! Order: 1 scheme
//! allowlist, 2 network policy, 3 localhost names, 4 IP literals (every form a
//! URL parser accepts), 5 restricted ranges, 6 DNS with every address checked
//! and the connection pinned, 7 redirects re-running all checks (in `mod.rs`).
//! Checks 1–5 are synchronous and pure; check 6 asks the injected resolver.

use std::fmt;
use std::net::IpAddr;

use codesmith_policy::{
    AddressPolicy, NetworkDecision, NetworkPolicy, is_localhost_name, parse_ip_literal,
};
use url::{Host, Url};

use super::resolve::Resolver;

/// One of the seven checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlCheck {
    /// 1: only `http` and `https` (and a URL that parses at all).
    Scheme,
    /// 2: the network policy says `deny`.
    Policy,
    /// 3: `localhost` and `*.localhost`.
    Localhost,
    /// 4: a numeric host that is not a valid address.
    IpLiteral,
    /// 5: an address in a restricted range.
    RestrictedRange,
    /// 6: DNS failed, or some resolved address is restricted.
    Dns,
    /// 7: too many redirects or a bad `Location`.
    Redirect,
}

impl UrlCheck {
    /// Check number, 1–7.
    pub fn number(self) -> u8 {
        match self {
            UrlCheck::Scheme => 1,
            UrlCheck::Policy => 2,
            UrlCheck::Localhost => 3,
            UrlCheck::IpLiteral => 4,
            UrlCheck::RestrictedRange => 5,
            UrlCheck::Dns => 6,
            UrlCheck::Redirect => 7,
        }
    }

    /// Snake-case name used in refusals (`scheme`, `policy`, ...).
    pub fn name(self) -> &'static str {
        match self {
            UrlCheck::Scheme => "scheme",
            UrlCheck::Policy => "policy",
            UrlCheck::Localhost => "localhost",
            UrlCheck::IpLiteral => "ip_literal",
            UrlCheck::RestrictedRange => "restricted_range",
            UrlCheck::Dns => "dns",
            UrlCheck::Redirect => "redirect",
        }
    }
}

/// A check's refusal: which check and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlRefusal {
    /// The check that refused.
    pub check: UrlCheck,
    /// Why, in terms of the URL the caller gave.
    pub reason: String,
}

impl UrlRefusal {
    fn new(check: UrlCheck, reason: impl Into<String>) -> Self {
        UrlRefusal {
            check,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "check {} ({}): {}",
            self.check.number(),
            self.check.name(),
            self.reason
        )
    }
}

/// Where a URL that passed checks 1–5 points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A literal address (already passed check 5).
    Literal(IpAddr),
    /// A domain name still to resolve (check 6), lowercase ASCII (punycode).
    Domain(String),
}

/// Passed checks 1–5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The parsed URL.
    pub url: Url,
    /// Where it points.
    pub target: Target,
    /// The policy decision (never `Deny` here).
    pub decision: NetworkDecision,
}

/// Parses `raw` and runs checks 1–5. No I/O.
pub fn check_url(
    raw: &str,
    policy: &NetworkPolicy,
    addresses: &AddressPolicy,
) -> Result<Checked, UrlRefusal> {
    check_raw_authority(raw)?;
    let url = Url::parse(raw.trim()).map_err(|e| {
        UrlRefusal::new(
            UrlCheck::Scheme,
            format!("'{raw}' is not an absolute URL ({e})"),
        )
    })?;
    check_parsed(url, policy, addresses)
}

/// Check 1 on the text itself: the authority (between `//` and the first
/// `/`, `?` or `#`) may not hold a backslash, whitespace or control
/// character. URL parsers disagree on those (`http://a\\@b` is host `a` to a
/// WHATWG parser and host `b` to others), so they are refused, not guessed.
pub fn check_raw_authority(raw: &str) -> Result<(), UrlRefusal> {
    let raw = raw.trim();
    let after_scheme = match raw.split_once(':') {
        Some((scheme, rest))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            rest
        }
        _ => raw,
    };
    let Some(rest) = after_scheme.strip_prefix("//") else {
        return Ok(());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    match authority
        .chars()
        .find(|c| *c == '\\' || c.is_whitespace() || c.is_control())
    {
        Some(c) => Err(UrlRefusal::new(
            UrlCheck::Scheme,
            format!("the host part of '{raw}' contains {c:?}, which URL parsers read differently"),
        )),
        None => Ok(()),
    }
}

/// Runs checks 1–5 on an already parsed URL.
pub fn check_parsed(
    url: Url,
    policy: &NetworkPolicy,
    addresses: &AddressPolicy,
) -> Result<Checked, UrlRefusal> {
    // Check 1: scheme allowlist.
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlRefusal::new(
            UrlCheck::Scheme,
            format!(
                "scheme '{}' is not allowed; only http and https are",
                url.scheme()
            ),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlRefusal::new(
            UrlCheck::Scheme,
            "credentials in the URL (user@host) are not allowed; send them in a header",
        ));
    }
    let Some(host) = url
        .host()
        .filter(|h| !matches!(h, Host::Domain(d) if d.trim_matches('.').is_empty()))
    else {
        return Err(UrlRefusal::new(UrlCheck::Scheme, "the URL has no host"));
    };
    let host_text = url.host_str().unwrap_or_default().to_string();
    // Check 2: network policy (Ask is settled by approval at dispatch time).
    let decision = policy.decide(&host_text);
    if decision == NetworkDecision::Deny {
        return Err(UrlRefusal::new(
            UrlCheck::Policy,
            format!("network call to '{host_text}' blocked by network policy"),
        ));
    }
    let literal = match host {
        Host::Ipv4(a) => Some(IpAddr::V4(a)),
        Host::Ipv6(a) => Some(IpAddr::V6(a)),
        Host::Domain(d) => {
            // Check 3: localhost names.
            if is_localhost_name(d) {
                return Err(UrlRefusal::new(
                    UrlCheck::Localhost,
                    format!("host '{d}' is the local machine"),
                ));
            }
            // Check 4: numeric hosts the URL parser left as names.
            parse_ip_literal(d).map_err(|e| UrlRefusal::new(UrlCheck::IpLiteral, e.to_string()))?
        }
    };
    let target = match literal {
        Some(ip) => {
            // Check 5: restricted ranges.
            addresses.check(ip).map_err(|r| {
                UrlRefusal::new(
                    UrlCheck::RestrictedRange,
                    format!("host '{host_text}' is an IP literal: {r}"),
                )
            })?;
            Target::Literal(ip)
        }
        None => Target::Domain(host_text.to_ascii_lowercase()),
    };
    Ok(Checked {
        url,
        target,
        decision,
    })
}

/// Longest wait for one name resolution.
pub const DNS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Check 6: resolves `host`, checks every address with check 5's table and
/// returns the address to pin (the first one). Any restricted address
/// refuses the whole name.
pub async fn resolve_and_check(
    host: &str,
    port: u16,
    resolver: &dyn Resolver,
    addresses: &AddressPolicy,
) -> Result<IpAddr, UrlRefusal> {
    let addrs = tokio::time::timeout(DNS_TIMEOUT, resolver.resolve(host, port))
        .await
        .map_err(|_| UrlRefusal::new(UrlCheck::Dns, format!("resolving '{host}' timed out")))?
        .map_err(|e| UrlRefusal::new(UrlCheck::Dns, format!("could not resolve '{host}' ({e})")))?;
    let Some(first) = addrs.first().copied() else {
        return Err(UrlRefusal::new(
            UrlCheck::Dns,
            format!("'{host}' resolved to no addresses"),
        ));
    };
    for ip in &addrs {
        addresses
            .check(*ip)
            .map_err(|r| UrlRefusal::new(UrlCheck::Dns, format!("'{host}' resolves to {r}")))?;
    }
    Ok(first)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use codesmith_policy::{HostPattern, NetworkDecision};

    fn check_of(raw: &str) -> Option<UrlCheck> {
        check_url(raw, &NetworkPolicy::default(), &AddressPolicy::new())
            .err()
            .map(|r| r.check)
    }

    #[test]
    fn check1_scheme_allowlist() {
        for raw in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://example.com/",
            "data:text/plain,hi",
            "javascript:alert(1)",
            "example.com/path",
            "",
            "http://user:pw@example.com/",
            "http://evil.com\\@127.0.0.1/",
            "http://a b@example.com/",
            "http://./",
            "//evil.test\\@127.0.0.1/",
        ] {
            assert_eq!(check_of(raw), Some(UrlCheck::Scheme), "{raw}");
        }
        assert_eq!(check_of("https://example.com/"), None);
        assert_eq!(check_of("HTTP://example.com/"), None);
    }

    #[test]
    fn raw_authority_check_ignores_paths() {
        assert!(check_raw_authority("/a//b\\c d").is_ok());
        assert!(check_raw_authority("https://ok.test/x y\\z").is_ok());
        assert!(check_raw_authority("https://a\\@b/").is_err());
        assert!(check_raw_authority("//a b/").is_err());
    }

    #[test]
    fn check2_policy_deny_only() {
        let policy = NetworkPolicy::new(
            NetworkDecision::Ask,
            vec![],
            vec![HostPattern::parse(".evil.test").unwrap()],
        );
        let r = check_url("https://x.evil.test/", &policy, &AddressPolicy::new()).unwrap_err();
        assert_eq!(r.check, UrlCheck::Policy);
        assert!(r.to_string().contains("blocked by network policy"));
        let ok = check_url("https://evil.test/", &policy, &AddressPolicy::new()).unwrap();
        assert_eq!(ok.decision, NetworkDecision::Ask);
    }

    #[test]
    fn check3_localhost_names() {
        for raw in [
            "http://localhost/",
            "http://LOCALHOST:8080/",
            "http://localhost./",
            "http://api.localhost/",
        ] {
            assert_eq!(check_of(raw), Some(UrlCheck::Localhost), "{raw}");
        }
    }

    #[test]
    fn check4_and_5_literal_forms() {
        for raw in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://100.64.1.1/",
            "http://198.18.0.1/",
            "http://0/",
            "http://[fd12::1]/",
            "http://①②⑦.0.0.1/",
        ] {
            assert_eq!(check_of(raw), Some(UrlCheck::RestrictedRange), "{raw}");
        }
        assert_eq!(check_of("http://8.8.8.8/"), None);
        assert_eq!(check_of("http://[2606:4700::1111]/"), None);
    }

    #[test]
    fn refusal_names_the_check() {
        let r = check_url(
            "http://2130706433/",
            &NetworkPolicy::default(),
            &AddressPolicy::new(),
        )
        .unwrap_err();
        assert_eq!(
            r.to_string(),
            "check 5 (restricted_range): host '127.0.0.1' is an IP literal: 127.0.0.1 is loopback"
        );
    }
}
