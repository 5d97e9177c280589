//! Configuration (stage two): resolve flags, environment and config files once.
//!
//! Sources, highest first: command-line flags, environment variables, the user
//! config `$CODESMITH_HOME/config.toml`. The project config
//! `<workspace>/.codesmith/config.toml` is untrusted (anyone can commit one to a
//! repository): it may only tighten the approval mode and the sandbox, and is
//! ignored for credentials, endpoints, providers and the network policy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use codesmith_policy::ApprovalMode;
use serde::Deserialize;

use crate::args::{ApprovalArg, ModelArgs, ProviderName};

/// Default model rounds per task.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Default stream idle window (seed 002, "Failures, Recovery, and Takeover").
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 120;

/// `[openai]` / `[anthropic]` sections of the user config.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorSection {
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
}

/// `[sandbox]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Backend name: `auto` (bwrap when it works, else none; the default), `bwrap` or `none`.
    pub backend: Option<String>,
    /// Refuse to run commands when no isolating backend exists (default false).
    pub required: Option<bool>,
    /// Let sandboxed commands use the network (default false).
    pub network: Option<bool>,
}

impl SandboxSection {
    /// Whether sessions (`exec`, the UI, `tool`, `mcp`) refuse shell commands that nothing
    /// isolates: `required`, default false.
    pub fn required_in_sessions(&self) -> bool {
        self.required.unwrap_or(false)
    }

    /// Whether `codesmith sandbox run` refuses to run bare: `required`, default true unless
    /// the backend is explicitly `none` (asking for a sandboxed run and getting a bare one
    /// would be a lie).
    pub fn required_for_sandbox_run(&self) -> bool {
        self.required
            .unwrap_or(self.backend.as_deref() != Some("none"))
    }
}

/// `[snapshots]`: only the user config can switch them off.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsSection {
    /// Snapshot the workspace before each turn's first write (default true).
    pub enabled: Option<bool>,
}

/// `[verification]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationSection {
    /// Replay the task's last test/build command when the final answer claims success
    /// (default true; seed 002, "All-Green Tests Only Count After a Replay").
    pub result_claims: Option<bool>,
}

/// `[agents]`: subagents started by the `agent` tool (user config only).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsSection {
    /// The model subagents use, on the parent's provider (default: the parent's model).
    pub model: Option<String>,
    /// Cap on a subagent's model rounds (default 30).
    pub max_turns: Option<u32>,
    /// Cap on a subagent's wall time in seconds (default 600).
    pub max_wall_secs: Option<u64>,
}

impl FileConfig {
    /// The subagent settings from `[agents]`, with the engine's defaults for what is unset.
    ///
    /// # Errors
    /// A cap of 0 (a subagent that may not run a round or a second would only fail).
    pub fn agent_settings(&self) -> Result<codesmith_engine::AgentSettings> {
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
    pub fn prompt_cache_key(&self) -> Result<Option<bool>> {
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
    pub fn reasoning_replay(&self) -> Result<codesmith_providers::ReasoningReplay> {
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
    pub fn verify_claims(&self) -> bool {
        self.verification
            .as_ref()
            .and_then(|v| v.result_claims)
            .unwrap_or(true)
    }
}

/// The user config file, `$CODESMITH_HOME/config.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
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
    /// OpenAI-compatible endpoint settings.
    pub openai: Option<VendorSection>,
    /// Anthropic settings.
    pub anthropic: Option<VendorSection>,
    /// Sandbox settings.
    pub sandbox: Option<SandboxSection>,
    /// Network policy for fetch_url (`default`, `allow`, `deny`, `trusted_fakeip_cidrs`).
    pub network: Option<codesmith_policy::NetworkConfig>,
    /// The claim verifier (`result_claims`).
    pub verification: Option<VerificationSection>,
    /// Turn snapshots (`enabled`, default true).
    pub snapshots: Option<SnapshotsSection>,
    /// Subagents (`model`, `max_turns`, `max_wall_secs`).
    pub agents: Option<AgentsSection>,
    /// More MCP tools than this defers the servers without `defer` (default 20).
    pub mcp_defer_threshold: Option<usize>,
    /// MCP servers whose tools join the session (`[mcp_servers.NAME]`); user config only.
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, codesmith_tools::mcp::McpServerConfig>,
}

/// The project config: only the keys that may tighten.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ProjectConfig {
    /// May only raise the approval mode.
    pub approval: Option<String>,
    /// May only require a sandbox.
    pub sandbox: Option<SandboxSection>,
    /// Everything else is ignored (with a warning).
    #[serde(flatten)]
    pub ignored: toml::Table,
}

/// Everything a command needs, resolved once.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `$CODESMITH_HOME`.
    pub home: PathBuf,
    /// Canonical workspace.
    pub workspace: PathBuf,
    /// Provider.
    pub provider: ProviderName,
    /// Model name or GGUF path.
    pub model: String,
    /// Endpoint base URL (remote providers).
    pub base_url: Option<String>,
    /// API key (remote providers).
    pub api_key: Option<String>,
    /// Approval mode.
    pub approval: ApprovalMode,
    /// Model rounds per task.
    pub max_turns: u32,
    /// Stream idle window.
    pub idle_timeout: Duration,
    /// `[openai] reasoning_replay`.
    pub reasoning_replay: codesmith_providers::ReasoningReplay,
    /// `[openai] prompt_cache_key`, when set.
    pub prompt_cache_key: Option<bool>,
    /// User config as read.
    pub file: FileConfig,
    /// Exec-policy rules from `$CODESMITH_HOME/policy.toml` and `.codesmith/policy.toml`.
    pub rules: codesmith_policy::Rules,
    /// The sandbox settings after the project config tightened them.
    pub sandbox: SandboxSection,
    /// Things the user should know (ignored project keys, skipped instruction files, ...).
    pub warnings: Vec<String>,
    /// AGENTS.md / CLAUDE.md as loaded once at start-up (skipped files are in `warnings`).
    pub instructions: codesmith_tools::instructions::Instructions,
}

/// `$CODESMITH_HOME`, default `~/.codesmith`. A relative `CODESMITH_HOME` is made
/// absolute against the current directory here, at start-up, so a later change of
/// directory (a shell `cd`, a spawned tool) cannot move CodeSmith's state.
pub fn home_dir() -> Result<PathBuf> {
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
pub fn workspace(arg: Option<&Path>) -> Result<PathBuf> {
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
    let text = std::fs::read_to_string(&index).ok()?;
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
pub fn project_dir(workspace: &Path, home: &Path) -> Option<PathBuf> {
    let dir = workspace.join(".codesmith");
    match (dir.canonicalize(), home.canonicalize()) {
        (Ok(d), Ok(h)) if d.starts_with(&h) => None,
        _ => Some(dir),
    }
}

/// The user config file: `<home>/config.toml` (it may not exist).
pub fn user_config_path(home: &Path) -> PathBuf {
    home.join("config.toml")
}

/// Reads the user config; a missing file is an empty config.
pub fn read_user_config(home: &Path) -> Result<FileConfig> {
    let path = user_config_path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .with_context(|| format!("{} is not valid: fix or remove it", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn read_project_config(workspace: &Path, home: &Path, warnings: &mut Vec<String>) -> ProjectConfig {
    let Some(dir) = project_dir(workspace, home) else {
        return ProjectConfig::default();
    };
    let path = dir.join("config.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return ProjectConfig::default();
    };
    match toml::from_str::<ProjectConfig>(&text) {
        Ok(cfg) => {
            for key in cfg.ignored.keys() {
                warnings.push(format!(
                    "ignored `{key}` in {}: project config may only tighten `approval` and `sandbox`",
                    path.display()
                ));
            }
            cfg
        }
        Err(e) => {
            warnings.push(format!("ignored {}: {e}", path.display()));
            ProjectConfig::default()
        }
    }
}

/// Parses an approval mode name.
pub fn parse_approval(name: &str) -> Result<ApprovalMode> {
    match name {
        "auto" => Ok(ApprovalMode::Auto),
        "suggest" => Ok(ApprovalMode::Suggest),
        "never" => Ok(ApprovalMode::Never),
        other => bail!("unknown approval mode {other:?}: use auto, suggest or never"),
    }
}

fn approval_from_arg(arg: ApprovalArg) -> ApprovalMode {
    match arg {
        ApprovalArg::Auto => ApprovalMode::Auto,
        ApprovalArg::Suggest => ApprovalMode::Suggest,
        ApprovalArg::Never => ApprovalMode::Never,
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

/// Resolves everything `exec` (and the UI) needs.
pub fn resolve(
    workspace_arg: Option<&Path>,
    model: &ModelArgs,
    max_turns: Option<u32>,
) -> Result<Resolved> {
    let home = home_dir()?;
    let workspace = workspace(workspace_arg)?;
    let file = read_user_config(&home)?;
    let mut warnings = Vec::new();
    let project = read_project_config(&workspace, &home, &mut warnings);
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let instructions = codesmith_tools::instructions::load_instructions(
        &workspace,
        user_home.as_deref(),
        &codesmith_tools::instructions::InstructionLimits::default(),
    );
    warnings.extend(
        instructions
            .warnings
            .iter()
            .map(|w| format!("instructions: {w}")),
    );
    if let Some(note) = project_memory_note(&workspace) {
        warnings.push(note);
    }
    let provider = match (model.provider, &file.provider) {
        (Some(p), _) => p,
        (None, Some(name)) => parse_provider(name)?,
        (None, None) => ProviderName::Local,
    };
    let vendor = match provider {
        ProviderName::Openai => file.openai.clone().unwrap_or_default(),
        ProviderName::Anthropic => file.anthropic.clone().unwrap_or_default(),
        ProviderName::Local => VendorSection::default(),
    };
    let model_name = model
        .model
        .clone()
        .or_else(|| vendor.model.clone())
        .or_else(|| file.model.clone())
        .unwrap_or_else(|| default_model(provider).to_string());
    let base_url = model
        .base_url
        .clone()
        .or_else(|| env_base_url(provider))
        .or_else(|| vendor.base_url.clone());
    if let Some(url) = &base_url {
        check_base_url(url)?;
    }
    let api_key = api_key(provider, base_url.as_deref()).or_else(|| vendor.api_key.clone());
    let approval = resolve_approval(model.approval, &file, &project)?;
    warn_loosening(&project, approval, &mut warnings);
    let idle_secs = idle_timeout_secs(&file)?;
    let reasoning_replay = file.reasoning_replay()?;
    let prompt_cache_key = file.prompt_cache_key()?;
    // Checked here so a bad `[agents]` value is a usage error before anything runs.
    file.agent_settings()?;
    let rules = load_rules(&home, &workspace, &mut warnings)?;
    let sandbox = tighten_sandbox(
        file.sandbox.clone().unwrap_or_default(),
        project.sandbox.as_ref(),
    );
    Ok(Resolved {
        home,
        workspace,
        provider,
        model: model_name,
        base_url,
        api_key,
        approval,
        max_turns: max_turns
            .or(file.max_turns)
            .unwrap_or(DEFAULT_MAX_TURNS)
            .max(1),
        idle_timeout: Duration::from_secs(idle_secs),
        reasoning_replay,
        prompt_cache_key,
        file,
        rules,
        sandbox,
        warnings,
        instructions,
    })
}

/// Reads the exec-policy rule files: the user's may allow, ask and deny; the
/// project's may only ask and deny (its allow rules are ignored with a warning).
pub fn load_rules(
    home: &Path,
    workspace: &Path,
    warnings: &mut Vec<String>,
) -> Result<codesmith_policy::Rules> {
    let read = |path: PathBuf| std::fs::read_to_string(path).ok();
    let user = read(home.join("policy.toml"));
    let project = project_dir(workspace, home).and_then(|d| read(d.join("policy.toml")));
    let (rules, notes) = codesmith_policy::Rules::from_sources(user.as_deref(), project.as_deref())
        .map_err(|e| anyhow::anyhow!("exec-policy rules are invalid: {e}"))?;
    warnings.extend(notes);
    Ok(rules)
}

/// The project may require a sandbox or cut its network, never the reverse.
fn tighten_sandbox(mut user: SandboxSection, project: Option<&SandboxSection>) -> SandboxSection {
    if let Some(p) = project {
        if p.required == Some(true) {
            user.required = Some(true);
        }
        if p.network == Some(false) {
            user.network = Some(false);
        }
    }
    user
}

fn resolve_approval(
    flag: Option<ApprovalArg>,
    file: &FileConfig,
    project: &ProjectConfig,
) -> Result<ApprovalMode> {
    if let Some(arg) = flag {
        return Ok(approval_from_arg(arg));
    }
    let base = file
        .approval
        .as_deref()
        .map(parse_approval)
        .transpose()?
        .unwrap_or(ApprovalMode::Suggest);
    // An unreadable project value cannot loosen anything: it is ignored.
    let project = project
        .approval
        .as_deref()
        .and_then(|a| parse_approval(a).ok());
    Ok(project.map_or(base, |p| base.max(p)))
}

fn idle_timeout_secs(file: &FileConfig) -> Result<u64> {
    match std::env::var("CODESMITH_STREAM_IDLE_TIMEOUT_SECS") {
        Ok(v) if !v.is_empty() => v.parse::<u64>().ok().filter(|n| *n > 0).with_context(|| {
            format!("CODESMITH_STREAM_IDLE_TIMEOUT_SECS={v:?} is not a positive number of seconds")
        }),
        _ => Ok(file
            .stream_idle_timeout_secs
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS)
            .max(1)),
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

fn env_base_url(provider: ProviderName) -> Option<String> {
    match provider {
        ProviderName::Openai => env_nonempty("OPENAI_BASE_URL"),
        ProviderName::Anthropic => env_nonempty("ANTHROPIC_BASE_URL"),
        ProviderName::Local => None,
    }
}

/// The key from the environment, by the providers' own rule (one rule for
/// both the CLI and the clients): `DEEPSEEK_API_KEY` for a DeepSeek URL,
/// else `OPENAI_API_KEY`; `ANTHROPIC_API_KEY` for Anthropic.
fn api_key(provider: ProviderName, base_url: Option<&str>) -> Option<String> {
    use codesmith_providers::{
        DEFAULT_OPENAI_BASE_URL, anthropic_key_from_env, openai_key_from_env,
    };
    match provider {
        ProviderName::Openai => openai_key_from_env(base_url.unwrap_or(DEFAULT_OPENAI_BASE_URL)),
        ProviderName::Anthropic => anthropic_key_from_env(),
        ProviderName::Local => None,
    }
}

/// A base URL must be an absolute `http` or `https` URL; anything else is a
/// configuration error, not a network failure to retry.
fn check_base_url(url: &str) -> Result<()> {
    match url::Url::parse(url) {
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

/// Says so when the project config tried to loosen what it may only tighten.
fn warn_loosening(project: &ProjectConfig, approval: ApprovalMode, warnings: &mut Vec<String>) {
    let file = ".codesmith/config.toml";
    if let Some(asked) = project.approval.as_deref() {
        match parse_approval(asked) {
            Ok(mode) if mode < approval => warnings.push(format!(
                "ignored approval = {asked:?} in {file}: a project may only tighten the approval mode"
            )),
            Err(_) => warnings.push(format!("ignored approval = {asked:?} in {file}: not auto, suggest or never")),
            Ok(_) => {}
        }
    }
    if let Some(sandbox) = &project.sandbox {
        if sandbox.backend.is_some() {
            warnings.push(format!(
                "ignored [sandbox] backend in {file}: only your own config.toml chooses it"
            ));
        }
        if sandbox.required == Some(false) || sandbox.network == Some(true) {
            warnings.push(format!(
                "ignored a loosening [sandbox] setting in {file}: a project may only tighten it"
            ));
        }
    }
}

#[cfg(test)]
mod agents_tests {
    use super::*;

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
            })
        );
        let zero = parse("[agents]\nmax_turns = 0\n").agent_settings();
        assert!(zero.is_err_and(|e| e.to_string().contains("at least 1")));
        assert!(toml::from_str::<FileConfig>("[agents]\nmax_rounds = 3\n").is_err());
    }
}
