//! What an approval is keyed by.

use codesmith_policy::{SafetyLevel, classify_command};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A grant that can be remembered across calls.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grant {
    /// Arity-aware prefixes of every simple command of a shell command line, sorted and
    /// deduplicated (`["cargo build"]`; `["cargo build", "cargo test"]` for a compound).
    Shell {
        /// The prefixes.
        prefixes: Vec<String>,
    },
    /// A URL host, lower-case (`docs.rs`).
    UrlHost {
        /// The host.
        host: String,
    },
    /// The set of workspace-relative paths a patch touches, sorted.
    PatchPaths {
        /// The paths.
        paths: Vec<String>,
    },
}

impl Grant {
    /// A URL-host grant (host lower-cased, trailing dot removed).
    pub fn url_host(host: &str) -> Grant {
        Grant::UrlHost {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
        }
    }

    /// A patch-path-set grant (sorted, deduplicated).
    pub fn patch_paths<S: AsRef<str>>(paths: &[S]) -> Grant {
        let mut paths: Vec<String> = paths.iter().map(|p| p.as_ref().to_string()).collect();
        paths.sort();
        paths.dedup();
        Grant::PatchPaths { paths }
    }

    /// True when the grant is well formed enough to store: non-empty, and patch paths
    /// relative without `..`.
    pub fn is_well_formed(&self) -> bool {
        match self {
            Grant::Shell { prefixes } => {
                !prefixes.is_empty() && prefixes.iter().all(|p| !p.trim().is_empty())
            }
            Grant::UrlHost { host } => !host.is_empty() && !host.contains(['/', ' ', '@', ':']),
            Grant::PatchPaths { paths } => {
                !paths.is_empty()
                    && paths.iter().all(|p| {
                        !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|c| c == "..")
                    })
            }
        }
    }

    /// True when `self`, a stored grant, or the combination of single-prefix grants in
    /// `stored`, covers `request`. A compound shell request is covered by an identical
    /// compound grant, or when every one of its prefixes has a single-prefix grant.
    pub fn covered_by(&self, stored: &[Grant]) -> bool {
        if stored.contains(self) {
            return true;
        }
        match self {
            Grant::Shell { prefixes } => prefixes.iter().all(|p| {
                stored.iter().any(
                    |g| matches!(g, Grant::Shell { prefixes: s } if s.len() == 1 && &s[0] == p),
                )
            }),
            _ => false,
        }
    }
}

/// What the approval machinery needs to know about one shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    /// The prefix grant for it, or `None` when only the exact input may be approved: a
    /// `Dangerous` command, one the parser could not read, or one that redirects output
    /// somewhere that needs approval.
    pub grant: Option<Grant>,
    /// The classifier's level.
    pub level: SafetyLevel,
    /// The exact-input fingerprint (for denials and exact approvals).
    pub exact: String,
}

/// Classifies `command` (workspace root `workspace`) into its approval keys.
pub fn shell_request(command: &str, workspace: &str) -> ShellRequest {
    let c = classify_command(command, workspace);
    let exact = exact_fingerprint("exec_shell", &Value::String(command.to_string()));
    let redirects_need_approval = c
        .segments
        .iter()
        .any(|s| s.redirect_level > SafetyLevel::WorkspaceSafe);
    let grant = if c.level == SafetyLevel::Dangerous || !c.parsed || redirects_need_approval {
        None
    } else {
        let mut prefixes: Vec<String> = c.segments.iter().map(|s| s.prefix.clone()).collect();
        prefixes.sort();
        prefixes.dedup();
        Some(Grant::Shell { prefixes }).filter(Grant::is_well_formed)
    };
    ShellRequest {
        grant,
        level: c.level,
        exact,
    }
}

/// The exact-input fingerprint of a tool call: `tool:<name>:<sha256 of the arguments as
/// compact JSON with sorted keys>`.
pub fn exact_fingerprint(tool: &str, args: &Value) -> String {
    let canonical = serde_json::to_string(&sorted(args)).unwrap_or_default();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("tool:{tool}:{hex}")
}

/// `v` with every object's keys in sorted order (serde_json may preserve insertion order).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prefix_grant_covers_flag_variants_not_other_subcommands() {
        let a = shell_request("cargo build", "/ws").grant.unwrap();
        let b = shell_request("cargo build --release", "/ws").grant.unwrap();
        let c = shell_request("cargo publish", "/ws").grant.unwrap();
        assert!(b.covered_by(std::slice::from_ref(&a)));
        assert!(!c.covered_by(std::slice::from_ref(&a)));
    }

    #[test]
    fn compound_needs_every_prefix() {
        let build = shell_request("cargo build", "/ws").grant.unwrap();
        let both = shell_request("cargo build && curl -s x.sh", "/ws")
            .grant
            .unwrap();
        assert!(!both.covered_by(std::slice::from_ref(&build)));
        let test = shell_request("cargo test", "/ws").grant.unwrap();
        let bt = shell_request("cargo build && cargo test -q", "/ws")
            .grant
            .unwrap();
        assert!(bt.covered_by(&[build, test]));
    }

    #[test]
    fn dangerous_and_outside_redirects_get_no_prefix_grant() {
        assert!(shell_request("curl x | sh", "/ws").grant.is_none());
        assert!(shell_request("rm -rf /", "/ws").grant.is_none());
        assert!(shell_request("echo x > /etc/passwd", "/ws").grant.is_none());
    }

    #[test]
    fn exact_fingerprint_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"y":2,"x":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"x":3,"y":2},"a":1}"#).unwrap();
        assert_eq!(exact_fingerprint("t", &a), exact_fingerprint("t", &b));
    }

    #[test]
    fn exact_fingerprints_differ_by_input() {
        assert_ne!(
            shell_request("ls -a", "/ws").exact,
            shell_request("ls -l", "/ws").exact
        );
    }
}
