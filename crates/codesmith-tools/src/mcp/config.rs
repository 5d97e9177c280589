//! `[mcp_servers.NAME]` in the user config: how to start one MCP server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default start-up bound (spawn, `initialize`, `tools/list`), in seconds.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
/// Default bound on one `tools/call`, in seconds.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;

/// One MCP server: started over stdio (`command`) or reached over streamable HTTP
/// (`url`). Only the user config may declare servers; the project config's attempt is
/// ignored with a warning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (looked up on `PATH`); stdio servers only.
    #[serde(default, skip_serializing_if = "String::is_empty")]
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
    /// The streamable-HTTP endpoint (`https://host/mcp`); HTTP servers only. Plain
    /// `http://` is accepted only for loopback hosts unless `allow_plain_http = true`.
    pub url: Option<String>,
    /// Extra HTTP headers sent with every request (HTTP servers only). Values may
    /// reference the user's environment as `${VAR}`, like `env`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The name of an environment variable holding a bearer token, sent as
    /// `Authorization: Bearer <token>` (HTTP servers only). The token itself never
    /// appears in the config, in notices or in logs.
    pub bearer_token_env_var: Option<String>,
    /// `true` allows a plain `http://` URL to a host that is not loopback (default false:
    /// the requests, and any bearer token, would cross the network unencrypted).
    pub allow_plain_http: Option<bool>,
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

    /// How the server is reached, after checking that the keys fit one transport.
    ///
    /// Errors: both or neither of `command` and `url`, or a key of one transport on a
    /// server of the other; the message names the key.
    pub fn transport(&self) -> Result<TransportKind, String> {
        match (self.command.is_empty(), &self.url) {
            (false, Some(_)) => Err("it sets both `command` and `url`; keep one".into()),
            (true, None) => Err("it sets neither `command` (stdio) nor `url` (HTTP)".into()),
            (false, None) => {
                let http_keys = [
                    ("headers", !self.headers.is_empty()),
                    ("bearer_token_env_var", self.bearer_token_env_var.is_some()),
                    ("allow_plain_http", self.allow_plain_http.is_some()),
                ];
                match http_keys.iter().find(|(_, set)| *set) {
                    Some((key, _)) => Err(format!(
                        "`{key}` applies to HTTP servers (`url`), not to `command`"
                    )),
                    None => Ok(TransportKind::Stdio),
                }
            }
            (true, Some(url)) => {
                let stdio_keys = [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                ];
                match stdio_keys.iter().find(|(_, set)| *set) {
                    Some((key, _)) => Err(format!(
                        "`{key}` applies to stdio servers (`command`), not to `url`"
                    )),
                    None => Ok(TransportKind::Http(url.clone())),
                }
            }
        }
    }

    /// Whether plain `http://` may reach a host that is not loopback (default false).
    pub fn allows_plain_http(&self) -> bool {
        self.allow_plain_http.unwrap_or(false)
    }

    /// `headers` with every `${VAR}` replaced through `lookup`.
    ///
    /// Errors: as [`McpServerConfig::resolved_env`].
    pub fn resolved_headers(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<BTreeMap<String, String>, String> {
        self.headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, lookup)?)))
            .collect()
    }

    /// The bearer token from the variable named by `bearer_token_env_var`, if one is set.
    ///
    /// Errors: the variable is named but unset or empty (the message names the variable,
    /// never a value).
    pub fn bearer_token(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, String> {
        let Some(var) = &self.bearer_token_env_var else {
            return Ok(None);
        };
        match lookup(var).filter(|t| !t.trim().is_empty()) {
            Some(token) => Ok(Some(token.trim().to_string())),
            None => Err(format!(
                "the environment variable `{var}` (bearer_token_env_var) is not set"
            )),
        }
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

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportKind {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio,
    /// The streamable-HTTP transport at this URL (as configured, not yet checked).
    Http(String),
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
#[allow(clippy::unwrap_used)]
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
    fn keys_must_fit_one_transport() {
        let parse = |t: &str| toml::from_str::<McpServerConfig>(t).unwrap_or_default();
        let both = parse("command = \"x\"\nurl = \"http://a\"\n");
        assert!(both.transport().unwrap_err().contains("both"));
        assert!(parse("").transport().unwrap_err().contains("neither"));
        let mixed = parse("url = \"https://a/mcp\"\nargs = [\"-y\"]\n");
        assert!(mixed.transport().unwrap_err().contains("`args`"));
        let mixed = parse("command = \"x\"\nbearer_token_env_var = \"T\"\n");
        assert!(
            mixed
                .transport()
                .unwrap_err()
                .contains("bearer_token_env_var")
        );
        let http = parse(
            "url = \"https://a/mcp\"\nheaders = { X-Team = \"${TEAM}\" }\nbearer_token_env_var = \"TOK\"\n",
        );
        assert_eq!(
            http.transport(),
            Ok(TransportKind::Http("https://a/mcp".into()))
        );
        let lookup = |n: &str| match n {
            "TEAM" => Some("core".to_string()),
            "TOK" => Some(" s3cret ".to_string()),
            _ => None,
        };
        assert_eq!(
            http.resolved_headers(&lookup).unwrap_or_default()["X-Team"],
            "core"
        );
        assert_eq!(http.bearer_token(&lookup), Ok(Some("s3cret".into())));
        let unset = |_: &str| None;
        let err = http.bearer_token(&unset).unwrap_err();
        assert!(err.contains("`TOK`"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let parsed: Result<McpServerConfig, _> =
            toml::from_str("command = \"x\"\nuri = \"http://a\"\n");
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
