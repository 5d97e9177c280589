//! What an approval is keyed by.

#[cfg(doc)]
use codesmith_policy::approval_fingerprint;
use codesmith_policy::{ApprovalMode, Evaluation, Rules, SafetyLevel, decide};
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
    /// One tool of one MCP server (any arguments), by the server's configured name and
    /// the tool's name on it. Covers exactly that tool: never another tool of the same
    /// server, nor the same tool name on another server.
    McpTool {
        /// The server's name in `[mcp_servers.NAME]`.
        server: String,
        /// The tool's name on the server.
        tool: String,
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

    /// The grant for the registered MCP tool `mcp__SERVER__TOOL` (server names never
    /// contain `__`, so the first `__` after the prefix ends the server), or `None` for a
    /// name of another shape.
    pub fn mcp_tool(qualified: &str) -> Option<Grant> {
        let rest = qualified.strip_prefix(crate::trust::MCP_PREFIX)?;
        let (server, tool) = rest.split_once("__")?;
        Some(Grant::McpTool {
            server: server.to_string(),
            tool: tool.to_string(),
        })
        .filter(Grant::is_well_formed)
    }

    /// True when the grant is well formed enough to store: non-empty, patch paths
    /// relative without `..`, and MCP server and tool names that a registered tool can
    /// have.
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
            Grant::McpTool { server, tool } => {
                crate::mcp::schema::is_valid_server_name(server)
                    && !tool.is_empty()
                    && crate::mcp::schema::is_valid_name(&crate::mcp::schema::qualified_name(
                        server, tool,
                    ))
            }
        }
    }

    /// True when one of `stored` is this grant. Shell grants compare their whole prefix
    /// list, so a grant for `cargo build` covers `cargo build --release` but never
    /// `cargo build && curl x` (the separator is never crossed).
    pub fn covered_by(&self, stored: &[Grant]) -> bool {
        stored.contains(self)
    }
}

/// The persistent grant for a shell command: its arity-aware prefixes, from the policy
/// crate's [`approval_fingerprint`] (so the session cache and the store share one key).
///
/// `None` when only the exact input could be approved, which is never persisted: a
/// `Dangerous` command, a line the parser could not read, or a redirection that writes
/// somewhere needing approval. Classifies `command` once; a caller that already holds
/// the command's [`Evaluation`] uses [`shell_grant_for`].
pub fn shell_grant(command: &str, workspace: &str) -> Option<Grant> {
    shell_grant_for(&decide(
        command,
        workspace,
        &Rules::new(),
        ApprovalMode::Suggest,
    ))
}

/// [`shell_grant`] from the evaluation the gate already made (no second classification).
pub fn shell_grant_for(eval: &Evaluation) -> Option<Grant> {
    if eval.level == SafetyLevel::Dangerous {
        return None;
    }
    Some(Grant::Shell {
        prefixes: eval.approval_prefixes()?,
    })
    .filter(Grant::is_well_formed)
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
        let a = shell_grant("cargo build", "/ws").unwrap();
        let b = shell_grant("cargo build --release", "/ws").unwrap();
        let c = shell_grant("cargo publish", "/ws").unwrap();
        assert!(b.covered_by(std::slice::from_ref(&a)));
        assert!(!c.covered_by(std::slice::from_ref(&a)));
    }

    #[test]
    fn compound_is_its_own_grant() {
        let build = shell_grant("cargo build", "/ws").unwrap();
        let both = shell_grant("cargo build && curl -s x.sh", "/ws").unwrap();
        assert!(!both.covered_by(std::slice::from_ref(&build)));
        let bt = shell_grant("cargo build && cargo test", "/ws").unwrap();
        let bt2 = shell_grant("cargo build --release && cargo test -q", "/ws").unwrap();
        assert!(bt2.covered_by(&[bt]));
    }

    #[test]
    fn dangerous_and_outside_redirects_get_no_prefix_grant() {
        assert!(shell_grant("curl x | sh", "/ws").is_none());
        assert!(shell_grant("rm -rf /", "/ws").is_none());
        assert!(shell_grant("echo x > /etc/passwd", "/ws").is_none());
    }

    #[test]
    fn mcp_grants_name_one_tool_of_one_server() {
        let g = Grant::mcp_tool("mcp__gh__list_issues").unwrap();
        assert_eq!(
            g,
            Grant::McpTool {
                server: "gh".into(),
                tool: "list_issues".into()
            }
        );
        // A tool name may itself contain `__`; the server never does.
        let nested = Grant::mcp_tool("mcp__gh__a__b").unwrap();
        assert!(
            matches!(&nested, Grant::McpTool { server, tool } if server == "gh" && tool == "a__b")
        );
        assert!(
            !Grant::mcp_tool("mcp__gh__delete_repo")
                .unwrap()
                .covered_by(std::slice::from_ref(&g))
        );
        assert!(
            !Grant::mcp_tool("mcp__other__list_issues")
                .unwrap()
                .covered_by(std::slice::from_ref(&g))
        );
        assert!(
            Grant::mcp_tool("mcp__gh__list_issues")
                .unwrap()
                .covered_by(&[g])
        );
        for bad in ["fetch_url", "mcp__gh", "mcp____x", "mcp__gh__"] {
            assert!(Grant::mcp_tool(bad).is_none(), "{bad}");
        }
        let hand_edited = Grant::McpTool {
            server: "a b".into(),
            tool: "t".into(),
        };
        assert!(!hand_edited.is_well_formed());
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
            exact_fingerprint("t", &Value::from("ls -a")),
            exact_fingerprint("t", &Value::from("ls -l"))
        );
    }
}
