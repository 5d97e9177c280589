//! Building the engine's parts from a resolved configuration.

use std::sync::Arc;

use codesmith_engine::snapshot::SnapshotSettings;
use codesmith_engine::{Approver, Engine, EngineConfig, PromptInputs, PromptStyle, Session};
use codesmith_policy::{AddressGate, NetworkPolicy, Rules};
use codesmith_protocol::Event;
use codesmith_providers::{
    AnthropicConfig, AnthropicProvider, CompleteOptions, OpenAiConfig, OpenAiProvider, Provider,
};
use codesmith_tools::fetch::FetchConfig;
use codesmith_tools::sandbox::Sandbox;
use codesmith_tools::{Registry, ToolContext};

use crate::args::ProviderName;
use crate::config::{FileConfig, Resolved, SandboxSection};

/// Output-token cap for the embedded model's responses.
pub const LOCAL_MAX_TOKENS: u32 = 512;

/// Why a provider could not be built.
#[derive(Debug)]
pub enum SetupError {
    /// The configuration is wrong (exit 2).
    Usage(anyhow::Error),
    /// Something failed at run time, e.g. the model download (exit 1).
    Failed(anyhow::Error),
}

/// The provider's short name.
pub fn provider_label(p: ProviderName) -> &'static str {
    match p {
        ProviderName::Openai => "openai",
        ProviderName::Anthropic => "anthropic",
        ProviderName::Local => "local",
    }
}

/// Builds the provider selected by `resolved`.
pub async fn provider(
    resolved: &Resolved,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<Arc<dyn Provider>, SetupError> {
    match resolved.provider {
        ProviderName::Openai => {
            let base = resolved
                .base_url
                .clone()
                .unwrap_or_else(|| codesmith_providers::DEFAULT_OPENAI_BASE_URL.to_string());
            let key = resolved.api_key.clone();
            if key.is_none()
                && codesmith_providers::Vendor::detect(&base) == codesmith_providers::Vendor::OpenAi
            {
                return Err(SetupError::Usage(anyhow::anyhow!(
                    "no API key for OpenAI: set OPENAI_API_KEY (or [openai] api_key in config.toml), or pick \
                     another provider with --provider"
                )));
            }
            let mut config = OpenAiConfig::new(base, key);
            config.reasoning_replay = resolved.reasoning_replay;
            if let Some(send) = resolved.prompt_cache_key {
                config.prompt_cache_key = send;
            }
            let p = OpenAiProvider::new(config).map_err(|e| SetupError::Usage(e.into()))?;
            Ok(Arc::new(p))
        }
        ProviderName::Anthropic => {
            let base = resolved
                .base_url
                .clone()
                .unwrap_or_else(|| codesmith_providers::DEFAULT_ANTHROPIC_BASE_URL.to_string());
            let Some(key) = resolved.api_key.clone() else {
                return Err(SetupError::Usage(anyhow::anyhow!(
                    "no API key for Anthropic: set ANTHROPIC_API_KEY (or [anthropic] api_key in config.toml)"
                )));
            };
            let p = AnthropicProvider::new(AnthropicConfig::new(base, Some(key)))
                .map_err(|e| SetupError::Usage(e.into()))?;
            Ok(Arc::new(p))
        }
        ProviderName::Local => crate::local::provider(resolved, on_event).await,
    }
}

/// The sandbox for shell commands, from `[sandbox]`, with `required` set as
/// [`SandboxSection::required_in_sessions`] says: the shell tools refuse through its gate
/// ([`Sandbox::admit`]) when isolation is required and the backend cannot isolate.
///
/// # Errors
/// An unknown backend name, or `bwrap` named explicitly where it cannot run:
/// a typo must not silently disable the sandbox.
pub fn sandbox(section: &SandboxSection) -> anyhow::Result<Sandbox> {
    let name = section.backend.as_deref().unwrap_or("auto");
    let backend = codesmith_tools::sandbox::backend_from_name(name)
        .map_err(|e| anyhow::anyhow!("[sandbox] backend = {name:?}: {e}"))?;
    Ok(Sandbox::new(backend, section.network.unwrap_or(false))
        .with_required(section.required_in_sessions()))
}

/// The tool context for a session.
///
/// # Errors
/// See [`sandbox`].
pub fn tool_context(resolved: &Resolved) -> anyhow::Result<ToolContext> {
    let ctx = ToolContext::new(resolved.workspace.clone(), resolved.home.clone());
    Ok(ctx.with_sandbox(sandbox(&resolved.sandbox)?))
}

/// The network policy for fetch_url, from the user config only.
pub fn network_policy(file: &FileConfig, warnings: &mut Vec<String>) -> NetworkPolicy {
    let (policy, rejected) = NetworkPolicy::from_config_checked(file.network.as_ref());
    for pattern in rejected {
        warnings.push(format!(
            "[network] ignored the host pattern {pattern:?}: it does not parse"
        ));
    }
    policy
}

/// The built-in tool registry, with fetch_url under the user's network policy.
pub fn registry(file: &FileConfig, warnings: &mut Vec<String>) -> Registry {
    let policy = network_policy(file, warnings);
    let (gate, notes) = AddressGate::from_config(file.network.as_ref());
    warnings.extend(notes);
    codesmith_tools::builtin_registry(FetchConfig::new(policy, gate))
}

/// Starts the user config's MCP servers (concurrently, each bounded by its start-up
/// timeout) in `workspace`; `${VAR}` in their `env` and `headers`, and bearer tokens,
/// come from this process's environment; HTTP servers' URLs pass the user's `[network]`
/// deny list.
pub async fn mcp_servers(
    file: &FileConfig,
    workspace: &std::path::Path,
) -> codesmith_tools::mcp::McpStart {
    let lookup = |name: &str| std::env::var(name).ok();
    let threshold = file
        .mcp_defer_threshold
        .unwrap_or(codesmith_tools::mcp::DEFAULT_DEFER_THRESHOLD);
    let network = NetworkPolicy::from_config(file.network.as_ref());
    codesmith_tools::mcp::start_servers(&file.mcp_servers, workspace, &lookup, threshold, &network)
        .await
}

/// The session's system prompt, with the workspace's AGENTS.md.
pub fn system_prompt(resolved: &Resolved) -> String {
    let instructions = Some(resolved.instructions.render()).filter(|text| !text.trim().is_empty());
    let style = if resolved.provider == ProviderName::Local {
        PromptStyle::Compact
    } else {
        PromptStyle::Full
    };
    codesmith_engine::system_prompt(&PromptInputs {
        workspace: &resolved.workspace,
        project_instructions: instructions.as_deref(),
        memory: codesmith_tools::memory::load_memory(&resolved.home, &resolved.workspace)
            .as_deref(),
        skills: codesmith_tools::skills::prompt_lines(&resolved.skills).as_deref(),
        style,
    })
}

/// The per-response output cap.
pub fn max_tokens(resolved: &Resolved) -> Option<u32> {
    let default = (resolved.provider == ProviderName::Local).then_some(LOCAL_MAX_TOKENS);
    resolved.file.max_output_tokens.or(default)
}

/// Retry and watchdog settings.
pub fn complete_options(resolved: &Resolved) -> CompleteOptions {
    CompleteOptions {
        idle_timeout: resolved.idle_timeout,
        ..CompleteOptions::default()
    }
}

/// The engine settings for a session.
pub fn engine_config(resolved: &Resolved, warnings: &mut Vec<String>) -> EngineConfig {
    EngineConfig {
        model: resolved.model.clone(),
        system_prompt: system_prompt(resolved),
        max_turns: resolved.max_turns,
        max_tokens: max_tokens(resolved),
        approval: resolved.approval,
        complete: complete_options(resolved),
        rules: resolved.rules.clone(),
        network: network_policy(&resolved.file, warnings),
        verify_claims: resolved.file.verify_claims(),
    }
}

/// An engine over `session` with the built-in tools, the MCP servers' tools `mcp`
/// (see [`mcp_servers`]) and the configured snapshots; configuration warnings are added
/// to `warnings`.
pub fn engine(
    resolved: &Resolved,
    provider: Arc<dyn Provider>,
    ctx: Arc<ToolContext>,
    approver: Arc<dyn Approver>,
    session: Session,
    mcp: &codesmith_tools::mcp::McpStart,
    warnings: &mut Vec<String>,
) -> Engine {
    let mut tools = registry(&resolved.file, warnings);
    mcp.register_into(&mut tools);
    let config = engine_config(resolved, &mut Vec::new());
    let mut engine = Engine::new(provider, tools, ctx, approver, session, config);
    let enabled = resolved
        .file
        .snapshots
        .as_ref()
        .and_then(|s| s.enabled)
        .unwrap_or(true);
    engine.set_snapshot_settings(SnapshotSettings {
        enabled,
        ..SnapshotSettings::default()
    });
    engine
}

/// What `codesmith tool` and `codesmith mcp` run against: the built-in tools,
/// a one-shot context (writers accept `force_fresh`) in the configured sandbox,
/// and the exec-policy rules. Configuration warnings go to stderr.
///
/// # Errors
/// An unusable home, workspace, config, rule file or sandbox (usage errors).
pub fn one_shot(
    workspace: Option<&std::path::Path>,
) -> anyhow::Result<(Registry, Arc<ToolContext>, Rules)> {
    let home = crate::config::home_dir()?;
    let workspace = crate::config::workspace(workspace)?;
    let file = crate::config::read_user_config(&home)?;
    let mut warnings = Vec::new();
    let registry = registry(&file, &mut warnings);
    let rules = crate::config::load_rules(&home, &workspace, &mut warnings)?;
    let sandbox = sandbox(&file.sandbox.clone().unwrap_or_default())?;
    // Warnings quote the project's own files (a rule's pattern, a key): shown, never acted on.
    for warning in warnings {
        eprintln!("codesmith: {}", codesmith_policy::terminal_safe(&warning));
    }
    let ctx = ToolContext::one_shot(workspace, home).with_sandbox(sandbox);
    Ok((registry, Arc::new(ctx), rules))
}
