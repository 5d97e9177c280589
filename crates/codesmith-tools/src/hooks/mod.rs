//! Hooks: the user's own programs, run at fixed points of a session.
//!
//! A hook is configured under `[[hooks.EVENT]]` in the user's `config.toml` (or, once
//! trusted on this machine, in the project's `.codesmith/config.toml`; see
//! [`crate::skills::trust`]) with a `command` (program and arguments), an optional
//! `matcher` (a regular expression that must match the whole tool name; tool events
//! only), a `timeout_secs` (default [`DEFAULT_TIMEOUT_SECS`]) and an `env` list of
//! further environment variable names it may see.
//!
//! It receives one JSON object on stdin, as Claude Code's hooks do (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, and per event `tool_name`, `tool_input`,
//! `tool_response`, `prompt`, `source`, `stop_hook_active`, `message`), so existing hook
//! scripts work with at most a mapping of tool names. What it answers is read by
//! [`run_hook`]: exit 0 continues (its stdout may add context, or be a JSON object with
//! `"decision": "block" | "approve"` and a `reason`), exit 2 blocks with its stderr as the
//! reason, and any other status (or a hook that cannot start or outlives its timeout) is
//! a warning to the user and the session goes on.
//!
//! Hooks run outside the sandbox with the user's rights (they are the user's programs),
//! started like every host program ([`crate::host_programs`]): found outside the
//! workspace, handed no argument that resolves inside it, and only with a program and
//! arguments understood as running no code but files outside the project (judged by where
//! they resolve; no stdin as a program, no `python -m`: [`refused_command`]), in `/`
//! (root's, so nothing there is the workspace's), with an allowlisted environment plus the
//! names in `env` (so no provider API key unless named there), in their own process group. The answer is
//! decided when the hook's own process exits (or its timeout passes); then everything it
//! started is killed (its group, and every process carrying its marker or descending from
//! it, `setsid` ones included) and its output, read up to [`MAX_OUTPUT_BYTES`] per
//! stream, is drained for a short grace.

mod run;

use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use run::{HookOutcome, MAX_OUTPUT_BYTES, refused_command, run_hook};

/// The tools that run shell commands (a command line, or input typed into an interactive
/// shell): a policy hook on shell commands matches them all
/// (`matcher = "exec_shell|task_shell_start|pty_start|pty_send"`).
pub const SHELL_TOOLS: &[&str] = &["exec_shell", "task_shell_start", "pty_start", "pty_send"];

/// A hook's timeout when its entry names none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The longest timeout an entry may set, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before a tool call runs (after its arguments are checked, before the approval
    /// gate): may block it.
    PreToolUse,
    /// After a tool call ran, with its result: exit 2 tells the model its stderr.
    PostToolUse,
    /// When a task's text arrives, before the model sees it: may block it or add context.
    UserPromptSubmit,
    /// When the model ends its turn: may send it back to work with a reason.
    Stop,
    /// At a session's first task (`source`: `startup` or `resume`): may add context.
    SessionStart,
    /// When the UI notifies the user (a turn ended, a question waits).
    Notification,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::Notification,
    ];

    /// Its name as the config and the hook's input write it (`PreToolUse`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Notification => "Notification",
        }
    }

    /// Whether its hooks are chosen by tool name (`matcher`).
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// One `[[hooks.EVENT]]` entry as a config file writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// A regular expression that must match the whole tool name (`exec_shell|edit_file`);
    /// absent: every tool. Only for `PreToolUse` and `PostToolUse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The program (absolute, or a name looked up in `PATH`) and its arguments.
    pub command: Vec<String>,
    /// Seconds before the hook is killed (default [`DEFAULT_TIMEOUT_SECS`], at most
    /// [`MAX_TIMEOUT_SECS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Names of environment variables passed to it besides the host allowlist (an API key
    /// reaches a hook only when named here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

impl HookEntry {
    /// Everything about it that decides what runs, on one line, for review (`codesmith
    /// trust hooks`, the not-trusted notice): `EVENT matcher=... command=[...]
    /// timeout=Ns env=[...]`. Not scrubbed for the terminal; callers print it through
    /// their terminal-safe path.
    pub fn describe(&self, event: HookEvent) -> String {
        format!(
            "{} matcher={} command={:?} timeout={}s env={:?}",
            event.as_str(),
            self.matcher
                .as_deref()
                .map_or_else(|| "(every tool)".to_string(), |m| format!("{m:?}")),
            self.command,
            self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
            self.env
        )
    }
}

/// Whether a project's hook may name `name` in its `env`: only variables a sandboxed
/// command receives too ([`crate::sandbox::exposure::ENV_ALLOW`], the toolchain
/// variables, `LC_*`), so a repository can never pull the user's secrets (an API key, a
/// token) or a loader variable (`LD_PRELOAD`, `BASH_ENV`) into a program that runs with
/// the user's rights. The user's own hooks may name any variable.
pub fn project_may_pass(name: &str) -> bool {
    use crate::sandbox::exposure::{ENV_ALLOW, TOOLCHAIN_ENV};
    name.starts_with("LC_") || ENV_ALLOW.contains(&name) || TOOLCHAIN_ENV.contains(&name)
}

/// The `[hooks]` section: one list of entries per event. An unknown event name is an
/// error, so a typo never silently disables a hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct HooksSection {
    /// `[[hooks.PreToolUse]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub PreToolUse: Vec<HookEntry>,
    /// `[[hooks.PostToolUse]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub PostToolUse: Vec<HookEntry>,
    /// `[[hooks.UserPromptSubmit]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub UserPromptSubmit: Vec<HookEntry>,
    /// `[[hooks.Stop]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub Stop: Vec<HookEntry>,
    /// `[[hooks.SessionStart]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub SessionStart: Vec<HookEntry>,
    /// `[[hooks.Notification]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub Notification: Vec<HookEntry>,
}

impl HooksSection {
    /// Every entry with its event, in [`HookEvent::ALL`] order and file order.
    pub fn entries(&self) -> impl Iterator<Item = (HookEvent, &HookEntry)> {
        let lists: [(HookEvent, &Vec<HookEntry>); 6] = [
            (HookEvent::PreToolUse, &self.PreToolUse),
            (HookEvent::PostToolUse, &self.PostToolUse),
            (HookEvent::UserPromptSubmit, &self.UserPromptSubmit),
            (HookEvent::Stop, &self.Stop),
            (HookEvent::SessionStart, &self.SessionStart),
            (HookEvent::Notification, &self.Notification),
        ];
        lists
            .into_iter()
            .flat_map(|(event, list)| list.iter().map(move |e| (event, e)))
    }

    /// Whether it configures no hook.
    pub fn is_empty(&self) -> bool {
        self.entries().next().is_none()
    }

    /// Lowercase hex SHA-256 of the section's canonical JSON: what a trust of a project's
    /// hooks is pinned to (any change of an entry changes it).
    pub fn digest(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Where a hook was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSource {
    /// The user's `config.toml`.
    User,
    /// The project's `.codesmith/config.toml`, trusted on this machine.
    Project,
}

/// One checked hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// The tool names it runs for (anchored); `None`: all.
    matcher: Option<Regex>,
    /// The program and its arguments (never empty).
    pub command: Vec<String>,
    /// When it is killed.
    pub timeout: Duration,
    /// Further environment names it receives.
    pub env: Vec<String>,
    /// Where it was configured.
    pub source: HookSource,
}

impl Hook {
    /// Whether it runs for a call of `tool` (always for events without tools).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        match (&self.matcher, tool) {
            (None, _) => true,
            (Some(re), Some(name)) => re.is_match(name),
            (Some(_), None) => false,
        }
    }

    /// Its `matcher` as configured (`None`: every tool).
    pub fn matcher_text(&self) -> Option<String> {
        self.matcher.as_ref().map(|re| {
            let s = re.as_str();
            s.strip_prefix("^(?:")
                .and_then(|s| s.strip_suffix(")$"))
                .unwrap_or(s)
                .to_string()
        })
    }

    /// How messages name it: its command line, shortened to one line.
    pub fn label(&self) -> String {
        codesmith_policy::visible_line(&self.command.join(" "), 80)
    }
}

/// A `[hooks]` entry that cannot be used; the message says which and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookConfigError(pub String);

impl std::fmt::Display for HookConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookConfigError {}

/// The session's hooks, checked once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
}

impl Hooks {
    /// Checks every entry of `section`.
    ///
    /// # Errors
    /// An empty `command` or program, a `matcher` that is not a regular expression or is
    /// set on an event without tools, a `timeout_secs` of 0 or over [`MAX_TIMEOUT_SECS`],
    /// or an `env` entry that is not a variable name.
    pub fn from_section(
        section: &HooksSection,
        source: HookSource,
    ) -> Result<Hooks, HookConfigError> {
        let mut hooks = Vec::new();
        for (event, entry) in section.entries() {
            let at = format!("[[hooks.{}]] command = {:?}", event.as_str(), entry.command);
            let bad = |why: String| Err(HookConfigError(format!("{at}: {why}")));
            if entry.command.first().is_none_or(|p| p.trim().is_empty()) {
                return bad(
                    "`command` must name a program, e.g. [\"/path/to/hook\", \"arg\"]".into(),
                );
            }
            let matcher = match &entry.matcher {
                None => None,
                Some(_) if !event.is_tool_event() => {
                    return bad(
                        "`matcher` applies only to PreToolUse and PostToolUse; remove it".into(),
                    );
                }
                Some(m) => match Regex::new(&format!("^(?:{m})$")) {
                    Ok(re) => Some(re),
                    Err(e) => {
                        return bad(format!("`matcher` {m:?} is not a regular expression: {e}"));
                    }
                },
            };
            let secs = entry.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
            if secs == 0 || secs > MAX_TIMEOUT_SECS {
                return bad(format!(
                    "`timeout_secs` must be 1 to {MAX_TIMEOUT_SECS}; remove it for the default \
                     ({DEFAULT_TIMEOUT_SECS} s)"
                ));
            }
            if let Some(name) = entry.env.iter().find(|n| {
                n.is_empty()
                    || n.starts_with(|c: char| c.is_ascii_digit())
                    || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                return bad(format!(
                    "`env` entry {name:?} is not a variable name (letters, digits and _)"
                ));
            }
            if source == HookSource::Project
                && let Some(name) = entry.env.iter().find(|n| !project_may_pass(n))
            {
                return bad(format!(
                    "`env` names {name:?}, but a project's hook may only name variables a \
                     sandboxed command gets too (such as PATH, LANG, TERM, CARGO_HOME): a \
                     repository must never pull your secrets into a program that runs with \
                     your rights; to give a hook a secret, configure it in your own config.toml"
                ));
            }
            hooks.push(Hook {
                event,
                matcher,
                command: entry.command.clone(),
                timeout: Duration::from_secs(secs),
                env: entry.env.clone(),
                source,
            });
        }
        Ok(Hooks { hooks })
    }

    /// Adds `other`'s hooks after these.
    pub fn extend(&mut self, other: Hooks) {
        self.hooks.extend(other.hooks);
    }

    /// Whether there is no hook at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks of `event` that run for `tool` (`None` for events without tools), in
    /// configuration order (the user's first).
    pub fn matching(&self, event: HookEvent, tool: Option<&str>) -> Vec<&Hook> {
        self.hooks
            .iter()
            .filter(|h| h.event == event && h.matches(tool))
            .collect()
    }

    /// Warnings about tool-event matchers against the session's tool catalogue `tools`: a
    /// matcher that matches none of them (a typo, or a Claude Code name such as `Bash`),
    /// and one that matches some of the tools that run shell commands
    /// ([`SHELL_TOOLS`]) but not all, so a policy on shell commands has a gap.
    pub fn matcher_warnings(&self, tools: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for hook in self.hooks.iter().filter(|h| h.matcher.is_some()) {
            let at = format!(
                "the {} hook `{}` has matcher {:?}",
                hook.event.as_str(),
                hook.label(),
                hook.matcher_text().unwrap_or_default()
            );
            if !tools.iter().any(|t| hook.matches(Some(t))) {
                out.push(format!(
                    "{at}, which matches no tool of this session, so it never runs (tool names \
                     are CodeSmith's, not Claude Code's; the tools are: {})",
                    tools.join(", ")
                ));
                continue;
            }
            let shell: Vec<&str> = SHELL_TOOLS
                .iter()
                .copied()
                .filter(|t| tools.contains(t))
                .collect();
            let (hit, missed): (Vec<&str>, Vec<&str>) =
                shell.iter().partition(|t| hook.matches(Some(t)));
            if !hit.is_empty() && !missed.is_empty() {
                out.push(format!(
                    "{at}, which matches {} but not {}, which also run{} shell commands; to \
                     cover every shell command use matcher = \"{}\"",
                    hit.join(", "),
                    missed.join(", "),
                    if missed.len() == 1 { "s" } else { "" },
                    shell.join("|")
                ));
            }
        }
        out
    }

    /// Every hook.
    pub fn all(&self) -> &[Hook] {
        &self.hooks
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn section(text: &str) -> HooksSection {
        #[derive(Deserialize)]
        struct File {
            hooks: HooksSection,
        }
        toml::from_str::<File>(text).unwrap().hooks
    }

    #[test]
    fn the_matcher_must_match_the_whole_tool_name() {
        let s = section(
            "[[hooks.PreToolUse]]\nmatcher = \"exec_shell|edit_file\"\ncommand = [\"/bin/true\"]\n",
        );
        let hooks = Hooks::from_section(&s, HookSource::User).unwrap();
        assert_eq!(
            hooks
                .matching(HookEvent::PreToolUse, Some("exec_shell"))
                .len(),
            1
        );
        assert_eq!(
            hooks
                .matching(HookEvent::PreToolUse, Some("edit_file"))
                .len(),
            1
        );
        assert!(
            hooks
                .matching(HookEvent::PreToolUse, Some("exec_shell_x"))
                .is_empty()
        );
        assert!(
            hooks
                .matching(HookEvent::PreToolUse, Some("read_file"))
                .is_empty()
        );
        assert!(
            hooks
                .matching(HookEvent::PostToolUse, Some("exec_shell"))
                .is_empty()
        );
        assert_eq!(
            hooks.all()[0].timeout,
            Duration::from_secs(DEFAULT_TIMEOUT_SECS)
        );
    }

    #[test]
    fn bad_entries_are_refused_naming_what_to_fix() {
        let err = |t: &str| {
            Hooks::from_section(&section(t), HookSource::User)
                .unwrap_err()
                .0
        };
        assert!(err("[[hooks.Stop]]\ncommand = []\n").contains("must name a program"));
        assert!(
            err("[[hooks.Stop]]\nmatcher = \"x\"\ncommand = [\"a\"]\n")
                .contains("only to PreToolUse")
        );
        assert!(
            err("[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = [\"a\"]\n")
                .contains("not a regular")
        );
        assert!(
            err("[[hooks.Stop]]\ncommand = [\"a\"]\ntimeout_secs = 0\n").contains("timeout_secs")
        );
        assert!(
            err("[[hooks.Stop]]\ncommand = [\"a\"]\nenv = [\"A-B\"]\n").contains("not a variable")
        );
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct File {
            hooks: HooksSection,
        }
        assert!(toml::from_str::<File>("[[hooks.PreToolUse2]]\ncommand = [\"a\"]\n").is_err());
    }

    #[test]
    fn a_projects_hook_may_name_no_secret_in_env_and_the_users_may() {
        let text =
            "[[hooks.SessionStart]]\ncommand = [\"/bin/true\"]\nenv = [\"OPENAI_API_KEY\"]\n";
        let err = Hooks::from_section(&section(text), HookSource::Project).unwrap_err();
        assert!(err.0.contains("OPENAI_API_KEY"), "{err}");
        for name in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "LD_PRELOAD",
            "BASH_ENV",
        ] {
            assert!(!project_may_pass(name), "{name}");
        }
        assert!(Hooks::from_section(&section(text), HookSource::User).is_ok());
        let ok =
            "[[hooks.SessionStart]]\ncommand = [\"/bin/true\"]\nenv = [\"TERM\", \"LC_ALL\"]\n";
        assert!(Hooks::from_section(&section(ok), HookSource::Project).is_ok());
        let s = section(
            "[[hooks.PreToolUse]]\nmatcher = \"exec_shell\"\ncommand = [\"/x\"]\ntimeout_secs = 7\nenv = [\"TERM\"]\n",
        );
        let line = s.PreToolUse[0].describe(HookEvent::PreToolUse);
        for part in ["PreToolUse", "\"exec_shell\"", "\"/x\"", "7s", "TERM"] {
            assert!(line.contains(part), "{part} missing from {line}");
        }
    }

    #[test]
    fn a_matcher_that_misses_tools_is_warned_about() {
        let s = section(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = [\"/x\"]\n\
             [[hooks.PreToolUse]]\nmatcher = \"exec_shell\"\ncommand = [\"/y\"]\n\
             [[hooks.PreToolUse]]\nmatcher = \"exec_shell|task_shell_start\"\ncommand = [\"/z\"]\n",
        );
        let hooks = Hooks::from_section(&s, HookSource::User).unwrap();
        let w = hooks.matcher_warnings(&["exec_shell", "task_shell_start", "read_file"]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("Bash") && w[0].contains("matches no tool") && w[0].contains("read_file")
        );
        assert!(w[1].contains("not task_shell_start"));
    }

    #[test]
    fn the_digest_follows_every_entry() {
        let a = section("[[hooks.Stop]]\ncommand = [\"a\"]\n");
        let b = section("[[hooks.Stop]]\ncommand = [\"a\", \"b\"]\n");
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest(), a.clone().digest());
        assert_eq!(a.digest().len(), 64);
    }
}
