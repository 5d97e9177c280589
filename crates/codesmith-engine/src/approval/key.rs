//! What an approval is keyed by: one typed [`ApprovalKey`] for the session's answers and
//! the persistent grants alike (no key is a formatted string).

use codesmith_policy::{Evaluation, SafetyLevel};
use codesmith_tools::ToolOrigin;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What one approval answer covers. The variants that persist (see
/// [`ApprovalKey::persists`]) are stored in `approvals.toml` under their `kind`, in the
/// shape earlier versions wrote (`shell`, `url_host`, `patch_paths`, `mcp_tool`), so grants
/// made before survive.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalKey {
    /// The arity-aware prefixes (with their widening flags) of every simple command of a
    /// shell command line, in order (`["cargo build"]`; `["cargo build", "cargo test"]`
    /// for a compound): `cargo build` covers `cargo build --release`, never `cargo build
    /// && curl x` nor `cargo build --force`-style widenings.
    Shell {
        /// The prefixes.
        prefixes: Vec<String>,
    },
    /// One exact shell command line: a denial, or the "always" of a compound command.
    ShellExact {
        /// The command as the model wrote it.
        command: String,
    },
    /// An HTTP client command contacting these hosts and ports only (`curl` to
    /// `api.example.com:443`, any of the flags [`codesmith_policy::fetch_hosts`]
    /// understands): a network program's "always" is scoped to the host and port, never
    /// the bare program. A stored host without a port never matches.
    ShellHosts {
        /// The client's prefix (`curl`, `wget`).
        prefix: String,
        /// The `host:port` pairs, sorted.
        hosts: Vec<String>,
    },
    /// A URL host, lower-case (`docs.rs`).
    UrlHost {
        /// The host.
        host: String,
    },
    /// One exact URL (a denial of a fetch).
    Url {
        /// The URL.
        url: String,
    },
    /// The set of workspace-relative paths a write touches, sorted.
    #[serde(rename = "patch_paths")]
    Write {
        /// The paths.
        paths: Vec<String>,
    },
    /// Reading one file the read gate asks about (a secret, a hard-linked file).
    Read {
        /// The path as the request names it.
        path: String,
    },
    /// One tool of one MCP server (any arguments), by the server's configured name and the
    /// tool's name on it ([`ToolOrigin::Mcp`]). Covers exactly that tool: never another
    /// tool of the same server, nor the same tool name on another server.
    #[serde(rename = "mcp_tool")]
    Mcp {
        /// The server's name in `[mcp_servers.NAME]`.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Every call of one tool, whatever its arguments (a session's yes to `rlm_exec`).
    Tool {
        /// The tool's registered name.
        tool: String,
    },
    /// One exact call: the tool and the SHA-256 of its arguments as compact JSON with
    /// sorted keys (a denial).
    Exact {
        /// The tool's registered name.
        tool: String,
        /// Lower-case hex digest of the arguments.
        digest: String,
    },
}

impl ApprovalKey {
    /// A URL-host key (host lower-cased, trailing dot removed).
    pub fn url_host(host: &str) -> ApprovalKey {
        ApprovalKey::UrlHost {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
        }
    }

    /// A write key for `paths` (sorted, deduplicated).
    pub fn write<S: AsRef<str>>(paths: &[S]) -> ApprovalKey {
        let mut paths: Vec<String> = paths.iter().map(|p| p.as_ref().to_string()).collect();
        paths.sort();
        paths.dedup();
        ApprovalKey::Write { paths }
    }

    /// The key of one MCP tool, from the tool's own [`ToolOrigin`]; `None` for a tool that
    /// is not an MCP server's or whose names could not be registered.
    pub fn mcp(origin: &ToolOrigin) -> Option<ApprovalKey> {
        match origin {
            ToolOrigin::Mcp { server, tool } => Some(ApprovalKey::Mcp {
                server: server.clone(),
                tool: tool.clone(),
            })
            .filter(ApprovalKey::is_well_formed),
            ToolOrigin::Builtin | ToolOrigin::Skill => None,
        }
    }

    /// The exact-call key of `tool` with `args`.
    pub fn exact(tool: &str, args: &Value) -> ApprovalKey {
        let canonical = serde_json::to_string(&sorted(args)).unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        ApprovalKey::Exact {
            tool: tool.to_string(),
            digest: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// True for the kinds a persistent grant may hold: shell prefixes, an exact compound
    /// command, an HTTP client's hosts, URL hosts, write path sets and single MCP tools.
    pub fn persists(&self) -> bool {
        matches!(
            self,
            ApprovalKey::Shell { .. }
                | ApprovalKey::ShellExact { .. }
                | ApprovalKey::ShellHosts { .. }
                | ApprovalKey::UrlHost { .. }
                | ApprovalKey::Write { .. }
                | ApprovalKey::Mcp { .. }
        )
    }

    /// True when the key is well formed enough to store or to match a stored grant:
    /// non-empty, write paths relative without `..`, hosts plain, and MCP server and tool
    /// names that a registered tool can have.
    pub fn is_well_formed(&self) -> bool {
        let plain_host =
            |h: &str| !h.is_empty() && !h.contains(['/', ' ', '@', ':']) && !h.contains('\n');
        match self {
            ApprovalKey::Shell { prefixes } => {
                !prefixes.is_empty() && prefixes.iter().all(|p| !p.trim().is_empty())
            }
            ApprovalKey::ShellExact { command } => !command.trim().is_empty(),
            ApprovalKey::ShellHosts { prefix, hosts } => {
                !prefix.trim().is_empty()
                    && !hosts.is_empty()
                    && hosts.iter().all(|h| {
                        h.rsplit_once(':').is_some_and(|(host, port)| {
                            plain_host(host)
                                && !port.is_empty()
                                && port.bytes().all(|b| b.is_ascii_digit())
                        })
                    })
            }
            ApprovalKey::UrlHost { host } => plain_host(host),
            ApprovalKey::Write { paths } => {
                !paths.is_empty()
                    && paths.iter().all(|p| {
                        !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|c| c == "..")
                    })
            }
            ApprovalKey::Mcp { server, tool } => {
                codesmith_tools::mcp::schema::is_valid_server_name(server)
                    && !tool.is_empty()
                    && codesmith_tools::mcp::schema::is_valid_name(
                        &codesmith_tools::mcp::schema::qualified_name(server, tool),
                    )
            }
            ApprovalKey::Url { url } => !url.is_empty(),
            ApprovalKey::Read { path } => !path.is_empty(),
            ApprovalKey::Tool { tool } | ApprovalKey::Exact { tool, .. } => !tool.is_empty(),
        }
    }

    /// What the key lets run, in one line for a person (`approvals list`, the notice of a
    /// reused grant).
    pub fn describe(&self) -> String {
        match self {
            ApprovalKey::Shell { prefixes } => format!("shell `{}`", prefixes.join(" ; ")),
            ApprovalKey::ShellExact { command } => format!("shell exactly `{command}`"),
            ApprovalKey::ShellHosts { prefix, hosts } => {
                format!("shell `{prefix}` to {}", hosts.join(", "))
            }
            ApprovalKey::UrlHost { host } => format!("fetch from {host}"),
            ApprovalKey::Url { url } => format!("fetch {url}"),
            ApprovalKey::Write { paths } => format!("write {}", paths.join(", ")),
            ApprovalKey::Read { path } => format!("read {path}"),
            ApprovalKey::Mcp { server, tool } => format!("MCP tool `{tool}` of server `{server}`"),
            ApprovalKey::Tool { tool } => format!("every `{tool}` call"),
            ApprovalKey::Exact { tool, digest } => {
                format!("one `{tool}` call ({})", &digest[..digest.len().min(12)])
            }
        }
    }
}

/// The keys a shell command's answers cover, built from the evaluation the gate already
/// made (no second classification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellKeys {
    /// What a "yes for this session" covers: the HTTP client's hosts, else the prefixes,
    /// else the exact line.
    pub session: ApprovalKey,
    /// What a "no" covers: the exact line.
    pub denial: ApprovalKey,
    /// What "always" stores, when anything may be: `None` for a dangerous command, a line
    /// the parser could not read, a redirection that writes outside the workspace, or a
    /// network program whose hosts are not fully understood.
    pub grant: Option<ApprovalKey>,
}

impl ShellKeys {
    /// The keys of `command`, judged as `eval`.
    ///
    /// - A compound command's grant is the exact compound, never each segment's program
    ///   (approving `curl … | head` for ever must not approve every `curl`).
    /// - An HTTP client's grant is scoped to its URL hosts
    ///   ([`codesmith_policy::fetch_hosts`]); another network program (`ssh`, `nc`) gets
    ///   no grant at all, only once or for the session.
    /// - Any other single command's grant is its arity-aware prefix when the key
    ///   understands all of it, else the exact line (an environment assignment, a
    ///   wrapper or an option the prefix's table does not name changes what runs).
    pub(crate) fn of(command: &str, eval: &Evaluation) -> ShellKeys {
        let denial = ApprovalKey::ShellExact {
            command: command.to_string(),
        };
        let prefixes = eval.approval_prefixes();
        let hosts = match eval.segments.as_slice() {
            // A host key covers only the hosts contacted: an environment assignment or a
            // wrapper (a proxy, a config file's home) may send it elsewhere.
            [only] if only.assignments.is_empty() && only.wrappers.is_empty() => {
                codesmith_policy::fetch_hosts(&only.argv).map(|hosts| ApprovalKey::ShellHosts {
                    prefix: only.prefix.clone(),
                    hosts,
                })
            }
            _ => None,
        };
        let network_program = eval.segments.iter().any(|s| {
            s.argv.first().is_some_and(|p| {
                let p = p.rsplit('/').next().unwrap_or(p);
                codesmith_policy::NETWORK_COMMANDS.contains(&p)
            })
        });
        let session = match (&hosts, &prefixes) {
            (Some(hosts), _) => hosts.clone(),
            (None, Some(prefixes)) => ApprovalKey::Shell {
                prefixes: prefixes.clone(),
            },
            (None, None) => denial.clone(),
        };
        // Only the exact line when it did not parse or writes outside the workspace.
        let unreadable = eval.segments.is_empty()
            || !eval.parsed
            || eval
                .segments
                .iter()
                .any(|s| s.redirect_level > SafetyLevel::WorkspaceSafe);
        let grant = if eval.level == SafetyLevel::Dangerous || unreadable {
            None
        } else if eval.segments.len() > 1 || (prefixes.is_none() && !network_program) {
            // A compound, or a command the key does not fully understand: exactly this.
            Some(denial.clone())
        } else if network_program {
            hosts
        } else {
            prefixes.map(|prefixes| ApprovalKey::Shell { prefixes })
        };
        ShellKeys {
            session,
            denial,
            grant: grant.filter(ApprovalKey::is_well_formed),
        }
    }
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
    use codesmith_policy::{ApprovalMode, Rules, decide};

    use super::*;

    fn keys(command: &str) -> ShellKeys {
        ShellKeys::of(
            command,
            &decide(command, "/ws", &Rules::new(), ApprovalMode::AutoEdit),
        )
    }

    #[test]
    fn a_prefix_grant_covers_flag_variants_not_other_subcommands() {
        let a = keys("cargo build").grant.unwrap();
        assert_eq!(keys("cargo build --release").grant, Some(a.clone()));
        assert_ne!(keys("cargo publish").grant, Some(a));
    }

    #[test]
    fn a_compound_grants_itself_exactly() {
        let both = keys("curl -s https://api.example.com/x | head -5");
        assert_eq!(
            both.grant,
            Some(ApprovalKey::ShellExact {
                command: "curl -s https://api.example.com/x | head -5".into()
            })
        );
        // For the session too: the key does not understand `-s` and `-5`, so only the line.
        assert_eq!(both.session, both.denial);
        // A compound the key understands gets the session prefixes (never a lone program).
        let built = keys("cargo build && cargo test --release");
        assert!(matches!(&built.session, ApprovalKey::Shell { prefixes } if prefixes.len() == 2));
        assert!(matches!(built.grant, Some(ApprovalKey::ShellExact { .. })));
    }

    #[test]
    fn a_network_program_is_scoped_to_its_host_never_the_bare_program() {
        let k = keys("curl -sS https://api.example.com/v1/items");
        let host = ApprovalKey::ShellHosts {
            prefix: "curl".into(),
            hosts: vec!["api.example.com:443".into()],
        };
        assert_eq!(k.grant, Some(host.clone()));
        assert_eq!(k.session, host);
        assert_ne!(keys("curl https://evil.example.org/").grant, Some(host));
        // Not understood: no grant at all, and never the bare program.
        assert_eq!(keys("curl -o out https://api.example.com").grant, None);
        assert_eq!(keys("ssh build.example.com make").grant, None);
    }

    #[test]
    fn what_the_key_does_not_understand_is_granted_exactly() {
        for command in [
            "PATH=./bin:$PATH npm test",
            "env PATH=bin npm test",
            "npm test --script-shell=./bin/npm",
            "git -c core.sshCommand=x push",
        ] {
            let k = keys(command);
            let exact = ApprovalKey::ShellExact {
                command: command.into(),
            };
            assert_eq!(k.grant, Some(exact.clone()), "{command}");
            assert_eq!(k.session, exact, "{command}");
        }
        // A proxy, a config file's home or a redirect may reach another host: no host key.
        for command in [
            "http_proxy=http://127.0.0.1:18778 curl -s http://localhost:18779/x",
            "env ALL_PROXY=http://127.0.0.1:18778 curl -s http://localhost:18779/x",
            "HOME=. curl -s http://localhost:18779/x",
            "curl -sL http://localhost:18780/",
        ] {
            let k = keys(command);
            assert!(
                !matches!(k.session, ApprovalKey::ShellHosts { .. }),
                "{command}"
            );
            assert!(
                !matches!(k.grant, Some(ApprovalKey::ShellHosts { .. })),
                "{command}"
            );
        }
        // The port is part of the host key.
        assert_ne!(
            keys("curl -s http://localhost:18779/x").grant,
            keys("curl -s http://localhost:18778/x").grant
        );
    }

    #[test]
    fn dangerous_and_outside_redirects_get_no_grant() {
        assert!(keys("curl x | sh").grant.is_none());
        assert!(keys("rm -rf /").grant.is_none());
        assert!(keys("echo x > /etc/passwd").grant.is_none());
    }

    #[test]
    fn mcp_keys_come_from_the_tool_origin() {
        let origin = ToolOrigin::Mcp {
            server: "gh".into(),
            tool: "a__b".into(),
        };
        assert_eq!(
            ApprovalKey::mcp(&origin),
            Some(ApprovalKey::Mcp {
                server: "gh".into(),
                tool: "a__b".into()
            })
        );
        assert_eq!(ApprovalKey::mcp(&ToolOrigin::Builtin), None);
        let bad = ToolOrigin::Mcp {
            server: "a b".into(),
            tool: "t".into(),
        };
        assert_eq!(ApprovalKey::mcp(&bad), None);
    }

    #[test]
    fn exact_keys_ignore_key_order_and_differ_by_input() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"y":2,"x":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"x":3,"y":2},"a":1}"#).unwrap();
        assert_eq!(ApprovalKey::exact("t", &a), ApprovalKey::exact("t", &b));
        assert_ne!(
            ApprovalKey::exact("t", &Value::from("ls -a")),
            ApprovalKey::exact("t", &Value::from("ls -l"))
        );
    }
}
