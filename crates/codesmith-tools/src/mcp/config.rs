//! `[mcp_servers.NAME]` in the user config: how to start one MCP server.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host_programs::{NEUTRAL_DIR, Workspace};

/// Default start-up bound (spawn, `initialize`, `tools/list`), in seconds.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
/// Default bound on one `tools/call`'s silence, in seconds.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;
/// Default hard bound on one `tools/call`, progress or not, in seconds.
pub const DEFAULT_TOOL_MAX_SECS: u64 = 600;

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
    /// Working directory of the server: absolute, or relative to the workspace (default:
    /// `/`, outside every workspace). One inside the workspace needs `trusted_cwd`.
    pub cwd: Option<PathBuf>,
    /// `true` lets the server start although it could load code from the workspace (its
    /// working directory, its program, a `PATH` entry, an argument or an environment value
    /// lies there), code the model can write and that would run outside the sandbox
    /// (default false: such a server is refused at start, saying why). Stdio servers only.
    pub trusted_cwd: Option<bool>,
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
    /// Bound in seconds on one tool call's silence (default
    /// [`DEFAULT_TOOL_TIMEOUT_SECS`]): each progress notification the server sends for
    /// the call starts it again.
    pub tool_timeout_secs: Option<u64>,
    /// Hard bound on one tool call in seconds, progress or not (default
    /// [`DEFAULT_TOOL_MAX_SECS`], never below `tool_timeout_secs`).
    pub tool_max_secs: Option<u64>,
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

    /// Whether the user lets the server load code from the workspace (default false).
    pub fn is_trusted_cwd(&self) -> bool {
        self.trusted_cwd.unwrap_or(false)
    }

    /// How stdio server `name` starts for `workspace`, with `env` its resolved `env`: the
    /// program as an absolute path, the working directory, the `PATH` to give it.
    ///
    /// The server runs outside the sandbox, so unless `trusted_cwd = true` nothing it
    /// starts from may lie in the workspace: not its working directory (a `python -m`
    /// module, `node_modules/.bin` for `npx`, a toolchain or version file beside it), not
    /// its program (an absolute path inside, a relative path, the first match on `PATH`
    /// being in a relative or workspace entry), not a path an argument or an environment
    /// value names (`node /ws/x.js`, `PYTHONPATH=/ws/src`, inherited ones included). The
    /// `PATH` it gets has no relative and no workspace entries.
    ///
    /// Errors: the first such finding, with what to do (an absolute path outside the
    /// workspace, `cwd` outside it, or `trusted_cwd = true`); a relative argument
    /// (`./server.js`) when `cwd` is not set; a program not found on `PATH`.
    pub fn launch(
        &self,
        name: &str,
        workspace: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Launch, String> {
        let ws = Workspace::new(workspace);
        let trusted = self.is_trusted_cwd();
        let allow = format!(
            "or, if you trust this workspace's code to run outside the sandbox, set \
             `trusted_cwd = true` under [mcp_servers.{name}]"
        );
        let cwd = match &self.cwd {
            Some(c) if c.is_absolute() => c.clone(),
            Some(c) => workspace.join(c),
            None => PathBuf::from(NEUTRAL_DIR),
        };
        if !trusted && ws.holds(&cwd) {
            return Err(format!(
                "its working directory {} is inside the workspace, where `{}` could load code \
                 the model wrote (a module, node_modules, a toolchain file); set `cwd` \
                 outside the workspace, {allow}",
                cwd.display(),
                self.command
            ));
        }
        if self.cwd.is_none()
            && let Some(arg) = self
                .args
                .iter()
                .find(|a| a.starts_with("./") || a.starts_with("../"))
        {
            return Err(format!(
                "its argument `{arg}` is relative to the working directory, which is `/` \
                 unless `cwd` is set; give an absolute path outside the workspace"
            ));
        }
        let inherited = std::env::var_os("PATH");
        let path_var: Option<OsString> = env.get("PATH").map(OsString::from).or(inherited);
        let command = Path::new(&self.command);
        let program = if command.is_absolute() {
            command.to_path_buf()
        } else if command.components().count() > 1 || self.command.ends_with('/') {
            if !trusted {
                return Err(format!(
                    "its command `{}` is a relative path; give an absolute path outside \
                     the workspace, {allow}",
                    self.command
                ));
            }
            cwd.join(command)
        } else {
            let dirs = path_var.as_deref().map(std::env::split_paths);
            let hit = dirs.into_iter().flatten().find_map(|dir| {
                let candidate = if dir.is_absolute() {
                    dir.join(command)
                } else {
                    cwd.join(&dir).join(command)
                };
                crate::host_programs::is_executable(&candidate).then_some((dir, candidate))
            });
            let Some((dir, candidate)) = hit else {
                return Err(format!("`{}` was not found on PATH", self.command));
            };
            if !trusted && (!dir.is_absolute() || ws.holds(&candidate)) {
                return Err(format!(
                    "its command `{}` is found as {} (the PATH entry `{}` is relative or \
                     inside the workspace); give an absolute path outside the workspace, \
                     remove that entry from PATH, {allow}",
                    self.command,
                    candidate.display(),
                    dir.display()
                ));
            }
            candidate
        };
        if !trusted && ws.holds(&program) {
            return Err(format!(
                "its command {} lies inside the workspace; give a program outside it, {allow}",
                program.display()
            ));
        }
        if !trusted {
            for arg in &self.args {
                if let Some(named) = ws.named_in(arg, &cwd) {
                    return Err(format!(
                        "its argument `{arg}` names `{named}` in the workspace, which the \
                         server could load as code; {allow}"
                    ));
                }
            }
            let own = env.iter().map(|(k, v)| (k.clone(), v.clone(), false));
            let inherited = std::env::vars_os()
                .map(|(k, v)| {
                    let k = k.to_string_lossy().into_owned();
                    (k, v.to_string_lossy().into_owned(), true)
                })
                .filter(|(k, _, _)| !env.contains_key(k));
            for (var, value, inherited) in own.chain(inherited) {
                // PWD is set to the working directory and OLDPWD and `_` are dropped; the
                // inherited PATH is passed filtered (below).
                let replaced =
                    matches!(var.as_str(), "PWD" | "OLDPWD" | "_") || (inherited && var == "PATH");
                if replaced {
                    continue;
                }
                if let Some(named) = ws.named_in(&value, &cwd) {
                    let whence = if inherited { " (inherited)" } else { "" };
                    return Err(format!(
                        "the environment variable `{var}`{whence} names `{named}` in the \
                         workspace, from where the server could load code; {allow}"
                    ));
                }
            }
        }
        let path = if trusted {
            path_var
        } else {
            path_var.and_then(|p| crate::host_programs::filtered_path(&p, &ws))
        };
        Ok(Launch { program, cwd, path })
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

    /// The hard bound on one tool call (progress does not extend it).
    pub fn tool_ceiling(&self) -> Duration {
        Duration::from_secs(
            self.tool_max_secs
                .unwrap_or(DEFAULT_TOOL_MAX_SECS)
                .max(self.tool_timeout().as_secs()),
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
                    ("trusted_cwd", self.trusted_cwd.is_some()),
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

/// How a stdio server is started, once [`McpServerConfig::launch`] checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program, as an absolute path.
    pub program: PathBuf,
    /// Its working directory.
    pub cwd: PathBuf,
    /// The `PATH` it gets (`None`: none).
    pub path: Option<OsString>,
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
