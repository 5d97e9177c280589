//! Network policy: may a network tool reach this host?
//!
//! Three states with a default: `allow`, `ask`, `deny`, the words of the exec
//! policy (`prompt` is accepted as an alias of `ask`). Rules that keep a typo from
//! loosening policy:
//! - an unknown value is read as `ask`, never as `allow`;
//! - a host matching both an allow and a deny pattern is denied;
//! - a missing `[network]` section means default `ask`.
//!
//! Host patterns: `example.com` matches exactly that host; `.example.com`
//! (or `*.example.com`) matches every subdomain but **not** `example.com`
//! itself — list both to match both; `*` matches every host.

use serde::Deserialize;

/// A policy verdict, ordered from loosest to strictest so `max` combines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NetworkDecision {
    /// Reach the host without asking.
    Allow,
    /// Ask the user at dispatch time (inline approval); passes at execution time.
    /// Written `ask` (or its alias `prompt`).
    Ask,
    /// Refuse; the only state that fails at execution time.
    Deny,
}

impl NetworkDecision {
    /// Reads a config value, case-insensitively: `allow`, `ask` (alias `prompt`) or
    /// `deny`. Anything else becomes [`NetworkDecision::Ask`], never `allow`.
    pub fn parse_lenient(value: &str) -> NetworkDecision {
        match value.trim().to_ascii_lowercase().as_str() {
            "allow" => NetworkDecision::Allow,
            "deny" => NetworkDecision::Deny,
            "ask" | "prompt" => NetworkDecision::Ask,
            // Fail closed: a typo asks rather than allows.
            _ => NetworkDecision::Ask,
        }
    }

    /// The config spelling: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkDecision::Allow => "allow",
            NetworkDecision::Ask => "ask",
            NetworkDecision::Deny => "deny",
        }
    }
}

/// The `[network]` section as written in config. Every field is optional.
///
/// ```toml
/// [network]
/// default = "ask"               # allow | ask (alias prompt) | deny; unknown => ask
/// allow = ["docs.rs", ".crates.io"]
/// deny = [".internal.example"]
/// trusted_fakeip_cidrs = ["198.18.0.0/15"]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NetworkConfig {
    /// Default decision text; absent or unknown means `ask`.
    pub default: Option<String>,
    /// Host patterns to allow.
    pub allow: Vec<String>,
    /// Host patterns to deny (wins over `allow`).
    pub deny: Vec<String>,
    /// CIDRs inside 198.18.0.0/15 to exempt from the address policy (TUN fake-IP
    /// proxies). Read by [`crate::AddressPolicy::from_config`]; others are ignored.
    pub trusted_fakeip_cidrs: Vec<String>,
}

/// One host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `*`: every host.
    Any,
    /// `example.com`: this host only.
    Exact(String),
    /// `.example.com`: strict subdomains of the stored suffix (`example.com`).
    Subdomains(String),
}

impl HostPattern {
    /// Parses one pattern (case-insensitive; a trailing dot is ignored).
    /// Returns `None` for an empty pattern or a bare `.`.
    pub fn parse(pattern: &str) -> Option<HostPattern> {
        let p = normalize_host(pattern);
        if p == "*" {
            return Some(HostPattern::Any);
        }
        let sub = p.strip_prefix("*.").or_else(|| p.strip_prefix('.'));
        match sub {
            Some(rest) if !rest.is_empty() && !rest.starts_with('.') => {
                Some(HostPattern::Subdomains(rest.to_string()))
            }
            Some(_) => None,
            None if p.is_empty() => None,
            None => Some(HostPattern::Exact(p)),
        }
    }

    /// True when the (already normalized) host matches.
    fn matches_normalized(&self, host: &str) -> bool {
        match self {
            HostPattern::Any => true,
            HostPattern::Exact(h) => h == host,
            HostPattern::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .and_then(|head| head.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty()),
        }
    }

    /// True when `host` matches (host is normalized first).
    pub fn matches(&self, host: &str) -> bool {
        self.matches_normalized(&normalize_host(host))
    }
}

/// Lowercases, trims, drops one trailing dot and IPv6 brackets.
pub fn normalize_host(host: &str) -> String {
    let h = host.trim();
    let h = h
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(h);
    let h = h.strip_suffix('.').unwrap_or(h);
    h.to_ascii_lowercase()
}

/// A resolved network policy. Build once from config; `decide` is pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    default: NetworkDecision,
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
}

impl Default for NetworkPolicy {
    /// Default `ask`, no patterns: what a missing `[network]` section means.
    fn default() -> Self {
        NetworkPolicy::new(NetworkDecision::Ask, Vec::new(), Vec::new())
    }
}

impl NetworkPolicy {
    /// A policy from parts.
    pub fn new(default: NetworkDecision, allow: Vec<HostPattern>, deny: Vec<HostPattern>) -> Self {
        NetworkPolicy {
            default,
            allow,
            deny,
        }
    }

    /// Builds from the `[network]` section; `None` (section missing) gives the
    /// default-`ask` policy. Unparseable patterns are dropped (an empty
    /// allow pattern never widens anything; an empty deny pattern is reported
    /// by [`NetworkPolicy::from_config_checked`]).
    pub fn from_config(section: Option<&NetworkConfig>) -> Self {
        Self::from_config_checked(section).0
    }

    /// Like [`NetworkPolicy::from_config`], also returning the patterns that
    /// could not be parsed, so the CLI can warn about them.
    pub fn from_config_checked(section: Option<&NetworkConfig>) -> (Self, Vec<String>) {
        let Some(cfg) = section else {
            return (NetworkPolicy::default(), Vec::new());
        };
        let mut rejected = Vec::new();
        let mut parse_all = |list: &[String]| -> Vec<HostPattern> {
            list.iter()
                .filter_map(|p| {
                    let parsed = HostPattern::parse(p);
                    if parsed.is_none() {
                        rejected.push(p.clone());
                    }
                    parsed
                })
                .collect()
        };
        let allow = parse_all(&cfg.allow);
        let deny = parse_all(&cfg.deny);
        let default = cfg
            .default
            .as_deref()
            .map_or(NetworkDecision::Ask, NetworkDecision::parse_lenient);
        (NetworkPolicy::new(default, allow, deny), rejected)
    }

    /// The default decision.
    pub fn default_decision(&self) -> NetworkDecision {
        self.default
    }

    /// Decides for `host`: deny pattern wins, then allow pattern, then default.
    pub fn decide(&self, host: &str) -> NetworkDecision {
        let host = normalize_host(host);
        if self.deny.iter().any(|p| p.matches_normalized(&host)) {
            NetworkDecision::Deny
        } else if self.allow.iter().any(|p| p.matches_normalized(&host)) {
            NetworkDecision::Allow
        } else {
            self.default
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use NetworkDecision::*;

    fn cfg(default: Option<&str>, allow: &[&str], deny: &[&str]) -> NetworkConfig {
        NetworkConfig {
            default: default.map(str::to_string),
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            trusted_fakeip_cidrs: Vec::new(),
        }
    }

    #[test]
    fn missing_section_prompts() {
        let p = NetworkPolicy::from_config(None);
        assert_eq!(p.decide("example.com"), Ask);
        assert_eq!(p.default_decision(), Ask);
    }

    #[test]
    fn unknown_or_typo_values_prompt_never_allow() {
        for v in ["alow", "yes", "true", "", "ALLOWED", "off"] {
            assert_eq!(NetworkDecision::parse_lenient(v), Ask, "{v}");
        }
        assert_eq!(NetworkDecision::parse_lenient(" Allow "), Allow);
        assert_eq!(NetworkDecision::parse_lenient("DENY"), Deny);
        let p = NetworkPolicy::from_config(Some(&cfg(Some("alow"), &[], &[])));
        assert_eq!(p.decide("x.org"), Ask);
        let p = NetworkPolicy::from_config(Some(&cfg(None, &[], &[])));
        assert_eq!(p.decide("x.org"), Ask);
    }

    #[test]
    fn ask_is_the_word_and_prompt_its_alias() {
        for v in ["ask", "ASK", " prompt ", "Prompt"] {
            assert_eq!(NetworkDecision::parse_lenient(v), Ask, "{v}");
        }
        assert_eq!(Ask.as_str(), "ask");
        let p = NetworkPolicy::from_config(Some(&cfg(Some("ask"), &["docs.rs"], &[])));
        assert_eq!(p.decide("docs.rs"), Allow);
        assert_eq!(p.decide("x.org"), Ask);
    }

    #[test]
    fn leading_dot_matches_subdomains_not_apex() {
        let p = NetworkPolicy::from_config(Some(&cfg(Some("deny"), &[".example.com"], &[])));
        assert_eq!(p.decide("api.example.com"), Allow);
        assert_eq!(p.decide("a.b.example.com"), Allow);
        assert_eq!(p.decide("example.com"), Deny);
        assert_eq!(p.decide("badexample.com"), Deny);
        assert_eq!(p.decide("example.com.evil.net"), Deny);
        let star = HostPattern::parse("*.example.com").unwrap();
        assert!(star.matches("A.Example.COM."));
        assert!(!star.matches("example.com"));
    }

    #[test]
    fn exact_pattern_matches_only_itself() {
        let p = NetworkPolicy::from_config(Some(&cfg(Some("deny"), &["example.com"], &[])));
        assert_eq!(p.decide("example.com"), Allow);
        assert_eq!(p.decide("EXAMPLE.com."), Allow);
        assert_eq!(p.decide("www.example.com"), Deny);
    }

    #[test]
    fn deny_wins_over_allow() {
        let p = NetworkPolicy::from_config(Some(&cfg(
            Some("allow"),
            &["example.com", ".example.com", "*"],
            &["secret.example.com"],
        )));
        assert_eq!(p.decide("secret.example.com"), Deny);
        assert_eq!(p.decide("www.example.com"), Allow);
        let p = NetworkPolicy::from_config(Some(&cfg(Some("prompt"), &["*"], &[".corp"])));
        assert_eq!(p.decide("db.corp"), Deny);
        assert_eq!(p.decide("corp"), Allow);
    }

    #[test]
    fn full_matrix_of_default_and_lists() {
        for default in [Allow, Ask, Deny] {
            let c = cfg(Some(default.as_str()), &["a.test"], &["d.test"]);
            let p = NetworkPolicy::from_config(Some(&c));
            assert_eq!(p.decide("a.test"), Allow);
            assert_eq!(p.decide("d.test"), Deny);
            assert_eq!(p.decide("other.test"), default);
        }
    }

    #[test]
    fn bad_patterns_are_reported_and_ignored() {
        let (p, rejected) =
            NetworkPolicy::from_config_checked(Some(&cfg(Some("deny"), &["", ".", ".."], &[])));
        assert_eq!(rejected, vec!["", ".", ".."]);
        assert_eq!(p.decide("anything"), Deny);
    }

    #[test]
    fn decisions_order_from_loose_to_strict() {
        assert_eq!([Allow, Deny, Ask].into_iter().max(), Some(Deny));
        assert!(Allow < Ask);
    }
}
