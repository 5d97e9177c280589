//! Configuration (stage two): one stack of layers, resolved once into [`Settings`].
//!
//! Layers, lowest first:
//! 1. the built-in defaults;
//! 2. the user config `$CODESMITH_HOME/config.toml`;
//! 3. the project config `<workspace>/.codesmith/config.toml`, which is untrusted
//!    (anyone can commit one to a repository): it may only tighten the approval mode
//!    and the sandbox; every other key, and every loosening value, is ignored with a
//!    warning;
//! 4. environment variables (`OPENAI_BASE_URL`, the API keys,
//!    `CODESMITH_STREAM_IDLE_TIMEOUT_SECS`, ...);
//! 5. command-line flags.
//!
//! [`resolve`] reads the files once and returns a fully typed [`Settings`] that also
//! records the [`Origin`] of every value; every front end (`exec`, the UI, `tool`,
//! `mcp`, `doctor`, `config show`) builds from it and none reads a config file again.
//! The section structs below ([`FileConfig`] and its `*Section`s) are the files' schema.

mod origin;
mod show;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use codesmith_policy::{ApprovalMode, NetworkConfig};
use codesmith_tools::fetch::FetchConfig;
use codesmith_tools::fs::bounded::{ReadError, read_regular_text};
use serde::Deserialize;

pub(crate) use origin::{Origin, Origins};
pub(crate) use show::{Shown, show, to_text};

use crate::args::{ModelArgs, ProviderName};

/// Default model rounds per task: a safety bound, not a budget (real tasks end on their own).
pub(crate) const DEFAULT_MAX_TURNS: u32 = 500;
/// Default stream idle window: a stream silent this long is treated as stalled.
pub(crate) const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 120;

/// `[openai]` / `[anthropic]` sections of the user config.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VendorSection {
    /// API key (prefer the environment variable).
    pub api_key: Option<String>,
    /// Endpoint base URL.
    pub base_url: Option<String>,
    /// Default model for this vendor.
    pub model: Option<String>,
    /// `[openai]` only: send thinking back as `reasoning_content` on tool
    /// rounds, `auto` (default), `always` or `never`.
    pub reasoning_replay: Option<String>,
    /// `[openai]` only: send the session's `prompt_cache_key` (default: on for
    /// api.openai.com, off for other servers).
    pub prompt_cache_key: Option<bool>,
    /// The context window of this vendor's model, in tokens (default: the built-in
    /// table of common models, else a guess).
    pub context_window: Option<u64>,
    /// Whether this vendor's model reads images (default true); false sends each image
    /// as a short text saying it was omitted.
    pub images: Option<bool>,
}

/// `[web_search]`: the backend of the `web_search` tool (absent: no such tool).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebSearchSection {
    /// `searxng`, `brave` or `tavily`.
    pub backend: Option<String>,
    /// The endpoint: SearXNG's base URL (required), or a hosted API's search URL.
    pub url: Option<String>,
    /// The environment variable holding a hosted API's key (default `BRAVE_API_KEY` /
    /// `TAVILY_API_KEY`).
    pub api_key_env: Option<String>,
    /// Lets `url` use plain `http://` to a host that is not loopback (default false), as
    /// `[mcp_servers.X] allow_plain_http` does.
    pub allow_plain_http: Option<bool>,
}

impl WebSearchSection {
    /// Why a hosted backend cannot be used: its key variable is unset (`None`: no key is
    /// missing).
    ///
    /// # Errors
    /// An unknown backend name.
    pub(crate) fn missing_key(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>> {
        use codesmith_tools::fetch::web_search::Backend;
        let Some(name) = &self.backend else {
            return Ok(None);
        };
        let backend = Backend::parse(name).map_err(|e| anyhow::anyhow!("[web_search] {e}"))?;
        let key_env = self.api_key_env.as_deref().or(backend.default_key_env());
        Ok(match key_env {
            Some(var) if env(var).is_none() => Some(format!(
                "[web_search] backend = \"{name}\" needs its API key in the environment \
                 variable {var}, which is not set"
            )),
            _ => None,
        })
    }

    /// The backend this section configures, with its key read from the environment:
    /// `Ok(None)` without a `backend`.
    ///
    /// # Errors
    /// An unknown backend name, a SearXNG backend without `url`, a bad URL, or a hosted
    /// backend whose key variable is unset (each a sentence naming the key to fix).
    pub(crate) fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<codesmith_tools::fetch::web_search::WebSearchConfig>> {
        use codesmith_tools::fetch::web_search::{Backend, WebSearchConfig};
        let Some(name) = &self.backend else {
            return Ok(None);
        };
        let backend = Backend::parse(name).map_err(|e| anyhow::anyhow!("[web_search] {e}"))?;
        let key_env = self
            .api_key_env
            .as_deref()
            .or(backend.default_key_env())
            .unwrap_or("");
        let key = (!key_env.is_empty()).then(|| env(key_env)).flatten();
        WebSearchConfig::new(backend, self.url.as_deref(), key, key_env)
            .map(|mut c| {
                c.allow_plain_http = self.allow_plain_http.unwrap_or(false);
                Some(c)
            })
            .map_err(|e| anyhow::anyhow!("[web_search] {e}"))
    }
}

/// `[sandbox]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxSection {
    /// Backend name: `auto` (bwrap when it works, else none; the default), `bwrap` or `none`.
    pub backend: Option<String>,
    /// Refuse to run commands when no isolating backend exists (default false).
    pub required: Option<bool>,
    /// Let sandboxed commands use the network (default false).
    pub network: Option<bool>,
    /// Further host paths sandboxed commands may read (absolute, or `~/…`). A project
    /// config may only remove entries from the user's list.
    pub read: Option<Vec<String>>,
    /// Further host paths sandboxed commands may write (absolute, or `~/…`); same rule.
    pub write: Option<Vec<String>>,
    /// Names of further environment variables passed into sandboxed commands; same rule.
    pub env: Option<Vec<String>>,
}

impl SandboxSection {
    /// Whether sessions (`exec`, the UI, `tool`, `mcp`) refuse shell commands that nothing
    /// isolates: `required`, default false.
    pub(crate) fn required_in_sessions(&self) -> bool {
        self.required.unwrap_or(false)
    }

    /// Whether `codesmith sandbox run` refuses to run bare: `required`, default true unless
    /// the backend is explicitly `none` (asking for a sandboxed run and getting a bare one
    /// would be a lie).
    pub(crate) fn required_for_sandbox_run(&self) -> bool {
        self.required
            .unwrap_or(self.backend.as_deref() != Some("none"))
    }

    /// What `read`, `write` and `env` add to the sandbox, with `~/` expanded against
    /// `home`.
    ///
    /// # Errors
    /// A path that is neither absolute nor `~/…`, or an environment name that is not a
    /// plain variable name.
    pub(crate) fn extra(
        &self,
        home: Option<&std::path::Path>,
    ) -> Result<codesmith_tools::sandbox::Extra> {
        let paths = |key: &str, list: &Option<Vec<String>>| -> Result<Vec<PathBuf>> {
            let mut out = Vec::new();
            for entry in list.iter().flatten() {
                let path = match (entry.strip_prefix("~/"), home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => PathBuf::from(entry),
                };
                if !path.is_absolute() {
                    anyhow::bail!(
                        "[sandbox] {key} = {entry:?}: use an absolute path or one starting \
                         with ~/"
                    );
                }
                out.push(path);
            }
            Ok(out)
        };
        let env = self.env.clone().unwrap_or_default();
        if let Some(bad) = env.iter().find(|n| {
            n.is_empty()
                || n.starts_with(|c: char| c.is_ascii_digit())
                || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            anyhow::bail!(
                "[sandbox] env = [.., {bad:?}, ..]: not a variable name (letters, digits and _)"
            );
        }
        Ok(codesmith_tools::sandbox::Extra {
            read: paths("read", &self.read)?,
            write: paths("write", &self.write)?,
            env,
        })
    }
}

/// `[snapshots]`: only the user config can switch them off.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotsSection {
    /// Snapshot the workspace before each turn's first write (default true).
    pub enabled: Option<bool>,
}

/// `[verification]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerificationSection {
    /// Replay the task's last test/build command when the final answer claims success
    /// (default true: a success claim counts only after a replay confirms it).
    pub result_claims: Option<bool>,
    /// File an `unsubstantiated` or `verified_fail` verdict in the project's slop ledger
    /// (default false).
    pub slop: Option<bool>,
}

/// `[trust]`: directories outside the workspace the file tools may read (user config
/// only; a project's is ignored with a warning).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrustSection {
    /// Absolute paths or `~/...`; reading only, writing there stays refused.
    pub read: Option<Vec<String>>,
}

/// `[agents]`: subagents started by the `agent` tool (user config only).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentsSection {
    /// The model subagents use, on the parent's provider (default: the parent's model).
    pub model: Option<String>,
    /// Cap on a subagent's model rounds (default 30).
    pub max_turns: Option<u32>,
    /// Cap on a subagent's wall time in seconds (default 600).
    pub max_wall_secs: Option<u64>,
}

/// `[utility_model]`: the model of auxiliary calls (compaction summaries); user config only.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UtilityModelSection {
    /// `openai` or `anthropic` (default: the session's provider).
    pub provider: Option<String>,
    /// The model name (required).
    pub model: Option<String>,
    /// Its endpoint (default: the session's when the provider is the same, else the vendor's).
    pub base_url: Option<String>,
    /// The environment variable holding its API key (default: the session's key when the
    /// provider is the same).
    pub api_key_env: Option<String>,
}

/// The resolved `[utility_model]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UtilityModel {
    /// Its provider (never `local`).
    pub provider: ProviderName,
    /// Its model.
    pub model: String,
    /// Its endpoint (`None`: the vendor's default).
    pub base_url: Option<String>,
    /// The variable its key was read from, when `api_key_env` named one.
    pub api_key_env: Option<String>,
    /// Its API key.
    pub api_key: Option<String>,
}

impl UtilityModelSection {
    /// Resolves the section against the session's provider, endpoint and key; `env` reads
    /// the environment.
    ///
    /// # Errors
    /// No model, or an unknown or `local` provider.
    fn resolve(
        &self,
        session: (ProviderName, Option<&str>, Option<&str>),
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<UtilityModel> {
        let (session_provider, session_url, session_key) = session;
        let Some(model) = self
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        else {
            bail!(
                "[utility_model] has no model; name one (model = \"...\"), or remove the section \
                 to use the session's model"
            );
        };
        let provider = match self.provider.as_deref() {
            None => session_provider,
            Some(name) => parse_provider(name)?,
        };
        if provider == ProviderName::Local {
            bail!(
                "[utility_model] provider = \"local\" is not supported: the embedded model is too \
                 small for summaries; use openai or anthropic, or remove the section"
            );
        }
        let same = provider == session_provider;
        let base_url = self
            .base_url
            .clone()
            .or_else(|| same.then(|| session_url.map(str::to_string)).flatten());
        // An unset variable is reported when a session starts (`setup::utility_provider`),
        // not by every command that reads the config.
        let api_key = match self.api_key_env.as_deref() {
            Some(var) => env(var).filter(|k| !k.is_empty()),
            None => same.then(|| session_key.map(str::to_string)).flatten(),
        };
        Ok(UtilityModel {
            provider,
            model: model.to_string(),
            base_url,
            api_key_env: self.api_key_env.clone(),
            api_key,
        })
    }
}

impl FileConfig {
    /// The subagent settings from `[agents]`, with the engine's defaults for what is unset.
    ///
    /// # Errors
    /// A cap of 0 (a subagent that may not run a round or a second would only fail).
    pub(crate) fn agent_settings(&self) -> Result<codesmith_engine::AgentSettings> {
        let mut settings = codesmith_engine::AgentSettings::default();
        let Some(section) = &self.agents else {
            return Ok(settings);
        };
        if section.max_turns == Some(0) || section.max_wall_secs == Some(0) {
            bail!(
                "[agents] max_turns and max_wall_secs must be at least 1; remove the key for the default \
                 ({} rounds, {} s)",
                codesmith_engine::subagent::DEFAULT_MAX_TURNS,
                codesmith_engine::subagent::DEFAULT_MAX_WALL_SECS
            );
        }
        if let Some(model) = section.model.as_deref().map(str::trim) {
            if model.is_empty() {
                bail!(
                    "[agents] model is empty; name a model, or remove the key to use the session's model"
                );
            }
            settings.model = Some(model.to_string());
        }
        if let Some(turns) = section.max_turns {
            settings.max_turns = turns;
        }
        if let Some(secs) = section.max_wall_secs {
            settings.max_wall = std::time::Duration::from_secs(secs);
        }
        Ok(settings)
    }

    /// `[openai] prompt_cache_key`; `None` leaves the vendor's default.
    ///
    /// # Errors
    /// The key under `[anthropic]`, whose caching is steered by breakpoints instead.
    pub(crate) fn prompt_cache_key(&self) -> Result<Option<bool>> {
        if self
            .anthropic
            .as_ref()
            .is_some_and(|a| a.prompt_cache_key.is_some())
        {
            bail!(
                "[anthropic] prompt_cache_key is not a setting: prompt_cache_key applies to [openai] only \
                 (Anthropic's prompt cache needs no key)"
            );
        }
        Ok(self.openai.as_ref().and_then(|o| o.prompt_cache_key))
    }

    /// `[openai] reasoning_replay`, default `auto`.
    ///
    /// # Errors
    /// A value other than `auto`, `always` or `never`, or the key under
    /// `[anthropic]` (where nothing reads it).
    pub(crate) fn reasoning_replay(&self) -> Result<codesmith_providers::ReasoningReplay> {
        if self
            .anthropic
            .as_ref()
            .is_some_and(|a| a.reasoning_replay.is_some())
        {
            bail!(
                "[anthropic] reasoning_replay is not a setting: reasoning_replay applies to [openai] only"
            );
        }
        match self
            .openai
            .as_ref()
            .and_then(|o| o.reasoning_replay.as_deref())
        {
            None => Ok(codesmith_providers::ReasoningReplay::default()),
            Some(value) => value
                .parse()
                .map_err(|e: String| anyhow::anyhow!("[openai] {e}")),
        }
    }

    /// Whether the claim verifier runs: `[verification] result_claims`, default true.
    pub(crate) fn verify_claims(&self) -> bool {
        self.verification
            .as_ref()
            .and_then(|v| v.result_claims)
            .unwrap_or(true)
    }
}

/// The user config file, `$CODESMITH_HOME/config.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    /// `openai`, `anthropic` or `local`.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// `auto`, `suggest` or `never`.
    pub approval: Option<String>,
    /// Model rounds per task.
    pub max_turns: Option<u32>,
    /// Stream idle window in seconds.
    pub stream_idle_timeout_secs: Option<u64>,
    /// Output-token cap per model response (default: the provider's; 512 for `local`).
    pub max_output_tokens: Option<u32>,
    /// Compact the conversation before a request that would pass this percentage of the
    /// model's context window (1 to 100, default 80).
    pub compact_at: Option<u8>,
    /// OpenAI-compatible endpoint settings.
    pub openai: Option<VendorSection>,
    /// Anthropic settings.
    pub anthropic: Option<VendorSection>,
    /// Sandbox settings.
    pub sandbox: Option<SandboxSection>,
    /// Network policy for fetch_url (`default`, `allow`, `deny`, `trusted_fakeip_cidrs`).
    pub network: Option<codesmith_policy::NetworkConfig>,
    /// The claim verifier (`result_claims`, `slop`).
    pub verification: Option<VerificationSection>,
    /// Directories outside the workspace the file tools may read (`read`).
    pub trust: Option<TrustSection>,
    /// Task snapshots (`enabled`, default true).
    pub snapshots: Option<SnapshotsSection>,
    /// Subagents (`model`, `max_turns`, `max_wall_secs`).
    pub agents: Option<AgentsSection>,
    /// The model for auxiliary calls (`provider`, `model`, `base_url`, `api_key_env`).
    pub utility_model: Option<UtilityModelSection>,
    /// More MCP tools than this defers the servers without `defer` (default 20).
    pub mcp_defer_threshold: Option<usize>,
    /// MCP servers whose tools join the session (`[mcp_servers.NAME]`); user config only.
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, codesmith_tools::mcp::McpServerConfig>,
    /// The `web_search` tool's backend (user config only).
    pub web_search: Option<WebSearchSection>,
    /// Language servers (`[lsp.NAME]`; user config only), added to or replacing the
    /// built-in ones.
    #[serde(default)]
    pub lsp: BTreeMap<String, codesmith_tools::lsp::LspServerConfig>,
    /// The user's hooks (`[[hooks.PreToolUse]]`, ...; see `codesmith_tools::hooks`).
    pub hooks: Option<codesmith_tools::hooks::HooksSection>,
    /// Terminal notifications of the UI (`when`, `method`).
    pub notifications: Option<NotificationsSection>,
}

/// `[notifications]`: how the UI tells the user that a turn ended or a question waits.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotificationsSection {
    /// `unfocused` (default: only while the terminal reports it lost focus), `always` or
    /// `never`.
    pub when: Option<String>,
    /// `bell` (default), `osc9` or `osc777`.
    pub method: Option<String>,
}

/// The project config: only the keys that may tighten.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct ProjectConfig {
    /// May only raise the approval mode.
    pub approval: Option<String>,
    /// May only require a sandbox.
    pub sandbox: Option<SandboxSection>,
    /// The project's hooks: run only once the user trusts them on this machine
    /// (`codesmith trust hooks`), pinned to their digest.
    pub hooks: Option<toml::Table>,
    /// May only turn language servers off: `[lsp.NAME] enabled = false`.
    pub lsp: Option<toml::Table>,
    /// Everything else is ignored (with a warning).
    #[serde(flatten)]
    pub ignored: toml::Table,
}

/// Everything a command needs, resolved once from the layers; nothing downstream reads
/// a config file again. [`Settings::origins`] says which layer set each value.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `$CODESMITH_HOME`.
    pub home: PathBuf,
    /// Canonical workspace.
    pub workspace: PathBuf,
    /// Provider.
    pub provider: ProviderName,
    /// Model name or GGUF path.
    pub model: String,
    /// Endpoint base URL (remote providers; `None`: the vendor's default).
    pub base_url: Option<String>,
    /// API key (remote providers).
    pub api_key: Option<String>,
    /// Approval mode, after the project config tightened it.
    pub approval: ApprovalMode,
    /// Model rounds per task.
    pub max_turns: u32,
    /// The model's context window (and where the figure came from) and the compaction
    /// threshold (`--context-window`, `[VENDOR] context_window`, `compact_at`).
    pub context: codesmith_engine::ContextBudget,
    /// Stream idle window.
    pub idle_timeout: Duration,
    /// `[openai] reasoning_replay`.
    pub reasoning_replay: codesmith_providers::ReasoningReplay,
    /// `[openai] prompt_cache_key`, when set.
    pub prompt_cache_key: Option<bool>,
    /// Whether the model reads images: `[openai] images` / `[anthropic] images` of the
    /// chosen provider (default true); always false for the local model.
    pub images: bool,
    /// `max_output_tokens`: the output-token cap per response, when the user set one
    /// (otherwise the provider's own; see `setup::max_tokens`).
    pub max_output_tokens: Option<u32>,
    /// The `[network]` section as the user wrote it (default when absent; never from the
    /// project).
    pub network: NetworkConfig,
    /// What fetch_url runs under, built once from [`Settings::network`]: the network
    /// policy (`fetch.policy`, also the approval gate's input) and the address policy.
    pub fetch: FetchConfig,
    /// `[verification] result_claims` (default true).
    pub verify_claims: bool,
    /// `[verification] slop` (default false).
    pub slop_from_verdicts: bool,
    /// Start read-only calls while the response still streams (default true;
    /// `CODESMITH_EARLY_START=0` turns it off, to compare).
    pub early_start: bool,
    /// `[trust] read`: canonical directories outside the workspace the file tools may
    /// read (entries that do not exist are skipped with a warning).
    pub trust_read: Vec<PathBuf>,
    /// `[agents]`: the subagents' model and per-child caps (defaults when unset).
    pub agents: codesmith_engine::AgentSettings,
    /// `[utility_model]`: the model of compaction summaries (`None`: the session's model).
    pub utility: Option<UtilityModel>,
    /// `[snapshots] enabled` (default true; only the user config can switch them off).
    pub snapshots: bool,
    /// `mcp_defer_threshold` (default [`codesmith_tools::mcp::DEFAULT_DEFER_THRESHOLD`]).
    pub mcp_defer_threshold: usize,
    /// `[mcp_servers.NAME]` (user config only).
    pub mcp_servers: BTreeMap<String, codesmith_tools::mcp::McpServerConfig>,
    /// `[web_search]` (user config only): the backend of the `web_search` tool, `None`
    /// when none is configured or it could not be used (a warning says why).
    pub web_search: Option<codesmith_tools::fetch::web_search::WebSearchConfig>,
    /// The language servers: `[lsp.NAME]` and the built-in ones found on `PATH`.
    pub lsp: codesmith_tools::lsp::LspSettings,
    /// Exec-policy rules from `$CODESMITH_HOME/policy.toml` and `.codesmith/policy.toml`.
    pub rules: codesmith_policy::Rules,
    /// The sandbox settings after the project config tightened them.
    pub sandbox: SandboxSection,
    /// Things the user should know about the configuration (ignored project keys,
    /// unparseable patterns, ignored exec-policy rules, ...).
    pub warnings: Vec<String>,
    /// What a session (`exec`, the UI) tells at its start besides [`Settings::warnings`]:
    /// skipped instruction files, project memory being loaded.
    pub session_notices: Vec<String>,
    /// AGENTS.md / CLAUDE.md as loaded once at start-up (skipped files are in `warnings`).
    pub instructions: codesmith_tools::instructions::Instructions,
    /// Which layer set each value (see [`show`]).
    pub origins: Origins,
    /// The user's and the project's skills, found once at start-up (skipped skills are in
    /// `warnings`); their names and descriptions go into the system prompt.
    pub skills: codesmith_tools::skills::SkillSet,
    /// The user's hooks, then the project's when trusted on this machine.
    pub hooks: codesmith_tools::hooks::Hooks,
    /// The custom slash commands (`$CODESMITH_HOME/commands/`, `.codesmith/commands/`),
    /// found once at start-up (skipped files are in `session_notices`).
    pub commands: codesmith_tools::extensions::commands::SlashCommands,
    /// `[notifications]`, checked.
    pub notifications: Notifications,
}

/// When the UI notifies the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum NotifyWhen {
    /// Only while the terminal reports (focus reporting, `CSI ? 1004 h`) that it is not
    /// focused; a terminal that never reports counts as focused.
    #[default]
    Unfocused,
    /// Every time.
    Always,
    /// Never.
    Never,
}

/// How the UI notifies the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum NotifyMethod {
    /// The terminal bell (BEL).
    #[default]
    Bell,
    /// `OSC 9 ; text BEL` (iTerm2, WezTerm, kitty, Windows Terminal, ...).
    Osc9,
    /// `OSC 777 ; notify ; title ; text BEL` (rxvt-unicode, foot, Ghostty, ...).
    Osc777,
}

/// The resolved `[notifications]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Notifications {
    /// When.
    pub when: NotifyWhen,
    /// How.
    pub method: NotifyMethod,
}

impl NotificationsSection {
    /// Checks the section.
    ///
    /// # Errors
    /// An unknown `when` or `method`.
    fn resolve(&self) -> Result<Notifications> {
        let when = match self.when.as_deref() {
            None | Some("unfocused") => NotifyWhen::Unfocused,
            Some("always") => NotifyWhen::Always,
            Some("never") => NotifyWhen::Never,
            Some(other) => bail!(
                "[notifications] when = {other:?}: use \"unfocused\", \"always\" or \"never\""
            ),
        };
        let method = match self.method.as_deref() {
            None | Some("bell") => NotifyMethod::Bell,
            Some("osc9") => NotifyMethod::Osc9,
            Some("osc777") => NotifyMethod::Osc777,
            Some(other) => {
                bail!("[notifications] method = {other:?}: use \"bell\", \"osc9\" or \"osc777\"")
            }
        };
        Ok(Notifications { when, method })
    }
}

/// `$CODESMITH_HOME`, default `~/.codesmith`. A relative `CODESMITH_HOME` is made
/// absolute against the current directory here, at start-up, so a later change of
/// directory (a shell `cd`, a spawned tool) cannot move CodeSmith's state.
pub(crate) fn home_dir() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CODESMITH_HOME").filter(|v| !v.is_empty()) {
        let home = PathBuf::from(home);
        if home.is_relative() {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            return Ok(cwd.join(home));
        }
        return Ok(home);
    }
    let user = std::env::var_os("HOME").filter(|v| !v.is_empty()).context(
        "cannot find a home for CodeSmith's state: set CODESMITH_HOME (or HOME) to a writable directory",
    )?;
    Ok(PathBuf::from(user).join(".codesmith"))
}

/// The canonical workspace: `--workspace` or the current directory.
pub(crate) fn workspace(arg: Option<&Path>) -> Result<PathBuf> {
    let dir = match arg {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let canonical = dir.canonicalize().with_context(|| {
        format!(
            "workspace {} does not exist; pass an existing directory with --workspace",
            dir.display()
        )
    })?;
    if !canonical.is_dir() {
        bail!("workspace {} is not a directory", canonical.display());
    }
    check_workspace_scope(&canonical)?;
    Ok(canonical)
}

/// Refuses a workspace that would hand the model the user's own files: `/`, `$HOME`, or
/// any directory containing `$HOME` or `$CODESMITH_HOME` (its approvals, policy and
/// memory would become workspace files). The error says to choose the project directory.
///
/// Both homes are located as the kernel would find them once created
/// ([`codesmith_tools::fs::paths::real_location_of`]), so one that does not exist yet, or
/// is spelled through a symlink or `..`, is still recognised.
fn check_workspace_scope(canonical: &Path) -> Result<()> {
    let canon = |p: PathBuf| codesmith_tools::fs::paths::real_location_of(&p).unwrap_or(p);
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| canon(PathBuf::from(h)));
    let codesmith_home = home_dir().ok().map(canon);
    let what = if canonical.parent().is_none() {
        Some("the file-system root".to_string())
    } else if user_home.as_deref() == Some(canonical) {
        Some("your home directory ($HOME)".to_string())
    } else if let Some(h) = user_home.as_deref().filter(|h| h.starts_with(canonical)) {
        Some(format!(
            "a directory that contains your home directory {}",
            h.display()
        ))
    } else {
        codesmith_home
            .as_deref()
            .filter(|h| h.starts_with(canonical))
            .map(|h| {
                format!(
                    "a directory that contains CodeSmith's home {} ($CODESMITH_HOME)",
                    h.display()
                )
            })
    };
    if let Some(what) = what {
        bail!(
            "workspace {} is {what}: the model could read and change your own files, keys and \
             CodeSmith's approvals there. Choose the project directory instead (cd into it, or \
             pass --workspace DIR)",
            canonical.display()
        );
    }
    Ok(())
}

/// The first notice of a session whose project carries memory: what the `remember` tool
/// (scope `project`) wrote in an earlier session is loaded into this one, so the user sees
/// that it is there and where to review it.
fn project_memory_note(workspace: &Path) -> Option<String> {
    let index = codesmith_tools::memory::project_memory_dir(workspace).join("MEMORY.md");
    let text = read_regular_text(&index, codesmith_tools::memory::MAX_FILE_BYTES).ok()?;
    let facts = text.lines().filter(|l| !l.trim().is_empty()).count();
    (facts > 0).then(|| {
        format!(
            "project memory: {} ({facts} lines, written by earlier sessions or committed to the \
             repository) is loaded into this session as facts; review it there",
            index.display()
        )
    })
}

/// The project's `.codesmith/` directory, unless it is (through a symlink) the user's own
/// `$CODESMITH_HOME` or lies inside it: the user's files are never read as project
/// configuration.
pub(crate) fn project_dir(workspace: &Path, home: &Path) -> Option<PathBuf> {
    let dir = workspace.join(".codesmith");
    match (dir.canonicalize(), home.canonicalize()) {
        (Ok(d), Ok(h)) if d.starts_with(&h) => None,
        _ => Some(dir),
    }
}

/// The user config file: `<home>/config.toml` (it may not exist).
pub(crate) fn user_config_path(home: &Path) -> PathBuf {
    home.join("config.toml")
}

/// The largest configuration or rules file that is read (`config.toml`, `policy.toml`).
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration or rules file: `None` when it does not exist. Never blocks or
/// reads without end: a FIFO, a device (a symlink to `/dev/zero`), a directory, a file
/// over [`MAX_CONFIG_BYTES`] or one that is not UTF-8 is an error that names the file and
/// what to do.
///
/// # Errors
/// As above, and when the file cannot be opened or read.
pub(crate) fn read_config_file(path: &Path) -> Result<Option<String>> {
    match read_regular_text(path, MAX_CONFIG_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::NotFound) => Ok(None),
        Err(e) => bail!(
            "cannot read {}: {e}; make it a UTF-8 TOML file of at most {MAX_CONFIG_BYTES} \
             bytes, or remove it",
            path.display()
        ),
    }
}

/// Reads the user config; a missing file is an empty config.
pub(crate) fn read_user_config(home: &Path) -> Result<FileConfig> {
    let path = user_config_path(home);
    match read_config_file(&path) {
        Ok(Some(text)) => toml::from_str(&text)
            .with_context(|| format!("{} is not valid: fix or remove it", path.display())),
        Ok(None) => Ok(FileConfig::default()),
        Err(e) => Err(e),
    }
}

/// `[trust] read` of the user config: each entry `~/`-expanded and checked
/// ([`codesmith_tools::fs::trusted::check_root`]); one that cannot be trusted is skipped
/// with a warning naming why.
///
/// # Errors
/// An entry that is neither absolute nor `~/...`.
fn trusted_reads(
    file: &FileConfig,
    home: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<PathBuf>> {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out = Vec::new();
    for entry in file.trust.iter().flat_map(|t| t.read.iter().flatten()) {
        let path = expand_home(entry, user_home.as_deref());
        if !path.is_absolute() {
            anyhow::bail!("[trust] read = {entry:?}: use an absolute path or one starting with ~/");
        }
        match codesmith_tools::fs::trusted::check_root(&path, home) {
            Ok(dir) if !out.contains(&dir) => out.push(dir),
            Ok(_) => {}
            Err(why) => warnings.push(format!("ignored [trust] read entry {entry:?}: {why}")),
        }
    }
    Ok(out)
}

/// `entry` with a leading `~/` (or `~` alone) replaced by the user's home directory.
fn expand_home(entry: &str, user_home: Option<&Path>) -> PathBuf {
    match (entry.strip_prefix("~/"), user_home) {
        (Some(rest), Some(h)) => h.join(rest),
        (None, Some(h)) if entry == "~" => h.to_path_buf(),
        _ => PathBuf::from(entry),
    }
}

#[cfg(test)]
#[test]
fn a_lone_tilde_is_the_home_directory() {
    let home = Path::new("/home/u");
    assert_eq!(expand_home("~", Some(home)), home);
    assert_eq!(expand_home("~/", Some(home)), home.join(""));
    assert_eq!(expand_home("~/src", Some(home)), home.join("src"));
    assert_eq!(expand_home("~x", Some(home)), PathBuf::from("~x"));
}

/// The project layer: `<workspace>/.codesmith/config.toml` as read, with what it may
/// not do said in `notes` (ignored keys, values that would loosen, a file that does not
/// parse). Nothing in it ever loosens a setting.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProjectLayer {
    /// The file, when one was found (`None`: no project config).
    pub path: Option<PathBuf>,
    /// The keys that may tighten (empty when the file is absent or does not parse).
    pub config: ProjectConfig,
    /// Why parts of it are ignored, one sentence each.
    pub notes: Vec<String>,
}

impl ProjectLayer {
    /// Reads the project config of `workspace` (never one inside `home`, see
    /// [`project_dir`]). A file that does not parse is ignored with a note: it can only
    /// tighten, so ignoring it loosens nothing the user set.
    pub(crate) fn load(workspace: &Path, home: &Path) -> ProjectLayer {
        let Some(dir) = project_dir(workspace, home) else {
            return ProjectLayer::default();
        };
        let path = dir.join("config.toml");
        let shown = path.display().to_string();
        let mut notes = Vec::new();
        let text = match read_config_file(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return ProjectLayer::default(),
            Err(e) => {
                notes.push(format!("ignored {shown}: {e:#}"));
                return ProjectLayer {
                    path: Some(path),
                    config: ProjectConfig::default(),
                    notes,
                };
            }
        };
        let config = match toml::from_str::<ProjectConfig>(&text) {
            Ok(cfg) => cfg,
            Err(e) => {
                notes.push(format!("ignored {shown}: {e}"));
                return ProjectLayer {
                    path: Some(path),
                    config: ProjectConfig::default(),
                    notes,
                };
            }
        };
        for key in config.ignored.keys() {
            notes.push(format!(
                "ignored `{key}` in {shown}: project config may only tighten `approval` and `sandbox`"
            ));
        }
        if let Some(asked) = config.approval.as_deref()
            && let Err(e) = asked.parse::<ApprovalMode>()
        {
            notes.push(format!("ignored approval in {shown}: {e}"));
        }
        if let Some(sandbox) = &config.sandbox {
            if sandbox.backend.is_some() {
                notes.push(format!(
                    "ignored [sandbox] backend in {shown}: only your own config.toml chooses it"
                ));
            }
            if sandbox.required == Some(false)
                || sandbox.network == Some(true)
                || sandbox.read.is_some()
                || sandbox.write.is_some()
                || sandbox.env.is_some()
            {
                notes.push(format!(
                    "ignored a loosening [sandbox] setting in {shown}: a project may only \
                     tighten it (its read, write and env lists only remove entries from yours)"
                ));
            }
        }
        ProjectLayer {
            path: Some(path),
            config,
            notes,
        }
    }

    /// The project's `[hooks]` section, read apart from the rest, so a mistake in it never
    /// costs the file's tightening: `Ok(None)` when it has none or an empty one.
    ///
    /// # Errors
    /// The section does not parse (an unknown event or key); the message says why.
    pub(crate) fn hooks(&self) -> Result<Option<codesmith_tools::hooks::HooksSection>, String> {
        let Some(table) = &self.config.hooks else {
            return Ok(None);
        };
        toml::Value::Table(table.clone())
            .try_into::<codesmith_tools::hooks::HooksSection>()
            .map(|s| Some(s).filter(|s| !s.is_empty()))
            .map_err(|e| e.to_string())
    }

    /// The language servers the project turns off (`[lsp.NAME] enabled = false`), and a
    /// warning for each entry that asks for anything else: a project may disable a server,
    /// never add one or change its command (a server runs project code, but its command is
    /// the user's choice).
    pub(crate) fn disabled_lsp(&self) -> (Vec<String>, Vec<String>) {
        let (mut off, mut warnings) = (Vec::new(), Vec::new());
        for (name, entry) in self.config.lsp.iter().flatten() {
            let only_off = entry.as_table().is_some_and(|t| {
                t.len() == 1 && t.get("enabled").and_then(toml::Value::as_bool) == Some(false)
            });
            if only_off {
                off.push(name.clone());
            } else {
                warnings.push(format!(
                    "the project's [lsp.{}] is ignored: a project config may only turn a \
                     language server off (`enabled = false`); its command is set in your own \
                     config",
                    codesmith_policy::visible_line(name, 60)
                ));
            }
        }
        (off, warnings)
    }

    /// The approval mode the project asks for, when it parses.
    fn approval(&self) -> Option<ApprovalMode> {
        self.config.approval.as_deref().and_then(|a| a.parse().ok())
    }
}

fn parse_provider(name: &str) -> Result<ProviderName> {
    match name {
        "openai" => Ok(ProviderName::Openai),
        "anthropic" => Ok(ProviderName::Anthropic),
        "local" => Ok(ProviderName::Local),
        other => bail!("unknown provider {other:?} in config.toml: use openai, anthropic or local"),
    }
}

/// What the command line said, for the flag layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flags<'a> {
    /// `--workspace`.
    pub workspace: Option<&'a Path>,
    /// `--provider`, `--model`, `--base-url`, `--approval`.
    pub model: &'a ModelArgs,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
}

/// The model flags of a command that has none (`tool`, `mcp`, `doctor`, `config show`).
pub(crate) const NO_MODEL_FLAGS: ModelArgs = ModelArgs {
    provider: None,
    model: None,
    base_url: None,
    approval: None,
    context_window: None,
};

/// Resolves every layer into [`Settings`]: the files are read here and nowhere else.
///
/// # Errors
/// An unusable home or workspace, a user config that does not parse (unknown keys are
/// rejected), an invalid value (provider, approval mode, base URL, idle timeout,
/// `[openai]` settings), or invalid exec-policy rules: each names what to fix. The
/// project config never fails resolution; what it may not set is ignored with a warning.
pub(crate) fn resolve(flags: Flags<'_>) -> Result<Settings> {
    let home = home_dir()?;
    let workspace = workspace(flags.workspace)?;
    let file = read_user_config(&home)?;
    let project = ProjectLayer::load(&workspace, &home);
    let mut origins = Origins::default();
    origins.set_if(
        env_nonempty("CODESMITH_HOME").is_some(),
        "home",
        Origin::Env("CODESMITH_HOME"),
    );
    origins.set_if(
        flags.workspace.is_some(),
        "workspace",
        Origin::Flag("--workspace"),
    );
    let mut warnings = project.notes.clone();
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let instructions = codesmith_tools::instructions::load_instructions(
        &workspace,
        user_home.as_deref(),
        &codesmith_tools::instructions::InstructionLimits::default(),
    );
    let mut session_notices: Vec<String> = instructions
        .warnings
        .iter()
        .map(|w| format!("instructions: {w}"))
        .collect();
    session_notices.extend(project_memory_note(&workspace));
    let skills = prepare_skills(&home, &workspace, false, &mut session_notices);
    let trust = codesmith_tools::skills::trust::TrustStore::load(&home);
    let commands =
        codesmith_tools::extensions::commands::SlashCommands::discover(&home, &workspace, &trust);
    session_notices.extend(commands.notices.iter().map(|n| format!("commands: {n}")));
    let mut agent_notices = Vec::new();
    let custom_agents = codesmith_tools::extensions::agents::discover_agents(
        &home,
        &workspace,
        &trust,
        &mut agent_notices,
    );
    session_notices.extend(agent_notices.iter().map(|n| format!("agents: {n}")));
    let model = flags.model;
    let provider = match (model.provider, &file.provider) {
        (Some(p), _) => {
            origins.set("provider", Origin::Flag("--provider"));
            p
        }
        (None, Some(name)) => {
            origins.set("provider", Origin::User);
            parse_provider(name)?
        }
        (None, None) => ProviderName::Local,
    };
    let vendor_name = crate::setup::provider_label(provider);
    let vendor = match provider {
        ProviderName::Openai => file.openai.clone().unwrap_or_default(),
        ProviderName::Anthropic => file.anthropic.clone().unwrap_or_default(),
        ProviderName::Local => VendorSection::default(),
    };
    let model_name = if let Some(m) = model.model.clone() {
        origins.set("model", Origin::Flag("--model"));
        m
    } else if let Some(m) = vendor.model.clone().or_else(|| file.model.clone()) {
        origins.set("model", Origin::User);
        m
    } else {
        default_model(provider).to_string()
    };
    let url_key = format!("{vendor_name}.base_url");
    let base_url = if let Some(url) = model.base_url.clone() {
        origins.set(&url_key, Origin::Flag("--base-url"));
        Some(url)
    } else if let Some((var, url)) = env_base_url(provider) {
        origins.set(&url_key, Origin::Env(var));
        Some(url)
    } else {
        origins.set_if(vendor.base_url.is_some(), &url_key, Origin::User);
        vendor.base_url.clone()
    };
    if let Some(url) = &base_url {
        check_base_url(url)?;
    }
    let key_name = format!("{vendor_name}.api_key");
    let api_key = match api_key(provider, base_url.as_deref()) {
        Some((var, key)) => {
            check_api_key(&key, &format!("${var}"))?;
            origins.set(&key_name, Origin::Env(var));
            Some(key)
        }
        None => {
            if let Some(key) = &vendor.api_key {
                check_api_key(key, &format!("[{vendor_name}] api_key in config.toml"))?;
            }
            origins.set_if(vendor.api_key.is_some(), &key_name, Origin::User);
            vendor.api_key.clone()
        }
    };
    let approval = resolve_approval(model.approval, &file, &project, &mut origins)?;
    if let Some(asked) = project.config.approval.as_deref()
        && project
            .approval()
            .is_some_and(|mode| !mode.tightens(approval))
    {
        warnings.push(format!(
            "ignored approval = {asked:?} in .codesmith/config.toml: a project may only tighten \
             the approval mode"
        ));
    }
    let idle_secs = idle_timeout_secs(&file, &mut origins)?;
    let reasoning_replay = file.reasoning_replay()?;
    let prompt_cache_key = file.prompt_cache_key()?;
    let vendor_images = match provider {
        ProviderName::Anthropic => file.anthropic.as_ref().and_then(|a| a.images),
        ProviderName::Openai => file.openai.as_ref().and_then(|o| o.images),
        ProviderName::Local => None,
    };
    origins.set_if(
        vendor_images.is_some(),
        if provider == ProviderName::Anthropic {
            "anthropic.images"
        } else {
            "openai.images"
        },
        Origin::User,
    );
    let images = provider != ProviderName::Local && vendor_images.unwrap_or(true);
    let openai = file.openai.as_ref();
    origins.set_if(
        openai.is_some_and(|o| o.reasoning_replay.is_some()),
        "openai.reasoning_replay",
        Origin::User,
    );
    origins.set_if(
        prompt_cache_key.is_some(),
        "openai.prompt_cache_key",
        Origin::User,
    );
    let mut agents = file.agent_settings()?;
    agents.custom = custom_agents;
    let section = file.agents.as_ref();
    origins.set_if(
        section.is_some_and(|a| a.model.is_some()),
        "agents.model",
        Origin::User,
    );
    origins.set_if(
        section.is_some_and(|a| a.max_turns.is_some()),
        "agents.max_turns",
        Origin::User,
    );
    origins.set_if(
        section.is_some_and(|a| a.max_wall_secs.is_some()),
        "agents.max_wall_secs",
        Origin::User,
    );
    let lookup = |name: &str| std::env::var(name).ok();
    let utility = file
        .utility_model
        .as_ref()
        .map(|u| u.resolve((provider, base_url.as_deref(), api_key.as_deref()), &lookup))
        .transpose()?;
    if let Some(u) = file.utility_model.as_ref() {
        for (key, set) in [
            ("utility_model.provider", u.provider.is_some()),
            ("utility_model.model", u.model.is_some()),
            ("utility_model.base_url", u.base_url.is_some()),
            ("utility_model.api_key_env", u.api_key_env.is_some()),
        ] {
            origins.set_if(set, key, Origin::User);
        }
    }
    let rules = load_rules(&home, &workspace, &mut warnings)?;
    let sandbox = tighten_sandbox(
        file.sandbox.clone().unwrap_or_default(),
        project.config.sandbox.as_ref(),
        &mut origins,
    );
    // A value no command could use is refused here, so every command (`config show`
    // too) says so the same way.
    if let Some(name) = &sandbox.backend {
        codesmith_tools::sandbox::check_backend_name(name)
            .map_err(|e| anyhow::anyhow!("[sandbox] backend = {name:?}: {e}"))?;
    }
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    sandbox.extra(user_home.as_deref())?;
    let network = file.network.clone().unwrap_or_default();
    origins.set_if(file.network.is_some(), "network", Origin::User);
    let fetch = network_fetch(&network, &mut warnings);
    let max_turns = match (flags.max_turns, file.max_turns) {
        (Some(n), _) => {
            origins.set("max_turns", Origin::Flag("--max-turns"));
            n
        }
        (None, Some(n)) => {
            origins.set("max_turns", Origin::User);
            n
        }
        (None, None) => DEFAULT_MAX_TURNS,
    }
    .max(1);
    origins.set_if(
        file.max_output_tokens.is_some(),
        "max_output_tokens",
        Origin::User,
    );
    let context = context_budget(
        &model_name,
        model.context_window,
        &vendor,
        &file,
        &mut origins,
    )?;
    let verify_claims = file.verify_claims();
    origins.set_if(
        file.verification
            .as_ref()
            .is_some_and(|v| v.result_claims.is_some()),
        "verification.result_claims",
        Origin::User,
    );
    let slop_from_verdicts = file.verification.as_ref().and_then(|v| v.slop);
    origins.set_if(
        slop_from_verdicts.is_some(),
        "verification.slop",
        Origin::User,
    );
    let slop_from_verdicts = slop_from_verdicts.unwrap_or(false);
    let trust_read = trusted_reads(&file, &home, &mut warnings)?;
    let early_start = early_start(&mut origins)?;
    origins.set_if(!trust_read.is_empty(), "trust.read", Origin::User);
    let snapshots = file.snapshots.as_ref().and_then(|s| s.enabled);
    origins.set_if(snapshots.is_some(), "snapshots.enabled", Origin::User);
    origins.set_if(
        file.mcp_defer_threshold.is_some(),
        "mcp_defer_threshold",
        Origin::User,
    );
    // A hosted backend without its key leaves the tool out, saying why; any other mistake
    // is an error, so a typo never silently drops the tool.
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let web_search = match &file.web_search {
        None => None,
        Some(section) => match section.missing_key(&env)? {
            Some(why) => {
                warnings.push(format!("{why}; the web_search tool is not offered"));
                None
            }
            None => section.resolve(&env)?,
        },
    };
    origins.set_if(web_search.is_some(), "web_search.backend", Origin::User);
    for name in file.lsp.keys() {
        origins.set(format!("lsp.{name}"), Origin::User);
    }
    let (lsp_off, lsp_warnings) = project.disabled_lsp();
    warnings.extend(lsp_warnings);
    for name in &lsp_off {
        origins.set(format!("lsp.{name}"), Origin::ProjectTightened);
    }
    // A built-in server is offered when its program is found the way every host program
    // is: relative `PATH` entries and the workspace are not searched.
    let on_path =
        |program: &str| codesmith_tools::host_programs::find_program(program, &workspace).is_some();
    let lsp = codesmith_tools::lsp::LspSettings::resolve(&file.lsp, &lsp_off, &on_path);
    for name in file.mcp_servers.keys() {
        origins.set(format!("mcp_servers.{name}"), Origin::User);
    }
    let hooks = resolve_hooks(
        &home,
        &workspace,
        file.hooks.as_ref(),
        &project,
        &mut origins,
        &mut warnings,
    )?;
    let notifications = file
        .notifications
        .as_ref()
        .map(NotificationsSection::resolve)
        .transpose()?
        .unwrap_or_default();
    if let Some(n) = &file.notifications {
        origins.set_if(n.when.is_some(), "notifications.when", Origin::User);
        origins.set_if(n.method.is_some(), "notifications.method", Origin::User);
    }
    Ok(Settings {
        hooks,
        commands,
        notifications,
        agents,
        utility,
        home,
        workspace,
        provider,
        model: model_name,
        base_url,
        api_key,
        approval,
        max_turns,
        context,
        idle_timeout: Duration::from_secs(idle_secs),
        reasoning_replay,
        prompt_cache_key,
        images,
        max_output_tokens: file.max_output_tokens,
        network,
        fetch,
        verify_claims,
        slop_from_verdicts,
        trust_read,
        early_start,
        snapshots: snapshots.unwrap_or(true),
        mcp_defer_threshold: file
            .mcp_defer_threshold
            .unwrap_or(codesmith_tools::mcp::DEFAULT_DEFER_THRESHOLD),
        mcp_servers: file.mcp_servers,
        web_search,
        lsp,
        rules,
        sandbox,
        warnings,
        session_notices,
        instructions,
        origins,
        skills,
    })
}

/// The user's hooks, then the project's when the user trusted them on this machine at
/// their current digest (otherwise a warning says how to trust them, and they do not run).
///
/// # Errors
/// A user hook entry that cannot be used (see `codesmith_tools::hooks::Hooks::from_section`).
fn resolve_hooks(
    home: &Path,
    workspace: &Path,
    user: Option<&codesmith_tools::hooks::HooksSection>,
    project: &ProjectLayer,
    origins: &mut Origins,
    warnings: &mut Vec<String>,
) -> Result<codesmith_tools::hooks::Hooks> {
    use codesmith_tools::hooks::{HookSource, Hooks};
    use codesmith_tools::skills::trust::{TrustKind, TrustStore};
    let mut hooks = Hooks::default();
    if let Some(section) = user {
        hooks = Hooks::from_section(section, HookSource::User)
            .map_err(|e| anyhow::anyhow!("{e} (in {})", user_config_path(home).display()))?;
        for (event, _) in section.entries() {
            origins.set(format!("hooks.{}", event.as_str()), Origin::User);
        }
    }
    let section = match project.hooks() {
        Ok(Some(section)) => section,
        Ok(None) => return Ok(hooks),
        Err(e) => {
            warnings.push(format!(
                "ignored the project's [hooks] in .codesmith/config.toml: {e}"
            ));
            return Ok(hooks);
        }
    };
    let section = &section;
    let digest = section.digest();
    let state = TrustStore::load(home).project_state(workspace, TrustKind::Hooks, "hooks", &digest);
    if !state.is_trusted() {
        let what = match state {
            codesmith_tools::skills::trust::TrustState::Changed { .. } => {
                "changed since you trusted them"
            }
            _ => "not trusted on this machine",
        };
        let listed: Vec<String> = section
            .entries()
            .map(|(event, entry)| format!("  {}", entry.describe(event)))
            .collect();
        warnings.push(format!(
            "the project's hooks in .codesmith/config.toml are {what}, so they do not run (they \
             would run outside the sandbox with your rights); review them, then run `codesmith \
             trust hooks` to let them run:\n{}",
            listed.join("\n")
        ));
        return Ok(hooks);
    }
    match Hooks::from_section(section, HookSource::Project) {
        Ok(project_hooks) => {
            hooks.extend(project_hooks);
            for (event, _) in section.entries() {
                origins.set(format!("hooks.{}", event.as_str()), Origin::ProjectTrusted);
            }
        }
        Err(e) => warnings.push(format!(
            "ignored the project's hooks in .codesmith/config.toml: {e}"
        )),
    }
    Ok(hooks)
}

/// The context window and compaction threshold: `--context-window`, else the vendor
/// section's `context_window`, else the built-in table, else a guess; `compact_at`
/// (percent, 1 to 100, default 80).
///
/// # Errors
/// A `compact_at` outside 1..=100 or a `context_window` below 1024.
fn context_budget(
    model: &str,
    flag: Option<u64>,
    vendor: &VendorSection,
    file: &FileConfig,
    origins: &mut Origins,
) -> Result<codesmith_engine::ContextBudget> {
    if let Some(percent) = file.compact_at
        && !(1..=100).contains(&percent)
    {
        bail!(
            "compact_at = {percent}: use a percentage of the context window from 1 to 100 (default 80)"
        );
    }
    if let Some(window) = vendor.context_window
        && window < 1024
    {
        bail!(
            "context_window = {window}: a context window is at least 1024 tokens; remove the key to use the built-in table"
        );
    }
    origins.set_if(file.compact_at.is_some(), "compact_at", Origin::User);
    if flag.is_some() {
        origins.set("context_window", Origin::Flag("--context-window"));
    } else {
        origins.set_if(
            vendor.context_window.is_some(),
            "context_window",
            Origin::User,
        );
    }
    Ok(codesmith_engine::ContextBudget::resolve(
        model,
        flag,
        vendor.context_window,
        None,
        file.compact_at
            .unwrap_or(codesmith_engine::budget::DEFAULT_COMPACT_AT_PERCENT),
    ))
}

/// The `[network]` policy and the fetch tool's address policy, built once by the one
/// builder ([`FetchConfig::from_network_config`]), whose warnings name each dropped host
/// pattern or fake-IP range; plus a warning for a `default` that is not `allow`, `ask`
/// (alias `prompt`) or `deny` (read as `ask`: a typo never allows).
fn network_fetch(section: &NetworkConfig, warnings: &mut Vec<String>) -> FetchConfig {
    if let Some(default) = section.default.as_deref()
        && !matches!(
            default.trim().to_ascii_lowercase().as_str(),
            "allow" | "ask" | "prompt" | "deny"
        )
    {
        warnings.push(format!(
            "[network] default = {default:?} is not allow, ask or deny: read as ask"
        ));
    }
    let (fetch, notes) = FetchConfig::from_network_config(Some(section));
    warnings.extend(notes);
    fetch
}

/// Installs or upgrades the bundled exemplar skills into `<home>/skills/` (once per
/// bundle version; a user's edits are kept), then finds the user's and the project's
/// skills. Every skipped skill, an upgrade and a kept edit become notices in `warnings`;
/// the first install only when `announce_first_install` (the `skills` commands; a session
/// starts without that line, and lists the skills in its prompt).
pub(crate) fn prepare_skills(
    home: &Path,
    workspace: &Path,
    announce_first_install: bool,
    warnings: &mut Vec<String>,
) -> codesmith_tools::skills::SkillSet {
    use codesmith_tools::skills::bundle::{BUNDLE_VERSION, bundled, install_bundle};
    match install_bundle(home, &bundled()) {
        Ok(mut done) => {
            if !announce_first_install {
                done.added.clear();
            }
            warnings.extend(
                done.notices(home, BUNDLE_VERSION)
                    .into_iter()
                    .map(|n| format!("skills: {n}")),
            );
        }
        Err(e) => warnings.push(format!(
            "skills: could not install the bundled skills into {}: {e}; check that the \
             directory is writable",
            codesmith_tools::skills::user_skills_dir(home).display()
        )),
    }
    let skills = codesmith_tools::skills::discover(home, workspace);
    warnings.extend(skills.notices.iter().map(|n| format!("skills: {n}")));
    skills
}

/// Reads the exec-policy rule files: the user's may allow, ask and deny; the
/// project's may only ask and deny (its allow rules are ignored with a warning).
pub(crate) fn load_rules(
    home: &Path,
    workspace: &Path,
    warnings: &mut Vec<String>,
) -> Result<codesmith_policy::Rules> {
    // The user's rules may deny: one that cannot be read stops the session rather than
    // dropping them. The project's may only tighten: one that cannot be read is ignored
    // with a warning.
    let user = read_config_file(&home.join("policy.toml"))?;
    let project = match project_dir(workspace, home).map(|d| d.join("policy.toml")) {
        Some(path) => read_config_file(&path).unwrap_or_else(|e| {
            warnings.push(format!("ignored the project's rules: {e:#}"));
            None
        }),
        None => None,
    };
    let (rules, notes) = codesmith_policy::Rules::from_sources(user.as_deref(), project.as_deref())
        .map_err(|e| anyhow::anyhow!("exec-policy rules are invalid: {e}"))?;
    warnings.extend(notes);
    Ok(rules)
}

/// The project may require a sandbox or cut its network, never the reverse.
fn tighten_sandbox(
    mut user: SandboxSection,
    project: Option<&SandboxSection>,
    origins: &mut Origins,
) -> SandboxSection {
    origins.set_if(user.backend.is_some(), "sandbox.backend", Origin::User);
    origins.set_if(user.required.is_some(), "sandbox.required", Origin::User);
    origins.set_if(user.network.is_some(), "sandbox.network", Origin::User);
    origins.set_if(user.read.is_some(), "sandbox.read", Origin::User);
    origins.set_if(user.write.is_some(), "sandbox.write", Origin::User);
    origins.set_if(user.env.is_some(), "sandbox.env", Origin::User);
    if let Some(p) = project {
        if p.required == Some(true) {
            user.required = Some(true);
            origins.set("sandbox.required", Origin::ProjectTightened);
        }
        if p.network == Some(false) {
            user.network = Some(false);
            origins.set("sandbox.network", Origin::ProjectTightened);
        }
        // A project list keeps only the user's entries it also names.
        for (key, mine, theirs) in [
            ("sandbox.read", &mut user.read, &p.read),
            ("sandbox.write", &mut user.write, &p.write),
            ("sandbox.env", &mut user.env, &p.env),
        ] {
            if let (Some(list), Some(keep)) = (mine.as_mut(), theirs) {
                list.retain(|e| keep.contains(e));
                origins.set(key, Origin::ProjectTightened);
            }
        }
    }
    user
}

/// Flag, else the stricter of the user's mode and the project's; an unreadable project
/// value cannot loosen anything: it is ignored (and warned about by [`ProjectLayer`]).
fn resolve_approval(
    flag: Option<ApprovalMode>,
    file: &FileConfig,
    project: &ProjectLayer,
    origins: &mut Origins,
) -> Result<ApprovalMode> {
    if let Some(mode) = flag {
        origins.set("approval", Origin::Flag("--approval"));
        return Ok(mode);
    }
    let base = file
        .approval
        .as_deref()
        .map(str::parse::<ApprovalMode>)
        .transpose()
        .context("approval in config.toml")?
        .unwrap_or_default();
    origins.set_if(file.approval.is_some(), "approval", Origin::User);
    match project.approval() {
        Some(p) if p != base && p.tightens(base) => {
            origins.set("approval", Origin::ProjectTightened);
            Ok(p)
        }
        _ => Ok(base),
    }
}

/// The variable that turns early start of read-only calls off (`0` or `false`).
const EARLY_START_VAR: &str = "CODESMITH_EARLY_START";

fn early_start(origins: &mut Origins) -> Result<bool> {
    match std::env::var(EARLY_START_VAR) {
        Ok(v) if !v.is_empty() => {
            origins.set("early_start", Origin::Env(EARLY_START_VAR));
            match v.as_str() {
                "1" | "true" => Ok(true),
                "0" | "false" => Ok(false),
                _ => anyhow::bail!("{EARLY_START_VAR}={v:?} is not 1, 0, true or false"),
            }
        }
        _ => Ok(true),
    }
}

/// The variable that sets the stream idle window.
const IDLE_TIMEOUT_VAR: &str = "CODESMITH_STREAM_IDLE_TIMEOUT_SECS";

fn idle_timeout_secs(file: &FileConfig, origins: &mut Origins) -> Result<u64> {
    match std::env::var(IDLE_TIMEOUT_VAR) {
        Ok(v) if !v.is_empty() => {
            origins.set("stream_idle_timeout_secs", Origin::Env(IDLE_TIMEOUT_VAR));
            v.parse::<u64>().ok().filter(|n| *n > 0).with_context(|| {
                format!("{IDLE_TIMEOUT_VAR}={v:?} is not a positive number of seconds")
            })
        }
        _ => {
            origins.set_if(
                file.stream_idle_timeout_secs.is_some(),
                "stream_idle_timeout_secs",
                Origin::User,
            );
            Ok(file
                .stream_idle_timeout_secs
                .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS)
                .max(1))
        }
    }
}

fn default_model(provider: ProviderName) -> &'static str {
    match provider {
        ProviderName::Openai => "gpt-4.1-mini",
        ProviderName::Anthropic => "claude-sonnet-4-5",
        ProviderName::Local => "smollm2-135m-instruct",
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The endpoint from the environment, with the variable that set it.
fn env_base_url(provider: ProviderName) -> Option<(&'static str, String)> {
    let var = match provider {
        ProviderName::Openai => "OPENAI_BASE_URL",
        ProviderName::Anthropic => "ANTHROPIC_BASE_URL",
        ProviderName::Local => return None,
    };
    env_nonempty(var).map(|url| (var, url))
}

/// The key from the environment, by the providers' own rule (one rule for
/// both the CLI and the clients): `DEEPSEEK_API_KEY` for a DeepSeek URL,
/// else `OPENAI_API_KEY`; `ANTHROPIC_API_KEY` for Anthropic. Returned with the name of
/// the variable that held it.
fn api_key(provider: ProviderName, base_url: Option<&str>) -> Option<(&'static str, String)> {
    use codesmith_providers::{
        DEFAULT_OPENAI_BASE_URL, anthropic_key_from_env, openai_key_from_env,
    };
    match provider {
        ProviderName::Openai => openai_key_from_env(base_url.unwrap_or(DEFAULT_OPENAI_BASE_URL)),
        ProviderName::Anthropic => anthropic_key_from_env(),
        ProviderName::Local => None,
    }
}

/// The environment variables that can hold `provider`'s key for `base_url` (default
/// endpoint when `None`), in the order the client tries them; empty for the local model.
pub(crate) fn key_vars(provider: ProviderName, base_url: Option<&str>) -> &'static [&'static str] {
    match provider {
        ProviderName::Openai => codesmith_providers::openai_key_vars(
            base_url.unwrap_or(codesmith_providers::DEFAULT_OPENAI_BASE_URL),
        ),
        ProviderName::Anthropic => codesmith_providers::ANTHROPIC_KEY_VARS,
        ProviderName::Local => &[],
    }
}

/// An API key travels in an HTTP header, which cannot carry a newline (RFC 9110, field
/// values): a key with a control character (a newline pasted with it, NUL) is a
/// configuration error naming where it came from, never a request that fails and is
/// retried as if the server were down. The key itself is never quoted.
fn check_api_key(key: &str, source: &str) -> Result<()> {
    if let Some(c) = key.chars().find(|c| c.is_control()) {
        bail!(
            "the API key from {source} contains a control character ({}): keys cannot hold              newlines or other control characters; set it again without them",
            c.escape_unicode()
        );
    }
    Ok(())
}

/// A base URL must be an absolute `http` or `https` URL; anything else is a
/// configuration error, not a network failure to retry.
fn check_base_url(raw: &str) -> Result<()> {
    // The message quotes the URL, never a password or key in it.
    let url = codesmith_policy::scrub_secrets(raw);
    match url::Url::parse(raw) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        Ok(u) => bail!(
            "the base URL {url:?} uses {:?}: it must be an http(s) URL like https://api.openai.com/v1 \
             (fix --base-url, the *_BASE_URL variable or config.toml)",
            u.scheme()
        ),
        Err(e) => bail!(
            "the base URL {url:?} is not a URL ({e}): use one like https://api.openai.com/v1 \
             (fix --base-url, the *_BASE_URL variable or config.toml)"
        ),
    }
}

#[cfg(test)]
mod agents_tests {
    use super::*;

    #[test]
    fn a_key_with_a_control_character_is_refused_without_quoting_it() {
        let err = check_api_key("sk-secret\n", "$OPENAI_API_KEY").expect_err("a newline");
        let text = err.to_string();
        assert!(text.contains("$OPENAI_API_KEY"), "{text}");
        assert!(text.contains("\\u{a}"), "{text}");
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(check_api_key(" sk-ok ", "$OPENAI_API_KEY").is_ok());
    }

    fn parse(text: &str) -> FileConfig {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn agents_settings_default_override_and_refuse_zero_caps() {
        let defaults = parse("").agent_settings().ok();
        assert_eq!(defaults, Some(codesmith_engine::AgentSettings::default()));
        let set = parse("[agents]\nmodel = \"small\"\nmax_turns = 5\nmax_wall_secs = 30\n")
            .agent_settings()
            .ok();
        assert_eq!(
            set,
            Some(codesmith_engine::AgentSettings {
                model: Some("small".into()),
                max_turns: 5,
                max_wall: std::time::Duration::from_secs(30),
                custom: Vec::new(),
            })
        );
        let zero = parse("[agents]\nmax_turns = 0\n").agent_settings();
        assert!(zero.is_err_and(|e| e.to_string().contains("at least 1")));
        assert!(toml::from_str::<FileConfig>("[agents]\nmax_rounds = 3\n").is_err());
    }
}

#[cfg(test)]
mod utility_model_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn section(text: &str) -> UtilityModelSection {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .utility_model
            .unwrap()
    }

    #[test]
    fn the_utility_model_inherits_the_session_endpoint_only_on_the_same_provider() {
        let env = |name: &str| (name == "K").then(|| "sk-k".to_string());
        let session = (
            ProviderName::Openai,
            Some("http://127.0.0.1:9/v1"),
            Some("sk-s"),
        );
        let same = section("[utility_model]\nmodel = \"small\"\n")
            .resolve(session, &env)
            .unwrap();
        assert_eq!(same.provider, ProviderName::Openai);
        assert_eq!(same.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(same.api_key.as_deref(), Some("sk-s"));
        let other = section(
            "[utility_model]\nprovider = \"anthropic\"\nmodel = \"haiku\"\napi_key_env = \"K\"\n",
        )
        .resolve(session, &env)
        .unwrap();
        assert_eq!(other.base_url, None);
        assert_eq!(other.api_key.as_deref(), Some("sk-k"));
        assert!(
            section("[utility_model]\nprovider = \"openai\"\n")
                .resolve(session, &env)
                .is_err()
        );
        assert!(
            section("[utility_model]\nprovider = \"local\"\nmodel = \"x\"\n")
                .resolve(session, &env)
                .is_err()
        );
        assert!(toml::from_str::<FileConfig>("[utility_model]\nkey = \"x\"\n").is_err());
    }
}

#[cfg(test)]
mod approval_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn resolved(user: Option<&str>, project: Option<&str>) -> ApprovalMode {
        let file = FileConfig {
            approval: user.map(str::to_string),
            ..FileConfig::default()
        };
        let project = ProjectLayer {
            path: None,
            config: ProjectConfig {
                approval: project.map(str::to_string),
                sandbox: None,
                hooks: None,
                lsp: None,
                ignored: toml::Table::new(),
            },
            notes: Vec::new(),
        };
        resolve_approval(None, &file, &project, &mut Origins::default()).unwrap()
    }

    #[test]
    fn the_default_is_auto_edit_and_suggest_still_parses_with_its_stricter_meaning() {
        assert_eq!(resolved(None, None), ApprovalMode::AutoEdit);
        assert_eq!(resolved(Some("suggest"), None), ApprovalMode::Suggest);
        assert_eq!(resolved(Some("auto-edit"), None), ApprovalMode::AutoEdit);
        // A project may only tighten, for writes, commands and network alike.
        assert_eq!(resolved(None, Some("suggest")), ApprovalMode::Suggest);
        assert_eq!(
            resolved(Some("suggest"), Some("read-only")),
            ApprovalMode::ReadOnly
        );
        assert_eq!(
            resolved(Some("suggest"), Some("never")),
            ApprovalMode::Suggest
        );
        assert_eq!(
            resolved(Some("auto"), Some("auto-edit")),
            ApprovalMode::AutoEdit
        );
        assert_eq!(
            resolved(Some("read-only"), Some("auto")),
            ApprovalMode::ReadOnly
        );
        let err = resolve_approval(
            None,
            &FileConfig {
                approval: Some("sometimes".into()),
                ..FileConfig::default()
            },
            &ProjectLayer {
                path: None,
                config: ProjectConfig::default(),
                notes: Vec::new(),
            },
            &mut Origins::default(),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("read-only, suggest, auto-edit"),
            "{err:#}"
        );
    }
}

#[cfg(test)]
mod project_lsp_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_project_may_turn_a_language_server_off_and_nothing_else() {
        let config: ProjectConfig = toml::from_str(
            "[lsp.pyright]\nenabled = false\n\
             [lsp.evil]\ncommand = [\"./run-me\"]\nextensions = [\"py\"]\n\
             [lsp.gopls]\nenabled = true\n",
        )
        .unwrap();
        let project = ProjectLayer {
            path: None,
            config,
            notes: Vec::new(),
        };
        let (off, warnings) = project.disabled_lsp();
        assert_eq!(off, ["pyright"]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("[lsp.evil]")));
        // What the project asked to turn off is not among the servers used, and its own
        // server is never added.
        let on_path = |_: &str| true;
        let lsp = codesmith_tools::lsp::LspSettings::resolve(&BTreeMap::new(), &off, &on_path);
        let names: Vec<&str> = lsp.servers.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            !names.contains(&"pyright") && !names.contains(&"evil"),
            "{names:?}"
        );
        assert!(names.contains(&"gopls"), "{names:?}");
    }
}
