//! Address checks against server-side request forgery (SSRF).
//!
//! Pure checks used by `fetch_url` (part of its seven URL checks): recognise a
//! host that is an IP literal in any form a URL parser accepts, and refuse
//! addresses in restricted ranges. IPv6 addresses that carry an IPv4 address
//! (mapped, compatible, translated, NAT64, 6to4, Teredo) are unwrapped first,
//! so `::ffff:127.0.0.1` is loopback.
//!
//! The only configurable exemption is `trusted_fakeip_cidrs`, which can open
//! parts of 198.18.0.0/15 (the fake-IP range of TUN proxies) and nothing else.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::network::NetworkConfig;

/// A CIDR block (`10.0.0.0/8`, `fc00::/7`). Host bits are cleared on parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// A block from an address and a prefix length (clamped to 32 or 128).
    pub fn new(addr: IpAddr, prefix: u8) -> Cidr {
        let prefix = match addr {
            IpAddr::V4(_) => prefix.min(32),
            IpAddr::V6(_) => prefix.min(128),
        };
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(prefix))),
        };
        Cidr { addr, prefix }
    }

    /// Parses `ADDR/LEN` or a bare address (a /32 or /128). `None` when malformed.
    pub fn parse(text: &str) -> Option<Cidr> {
        let text = text.trim();
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match len {
            Some(l) => l.parse::<u8>().ok().filter(|&p| p <= max)?,
            None => max,
        };
        Some(Cidr::new(addr, prefix))
    }

    /// True when `ip` lies in the block (an IPv4 block never holds an IPv6 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                u32::from(a) & mask32(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask128(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }

    /// True when every address of `self` lies inside `outer`.
    pub fn is_within(&self, outer: &Cidr) -> bool {
        self.prefix >= outer.prefix && outer.contains(self.addr)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn mask32(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn mask128(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    }
}

/// Why an address is restricted. `name()` gives the wording used in refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RestrictedRange {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 0.0.0.0/8 ("this network"), ::.
    Unspecified,
    /// RFC 1918: 10/8, 172.16/12, 192.168/16.
    Private,
    /// 169.254/16 (includes cloud metadata 169.254.169.254), fe80::/10.
    LinkLocal,
    /// Carrier-grade NAT 100.64.0.0/10.
    SharedCgnat,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 198.18.0.0/15 (benchmarking; also the TUN fake-IP range), 2001:2::/48.
    Benchmark,
    /// 240.0.0.0/4 (class E) and other reserved blocks (192.0.0.0/24,
    /// 192.88.99.0/24, IPv6 outside 2000::/3 that carries no IPv4).
    Reserved,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// IPv6 unique local fc00::/7.
    UniqueLocal,
    /// IPv6 site-local fec0::/10 (deprecated).
    SiteLocal,
    /// IPv6 discard-only 100::/64 and local-use NAT64 64:ff9b:1::/48.
    Discard,
    /// A cloud provider's instance-metadata or host-agent address outside link-local
    /// (which is refused as [`RestrictedRange::LinkLocal`]): the exact addresses in
    /// [`CLOUD_METADATA_V4`] and [`CLOUD_METADATA_V6`]. Never reachable, not even by a
    /// user-configured endpoint that may reach private or carrier-grade NAT ranges.
    CloudMetadata,
}

/// Cloud metadata addresses outside 169.254/16: Alibaba Cloud's 100.100.100.200 (in
/// carrier-grade NAT space), Azure's WireServer 168.63.129.16 (a public address) and
/// Oracle Cloud's 192.0.0.192.
pub const CLOUD_METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
    Ipv4Addr::new(192, 0, 0, 192),
];

/// Cloud metadata addresses in IPv6 unique local space: AWS's instance metadata
/// `fd00:ec2::254` and EKS pod identity `fd00:ec2::23`.
pub const CLOUD_METADATA_V6: &[Ipv6Addr] = &[
    Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
    Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23),
];

impl RestrictedRange {
    /// Short lowercase name for messages (`loopback`, `private (RFC 1918)`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RestrictedRange::Loopback => "loopback",
            RestrictedRange::Unspecified => "unspecified",
            RestrictedRange::Private => "private (RFC 1918)",
            RestrictedRange::LinkLocal => "link-local / cloud metadata",
            RestrictedRange::SharedCgnat => "carrier-grade NAT (100.64.0.0/10)",
            RestrictedRange::Multicast => "multicast",
            RestrictedRange::Broadcast => "broadcast",
            RestrictedRange::Benchmark => "benchmark (198.18.0.0/15)",
            RestrictedRange::Reserved => "reserved",
            RestrictedRange::Documentation => "documentation",
            RestrictedRange::UniqueLocal => "IPv6 unique local",
            RestrictedRange::SiteLocal => "IPv6 site-local",
            RestrictedRange::Discard => "IPv6 discard / local NAT64",
            RestrictedRange::CloudMetadata => "a cloud metadata address",
        }
    }
}

/// The IPv4 address an IPv6 address carries, if any: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, not `::` or `::1`), NAT64 well-known (`64:ff9b::/96`), 6to4
/// (`2002::/16`) and Teredo (`2001::/32`, client address).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from(bits as u32);
    let seg = ip.segments();
    if bits >> 32 == 0xffff || bits >> 32 == 0xffff_0000 {
        return Some(low32);
    }
    if bits >> 32 == 0 && bits > 1 {
        return Some(low32);
    }
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return Some(low32);
    }
    if seg[0] == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    if seg[0] == 0x2001 && seg[1] == 0 {
        return Some(Ipv4Addr::from(!(bits as u32)));
    }
    None
}

/// The restricted range an IPv4 address falls in, if any.
pub fn restricted_v4(ip: Ipv4Addr) -> Option<RestrictedRange> {
    use RestrictedRange::*;
    if CLOUD_METADATA_V4.contains(&ip) {
        return Some(CloudMetadata);
    }
    let o = ip.octets();
    let r = match o {
        [0, ..] => Unspecified,
        [10, ..] | [172, 16..=31, ..] | [192, 168, ..] => Private,
        [100, 64..=127, ..] => SharedCgnat,
        [127, ..] => Loopback,
        [169, 254, ..] => LinkLocal,
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => Documentation,
        [192, 0, 0, _] | [192, 88, 99, _] => Reserved,
        [198, 18..=19, ..] => Benchmark,
        [224..=239, ..] => Multicast,
        [255, 255, 255, 255] => Broadcast,
        [240..=255, ..] => Reserved,
        _ => return None,
    };
    Some(r)
}

/// The restricted range an IPv6 address falls in, if any, without unwrapping.
fn restricted_v6_native(ip: Ipv6Addr) -> Option<RestrictedRange> {
    use RestrictedRange::*;
    let bits = u128::from(ip);
    let in_block = |net: u128, prefix: u8| bits & mask128(prefix) == net;
    let r = if CLOUD_METADATA_V6.contains(&ip) {
        CloudMetadata
    } else if bits == 0 {
        Unspecified
    } else if bits == 1 {
        Loopback
    } else if in_block(0xfc00 << 112, 7) {
        UniqueLocal
    } else if in_block(0xfe80 << 112, 10) {
        LinkLocal
    } else if in_block(0xfec0 << 112, 10) {
        SiteLocal
    } else if in_block(0xff00 << 112, 8) {
        Multicast
    } else if in_block(0x2001_0db8 << 96, 32) || in_block(0x3fff << 112, 20) {
        Documentation
    } else if in_block(0x2001_0002 << 96, 48) {
        Benchmark
    } else if in_block(0x0100 << 112, 64) || in_block(0x0064_ff9b_0001 << 80, 48) {
        Discard
    } else if !in_block(0x2000 << 112, 3) {
        Reserved
    } else {
        return None;
    };
    Some(r)
}

/// Where a restricted verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restricted {
    /// The address as given.
    pub ip: IpAddr,
    /// The IPv4 address unwrapped from `ip`, when that is what was judged.
    pub via: Option<Ipv4Addr>,
    /// The range.
    pub range: RestrictedRange,
}

impl fmt::Display for Restricted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.via {
            Some(v4) => write!(
                f,
                "{} carries {} which is {}",
                self.ip,
                v4,
                self.range.name()
            ),
            None => write!(f, "{} is {}", self.ip, self.range.name()),
        }
    }
}

/// The restricted range `ip` falls in (`None` for a public address), judged against the
/// restricted table with embedded IPv4 unwrapped.
pub fn restricted_range(ip: IpAddr) -> Option<Restricted> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4).map(|range| Restricted {
            ip,
            via: None,
            range,
        }),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return restricted_v4(v4).map(|range| Restricted {
                    ip,
                    via: Some(v4),
                    range,
                });
            }
            restricted_v6_native(v6).map(|range| Restricted {
                ip,
                via: None,
                range,
            })
        }
    }
}

/// A host that looks like an IP literal but is not a valid one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedLiteral {
    /// The host text.
    pub host: String,
}

impl fmt::Display for MalformedLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host '{}' looks like an IP address but is not a valid one",
            self.host
        )
    }
}

/// Reads `host` as an IP literal in every form URL parsers accept.
///
/// - `[v6]` (brackets) or a bare IPv6 text;
/// - IPv4 with 1–4 parts, each decimal, octal (leading `0`) or hex (`0x`),
///   the last part filling the remaining bytes: `2130706433`, `0177.0.0.1`,
///   `0x7f.1`, `127.1`; one trailing dot is allowed (WHATWG URL Standard,
///   IPv4 parser).
///
/// Returns `Ok(None)` for an ordinary domain name, `Err` for a host whose
/// last label is numeric but which is not a valid address (`1.2.3.4.5`,
/// `256.1.1.1`, `0x7g.1`). A bare `0x` part reads as zero, as in WHATWG.
pub fn parse_ip_literal(host: &str) -> Result<Option<IpAddr>, MalformedLiteral> {
    let bad = || MalformedLiteral {
        host: host.to_string(),
    };
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(bad)?;
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| Some(IpAddr::V6(a)))
            .map_err(|_| bad());
    }
    if host.contains(':') {
        return host
            .parse::<Ipv6Addr>()
            .map(|a| Some(IpAddr::V6(a)))
            .map_err(|_| bad());
    }
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = trimmed.split('.').collect();
    let Some(last) = parts.last() else {
        return Ok(None);
    };
    if !ends_in_number(last) {
        return Ok(None);
    }
    parse_v4_parts(&parts)
        .map(|a| Some(IpAddr::V4(a)))
        .ok_or_else(bad)
}

fn ends_in_number(last: &str) -> bool {
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    match last.strip_prefix("0x").or_else(|| last.strip_prefix("0X")) {
        Some(hex) => hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => false,
    }
}

fn parse_v4_part(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = match part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None if part.len() > 1 && part.starts_with('0') => (&part[1..], 8),
        None => (part, 10),
    };
    if digits.is_empty() {
        return Some(0);
    }
    // Cap the digit count so a long string cannot overflow u64.
    if digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn parse_v4_parts(parts: &[&str]) -> Option<Ipv4Addr> {
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let nums: Vec<u64> = parts
        .iter()
        .map(|p| parse_v4_part(p))
        .collect::<Option<_>>()?;
    let (last, head) = nums.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let last_bits = 8 * (5 - nums.len() as u32);
    if *last >= 1u64 << last_bits {
        return None;
    }
    let mut value: u64 = *last;
    for (i, &n) in head.iter().enumerate() {
        value |= n << (8 * (3 - i as u32));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

/// The fake-IP range of TUN proxies; the only range `trusted_fakeip_cidrs` may open.
pub const FAKEIP_RANGE: &str = "198.18.0.0/15";

/// The configured address policy: the restricted table plus the narrow
/// fake-IP exemption. `Default` exempts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    fakeip: Vec<Cidr>,
    #[cfg(any(test, feature = "test-util"))]
    test_exempt: Vec<Cidr>,
}

impl AddressPolicy {
    /// A policy that exempts nothing.
    pub fn new() -> AddressPolicy {
        AddressPolicy::default()
    }

    /// Reads `trusted_fakeip_cidrs`; entries that do not parse or are not
    /// wholly inside 198.18.0.0/15 are returned as rejected and ignored.
    pub fn from_config(cfg: Option<&NetworkConfig>) -> (AddressPolicy, Vec<String>) {
        let mut policy = AddressPolicy::new();
        let mut rejected = Vec::new();
        for entry in cfg
            .map(|c| c.trusted_fakeip_cidrs.as_slice())
            .unwrap_or(&[])
        {
            if !policy.trust_fakeip(entry) {
                rejected.push(entry.clone());
            }
        }
        (policy, rejected)
    }

    /// Trusts one fake-IP CIDR. Returns false (and trusts nothing) unless it
    /// parses and lies wholly inside 198.18.0.0/15.
    pub fn trust_fakeip(&mut self, cidr: &str) -> bool {
        let (Some(c), Some(outer)) = (Cidr::parse(cidr), Cidr::parse(FAKEIP_RANGE)) else {
            return false;
        };
        if !c.is_within(&outer) {
            return false;
        }
        self.fakeip.push(c);
        true
    }

    /// Exempts a block from every range check. For hermetic tests that serve
    /// on 127.0.0.1; never fed from configuration, and compiled only into test builds
    /// (`cfg(test)` or the `test-util` feature), so a release binary has no exemption.
    #[cfg(any(test, feature = "test-util"))]
    pub fn with_test_exemption(mut self, cidr: Cidr) -> AddressPolicy {
        self.test_exempt.push(cidr);
        self
    }

    /// Checks one address: `Err` names the range it is restricted by.
    pub fn check(&self, ip: IpAddr) -> Result<(), Restricted> {
        #[cfg(any(test, feature = "test-util"))]
        if self.test_exempt.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        let Some(hit) = restricted_range(ip) else {
            return Ok(());
        };
        if hit.range == RestrictedRange::Benchmark {
            let judged = hit.via.map_or(ip, IpAddr::V4);
            if self.fakeip.iter().any(|c| c.contains(judged)) {
                return Ok(());
            }
        }
        Err(hit)
    }
}

/// True for `localhost` and names under `.localhost` (RFC 6761), any case,
/// with or without a trailing dot.
pub fn is_localhost_name(host: &str) -> bool {
    let h = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use RestrictedRange::*;

    fn lit(h: &str) -> IpAddr {
        parse_ip_literal(h).unwrap().unwrap()
    }

    fn range(h: &str) -> Option<RestrictedRange> {
        restricted_range(lit(h)).map(|r| r.range)
    }

    #[test]
    fn cloud_metadata_addresses_have_their_own_class_in_every_form() {
        for h in [
            "100.100.100.200",
            "168.63.129.16",
            "192.0.0.192",
            "[fd00:ec2::254]",
            "[FD00:0EC2:0:0:0:0:0:254]",
            "[fd00:ec2::23]",
            "[::ffff:100.100.100.200]",
            "[64:ff9b::a83f:8110]",
            "0x646464c8",
        ] {
            assert_eq!(range(h), Some(CloudMetadata), "{h}");
        }
        assert_eq!(range("100.100.100.200"), Some(CloudMetadata));
        assert_eq!(range("[fd00:ec2::254]"), Some(CloudMetadata));
        // Their neighbours keep their ranges.
        assert_eq!(range("100.100.100.201"), Some(SharedCgnat));
        assert_eq!(range("[fd00:ec2::255]"), Some(UniqueLocal));
        assert_eq!(range("168.63.129.17"), None);
        assert_eq!(range("169.254.169.254"), Some(LinkLocal));
    }

    #[test]
    fn ipv4_forms_url_parsers_accept() {
        let lo = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        for form in [
            "127.0.0.1",
            "2130706433",
            "0177.0.0.1",
            "0x7f.1",
            "0X7F.0.0.1",
            "127.1",
            "127.0.1",
            "0x7f000001",
            "017700000001",
            "127.0.0.1.",
            "0177.0.0.01",
            "127.000.000.001",
        ] {
            assert_eq!(lit(form), lo, "{form}");
        }
        assert_eq!(lit("0"), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert_eq!(lit("3232235521"), IpAddr::V4(Ipv4Addr::new(192, 168, 0, 1)));
    }

    #[test]
    fn domains_are_not_literals_and_bad_numbers_are_malformed() {
        for d in [
            "example.com",
            "1337.net",
            "1.2.3.a",
            "a.b-c.de",
            "xn--n3h.ws",
        ] {
            assert_eq!(parse_ip_literal(d), Ok(None), "{d}");
        }
        for bad in [
            "1.2.3.4.5",
            "256.1.1.1",
            "1.2.3.256",
            "4294967296",
            "08.0.0.1",
            "1..1",
            "0x7g.1",
            "[::1",
            "[zz::1]",
            "99999999999999999999",
        ] {
            assert!(parse_ip_literal(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bracketed_and_bare_ipv6() {
        assert_eq!(range("[::1]"), Some(Loopback));
        assert_eq!(range("[::]"), Some(Unspecified));
        assert_eq!(range("0000::1"), Some(Loopback));
        assert_eq!(range("[0:0:0:0:0:0:0:1]"), Some(Loopback));
        assert_eq!(range("[fd00::1]"), Some(UniqueLocal));
        assert_eq!(range("[fe80::1]"), Some(LinkLocal));
        assert_eq!(range("[fec0::1]"), Some(SiteLocal));
        assert_eq!(range("[ff02::1]"), Some(Multicast));
        assert_eq!(range("[2001:db8::1]"), Some(Documentation));
        assert_eq!(range("[2606:4700::1111]"), None);
    }

    #[test]
    fn embedded_ipv4_is_unwrapped_first() {
        assert_eq!(range("[::ffff:127.0.0.1]"), Some(Loopback));
        assert_eq!(range("[::ffff:7f00:1]"), Some(Loopback));
        assert_eq!(range("[::ffff:169.254.169.254]"), Some(LinkLocal));
        assert_eq!(range("[::ffff:0:10.0.0.1]"), Some(Private));
        assert_eq!(range("[::127.0.0.1]"), Some(Loopback));
        assert_eq!(range("[::10.1.2.3]"), Some(Private));
        assert_eq!(range("[64:ff9b::127.0.0.1]"), Some(Loopback));
        assert_eq!(range("[64:ff9b::192.168.1.1]"), Some(Private));
        assert_eq!(range("[2002:7f00:1::]"), Some(Loopback));
        assert_eq!(range("[::ffff:8.8.8.8]"), None);
        assert_eq!(range("[64:ff9b::8.8.8.8]"), None);
        let r = restricted_range(lit("[::ffff:127.0.0.1]")).unwrap();
        assert_eq!(r.via, Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert!(r.to_string().contains("loopback"));
    }

    #[test]
    fn restricted_ipv4_table() {
        let cases = [
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("0.0.0.0", Unspecified),
            ("10.0.0.1", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("169.254.169.254", LinkLocal),
            ("100.64.0.1", SharedCgnat),
            ("100.127.255.255", SharedCgnat),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("255.255.255.255", Broadcast),
            ("198.18.0.1", Benchmark),
            ("198.19.255.255", Benchmark),
            ("240.0.0.1", Reserved),
            ("192.0.2.1", Documentation),
            ("198.51.100.7", Documentation),
            ("203.0.113.9", Documentation),
        ];
        for (ip, want) in cases {
            assert_eq!(range(ip), Some(want), "{ip}");
        }
        for ok in [
            "8.8.8.8",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.254",
            "142.42.1.1",
        ] {
            assert_eq!(range(ok), None, "{ok}");
        }
    }

    #[test]
    fn fakeip_trust_opens_only_the_benchmark_range() {
        let cfg = NetworkConfig {
            trusted_fakeip_cidrs: vec![
                "198.18.0.0/15".into(),
                "192.168.1.0/24".into(),
                "169.254.169.254/32".into(),
                "10.0.0.0/8".into(),
                "198.0.0.0/8".into(),
                "nonsense".into(),
            ],
            ..NetworkConfig::default()
        };
        let (addresses, rejected) = AddressPolicy::from_config(Some(&cfg));
        assert_eq!(rejected.len(), 5);
        assert!(addresses.check(lit("198.18.3.4")).is_ok());
        assert!(addresses.check(lit("[::ffff:198.19.0.1]")).is_ok());
        assert!(addresses.check(lit("192.168.1.1")).is_err());
        assert!(addresses.check(lit("169.254.169.254")).is_err());
        assert!(addresses.check(lit("127.0.0.1")).is_err());
        let (default_addresses, _) = AddressPolicy::from_config(None);
        assert!(default_addresses.check(lit("198.18.3.4")).is_err());
        let mut narrow = AddressPolicy::new();
        assert!(narrow.trust_fakeip("198.18.0.0/16"));
        assert!(narrow.check(lit("198.19.0.1")).is_err());
    }

    #[test]
    fn localhost_names() {
        for h in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "a.localhost",
            "x.y.Localhost",
        ] {
            assert!(is_localhost_name(h), "{h}");
        }
        for h in ["localhost.com", "notlocalhost", "localhoste"] {
            assert!(!is_localhost_name(h), "{h}");
        }
    }

    #[test]
    fn cidr_parse_and_contains() {
        let c = Cidr::parse("10.1.2.3/8").unwrap();
        assert_eq!(c.to_string(), "10.0.0.0/8");
        assert!(c.contains(lit("10.255.0.1")));
        assert!(!c.contains(lit("11.0.0.1")));
        assert!(!c.contains(lit("[::1]")));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert_eq!(Cidr::parse("::1").unwrap().to_string(), "::1/128");
    }
}
