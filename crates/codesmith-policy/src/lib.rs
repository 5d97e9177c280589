//! Pure policy decisions: no I/O, no async.

mod network;
mod safe_name;
mod scrub;
mod ssrf;

pub use network::{HostPattern, NetworkConfig, NetworkDecision, NetworkPolicy, normalize_host};
pub use safe_name::{MAX_SAFE_NAME_LEN, UnsafeName, check_safe_name, is_safe_name, join_safe};
pub use scrub::{REDACTED, scrub_secrets};
pub use ssrf::{
    AddressGate, Cidr, FAKEIP_RANGE, MalformedLiteral, Restricted, RestrictedRange, classify,
    embedded_ipv4, is_localhost_name, parse_ip_literal, restricted_v4,
};
