//! `[mcp_servers.NAME]` in the user config: how to start one MCP server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default start-up bound (spawn, `initialize`, `tools/list`), in seconds.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
/// Default bound on one `tools/call`, in seconds.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;

/// One MCP server started over stdio. Only the user config may declare servers; the
/// project config's attempt is ignored with a warning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables. Values may reference the user's environment as
    /// `${VAR}`; an unset variable stops this server from starting, with a notice.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the server (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// `false` keeps the server configured but not started (default true).
    pub enabled: Option<bool>,
    /// Start-up bound in seconds (default [`DEFAULT_STARTUP_TIMEOUT_SECS`]).
    pub startup_timeout_secs: Option<u64>,
    /// Bound on one tool call in seconds (default [`DEFAULT_TOOL_TIMEOUT_SECS`]).
    pub tool_timeout_secs: Option<u64>,
    /// `true` lets this server's tools that declare `readOnlyHint` run without
    /// approval (default false: every tool asks and counts as network-capable).
    pub trusted: Option<bool>,
    /// `true` registers the tools without sending them (the model finds them with
    /// `tool_search`); `false` always sends them. Default: deferred when all servers
    /// together offer more tools than the threshold.
    pub defer: Option<bool>,
}

impl McpServerConfig {
    /// Whether the server is started (default true).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Whether the user marked the server trusted (default false).
    pub fn is_trusted(&self) -> bool {
        self.trusted.unwrap_or(false)
    }

    /// The start-up bound.
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(
            self.startup_timeout_secs
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS)
                .max(1),
        )
    }

    /// The bound on one tool call.
    pub fn tool_timeout(&self) -> Duration {
        Duration::from_secs(
            self.tool_timeout_secs
                .unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS)
                .max(1),
        )
    }

    /// `env` with every `${VAR}` replaced through `lookup`.
    ///
    /// Errors: the name of the first variable that `lookup` does not know, or a `${`
    /// without its closing `}`.
    pub fn resolved_env(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<BTreeMap<String, String>, String> {
        self.env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, lookup)?)))
            .collect()
    }
}

/// Replaces `${VAR}` in `value` with `lookup(VAR)`; `$` not followed by `{` is kept.
fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`{value}` has a `${{` without its closing `}}`"));
        };
        let name = &after[..end];
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("the environment variable `{name}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_expand_from_the_users_environment() {
        let cfg = McpServerConfig {
            env: BTreeMap::from([
                ("TOKEN".into(), "Bearer ${GH}".into()),
                ("PLAIN".into(), "a$b".into()),
            ]),
            ..Default::default()
        };
        let lookup = |n: &str| (n == "GH").then(|| "t0k".to_string());
        let env = cfg.resolved_env(&lookup).unwrap_or_default();
        assert_eq!(env["TOKEN"], "Bearer t0k");
        assert_eq!(env["PLAIN"], "a$b");
        let missing = McpServerConfig {
            env: BTreeMap::from([("X".into(), "${NOPE}".into())]),
            ..Default::default()
        };
        let err = missing.resolved_env(&lookup).err().unwrap_or_default();
        assert!(err.contains("`NOPE` is not set"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let parsed: Result<McpServerConfig, _> =
            toml::from_str("command = \"x\"\nurl = \"http://a\"\n");
        assert!(parsed.is_err());
        let ok: McpServerConfig =
            toml::from_str("command = \"x\"\nargs = [\"-y\"]\ntrusted = true\n")
                .unwrap_or_default();
        assert!(ok.is_trusted() && ok.is_enabled());
        assert_eq!(
            ok.tool_timeout(),
            Duration::from_secs(DEFAULT_TOOL_TIMEOUT_SECS)
        );
    }
}
