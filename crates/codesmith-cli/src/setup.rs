//! Building the engine's parts from a resolved configuration.

use std::sync::Arc;

use codesmith_engine::CallPolicy;
use codesmith_engine::snapshot::SnapshotSettings;
use codesmith_engine::{Approver, Engine, EngineConfig, PromptInputs, PromptStyle, Session};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{Event, EventSink};
use codesmith_providers::{
    AnthropicConfig, AnthropicProvider, CompleteOptions, OpenAiConfig, OpenAiProvider, Provider,
};
use codesmith_tools::sandbox::Sandbox;
use codesmith_tools::{Registry, ToolContext};

use crate::args::ProviderName;
use crate::config::{SandboxSection, Settings};

/// Output-token cap for the embedded model's responses.
pub(crate) const LOCAL_MAX_TOKENS: u32 = 512;

/// Why a provider could not be built.
#[derive(Debug)]
pub(crate) enum SetupError {
    /// The configuration is wrong (exit 2).
    Usage(anyhow::Error),
    /// Something failed at run time, e.g. the model download (exit 1).
    Failed(anyhow::Error),
}

/// The provider's short name.
pub(crate) fn provider_label(p: ProviderName) -> &'static str {
    match p {
        ProviderName::Openai => "openai",
        ProviderName::Anthropic => "anthropic",
        ProviderName::Local => "local",
    }
}

/// Builds the provider selected by `resolved`.
pub(crate) async fn provider(
    resolved: &Settings,
    on_event: &mut EventSink<'_>,
) -> Result<Arc<dyn Provider>, SetupError> {
    match resolved.provider {
        ProviderName::Local => crate::local::provider(resolved, on_event).await,
        remote => remote_provider(
            resolved,
            remote,
            resolved.base_url.clone(),
            resolved.api_key.clone(),
        ),
    }
}

/// An OpenAI-compatible or Anthropic provider at `base` (the vendor's default when
/// `None`) with `key`, with the session's OpenAI options from `resolved`.
fn remote_provider(
    resolved: &Settings,
    kind: ProviderName,
    base: Option<String>,
    key: Option<String>,
) -> Result<Arc<dyn Provider>, SetupError> {
    match kind {
        ProviderName::Anthropic => {
            let base =
                base.unwrap_or_else(|| codesmith_providers::DEFAULT_ANTHROPIC_BASE_URL.to_string());
            let Some(key) = key else {
                return Err(SetupError::Usage(anyhow::anyhow!(
                    "no API key for Anthropic: set ANTHROPIC_API_KEY (or [anthropic] api_key in config.toml)"
                )));
            };
            let mut config = AnthropicConfig::new(base, Some(key));
            config.images = resolved.images;
            let p = AnthropicProvider::new(config).map_err(|e| SetupError::Usage(e.into()))?;
            Ok(Arc::new(p))
        }
        _ => {
            let base =
                base.unwrap_or_else(|| codesmith_providers::DEFAULT_OPENAI_BASE_URL.to_string());
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
            config.images = resolved.images;
            if let Some(send) = resolved.prompt_cache_key {
                config.prompt_cache_key = send;
            }
            let p = OpenAiProvider::new(config).map_err(|e| SetupError::Usage(e.into()))?;
            Ok(Arc::new(p))
        }
    }
}

/// The `[utility_model]`'s provider, when one is configured (`None`: the session's model
/// writes the summaries). `exec` and the UI call it once at start-up, so a utility model
/// that cannot be built stops them with its reason instead of falling back unseen.
///
/// # Errors
/// The variable `api_key_env` names is unset, a missing API key or an unusable endpoint
/// (usage errors).
pub(crate) fn utility_provider(
    resolved: &Settings,
) -> Result<Option<Arc<dyn Provider>>, SetupError> {
    let Some(u) = &resolved.utility else {
        return Ok(None);
    };
    if let (Some(var), None) = (&u.api_key_env, &u.api_key) {
        return Err(SetupError::Usage(anyhow::anyhow!(
            "[utility_model] api_key_env names {var}, which is not set or empty; export it, or \
             remove the key"
        )));
    }
    remote_provider(resolved, u.provider, u.base_url.clone(), u.api_key.clone())
        .map(Some)
        .map_err(|e| match e {
            SetupError::Usage(e) => SetupError::Usage(e.context("[utility_model]")),
            other => other,
        })
}

/// The sandbox for shell commands, from `[sandbox]`, with `required` set as
/// [`SandboxSection::required_in_sessions`] says: the shell tools refuse through its isolation check
/// ([`Sandbox::admit`]) when isolation is required and the backend cannot isolate.
///
/// # Errors
/// An unknown backend name, or `bwrap` named explicitly where it cannot run:
/// a typo must not silently disable the sandbox.
pub(crate) fn sandbox(section: &SandboxSection) -> anyhow::Result<Sandbox> {
    let name = section.backend.as_deref().unwrap_or("auto");
    let backend = codesmith_tools::sandbox::backend_from_name(name)
        .map_err(|e| anyhow::anyhow!("[sandbox] backend = {name:?}: {e}"))?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    Ok(Sandbox::new(backend, section.network.unwrap_or(false))
        .with_required(section.required_in_sessions())
        .with_extra(section.extra(home.as_deref())?))
}

/// The tool context for a session.
///
/// # Errors
/// See [`sandbox`].
pub(crate) fn tool_context(resolved: &Settings) -> anyhow::Result<ToolContext> {
    let mut ctx = ToolContext::new(resolved.workspace.clone(), resolved.home.clone());
    trust_reads(&ctx, resolved);
    ctx.lsp = lsp_manager(resolved);
    Ok(ctx.with_sandbox(sandbox(&resolved.sandbox)?))
}

/// The language-server manager of a session or a one-shot call, from the resolved
/// `[lsp]` settings; `None` when no server is configured or found (the `lsp` tool is then
/// not offered, see [`registry`]). Servers start on first use; whoever built the manager
/// shuts it down when the session or call ends.
fn lsp_manager(resolved: &Settings) -> Option<Arc<codesmith_tools::lsp::LspManager>> {
    (!resolved.lsp.servers.is_empty())
        .then(|| Arc::new(codesmith_tools::lsp::LspManager::new(resolved.lsp.clone())))
}

/// The built-in tool registry, with fetch_url under the resolved `[network]` policy and
/// address policy ([`Settings::fetch`]).
pub(crate) fn registry(settings: &Settings) -> Registry {
    let mut registry = codesmith_tools::builtin_registry(settings.fetch.clone());
    if !settings.lsp.servers.is_empty() {
        registry.register(Arc::new(codesmith_tools::lsp::tool::LspTool));
    }
    if let Some(search) = &settings.web_search {
        registry.register(Arc::new(
            codesmith_tools::fetch::web_search::WebSearch::new(
                settings.fetch.clone(),
                search.clone(),
            ),
        ));
    }
    registry
}

/// Starts the configured MCP servers (concurrently, each bounded by its start-up
/// timeout) in the workspace; `${VAR}` in their `env` and `headers`, and bearer tokens,
/// come from this process's environment; HTTP servers' URLs pass the `[network]` deny
/// list.
pub(crate) async fn mcp_servers(settings: &Settings) -> codesmith_tools::mcp::McpStart {
    let lookup = |name: &str| std::env::var(name).ok();
    codesmith_tools::mcp::start_servers(
        &settings.mcp_servers,
        &settings.workspace,
        &settings.home,
        &lookup,
        settings.mcp_defer_threshold,
        &settings.fetch.policy,
    )
    .await
}

/// What a front end shows for an MCP server's event: progress as `mcp_progress`,
/// tool-list changes and log messages at `warning` and above as notices (`None` for the
/// rest). Every log message is already in `$CODESMITH_HOME/logs/mcp.log`, written when
/// the server sent it (see `codesmith_tools::mcp::events`).
pub(crate) fn mcp_event(event: codesmith_tools::mcp::McpEvent) -> Option<Event> {
    use codesmith_tools::mcp::McpEvent;
    if !event.shown_to_user() {
        return None;
    }
    Some(match event {
        McpEvent::Progress {
            server,
            tool,
            progress,
            total,
            message,
        } => Event::McpProgress {
            server,
            tool,
            progress,
            total,
            message,
        },
        other => Event::Notice {
            message: other.describe(),
        },
    })
}

/// The session's system prompt, with the workspace's AGENTS.md.
pub(crate) fn system_prompt(resolved: &Settings) -> String {
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
pub(crate) fn max_tokens(resolved: &Settings) -> Option<u32> {
    let default = (resolved.provider == ProviderName::Local).then_some(LOCAL_MAX_TOKENS);
    resolved.max_output_tokens.or(default)
}

/// Retry and watchdog settings.
pub(crate) fn complete_options(resolved: &Settings) -> CompleteOptions {
    CompleteOptions {
        idle_timeout: resolved.idle_timeout,
        ..CompleteOptions::default()
    }
}

/// The engine settings for a session.
pub(crate) fn engine_config(resolved: &Settings) -> EngineConfig {
    EngineConfig {
        model: resolved.model.clone(),
        system_prompt: system_prompt(resolved),
        max_turns: resolved.max_turns,
        max_tokens: max_tokens(resolved),
        approval: resolved.approval,
        complete: complete_options(resolved),
        rules: resolved.rules.clone(),
        network: resolved.fetch.policy.clone(),
        agents: resolved.agents.clone(),
        verify_claims: resolved.verify_claims,
        slop_from_verdicts: resolved.slop_from_verdicts,
        early_start: resolved.early_start,
        snapshots: SnapshotSettings {
            enabled: resolved.snapshots,
            ..SnapshotSettings::default()
        },
        context: resolved.context,
        hooks: std::sync::Arc::new(resolved.hooks.clone()),
    }
}

/// An engine over `session` with the built-in tools, the MCP servers' tools `mcp`
/// (see [`mcp_servers`]), the `agent` tool with the `[agents]` settings (not for the
/// embedded model) and the configured snapshots.
pub(crate) fn engine(
    resolved: &Settings,
    provider: Arc<dyn Provider>,
    ctx: Arc<ToolContext>,
    approver: Arc<dyn Approver>,
    session: Session,
    mcp: &codesmith_tools::mcp::McpStart,
) -> Engine {
    engine_with_tools(
        resolved,
        provider,
        ctx,
        approver,
        session,
        mcp,
        None,
        &mut |_| {},
    )
}

/// [`engine`] whose catalogue keeps only the tools named in `only` (a custom slash
/// command's `allowed-tools`), when given: it narrows the catalogue, never the gate. A
/// name that matches no tool is told through `on_event` as a notice.
#[allow(clippy::too_many_arguments)]
pub(crate) fn engine_with_tools(
    resolved: &Settings,
    provider: Arc<dyn Provider>,
    ctx: Arc<ToolContext>,
    approver: Arc<dyn Approver>,
    session: Session,
    mcp: &codesmith_tools::mcp::McpStart,
    only: Option<&[String]>,
    on_event: &mut EventSink<'_>,
) -> Engine {
    let mut tools = registry(resolved);
    let mut config = engine_config(resolved);
    config.system_prompt.push_str(&mcp.prompt_section());
    // The embedded model's window is too small to drive an RLM session: no `rlm` there.
    if resolved.provider != ProviderName::Local {
        codesmith_engine::rlm::register(
            &mut tools,
            provider.clone(),
            &config.model,
            config.complete.clone(),
            codesmith_engine::rlm::RlmConfig::default(),
        );
    }
    mcp.register_into(&mut tools);
    tools.register(Arc::new(codesmith_engine::UpdatePlan));
    // Subagents, except for the embedded model: its small context is better spent on the task.
    if resolved.provider != ProviderName::Local {
        tools.register(Arc::new(codesmith_engine::AgentTool::with_custom(
            resolved.agents.custom.clone(),
        )));
    }
    if let Some(only) = only {
        let names = tools.names();
        let unknown: Vec<&str> = only
            .iter()
            .map(String::as_str)
            .filter(|n| !names.contains(n))
            .collect();
        if !unknown.is_empty() {
            on_event(codesmith_protocol::Event::Notice {
                message: format!(
                    "allowed-tools names no tool called {}; the task runs without them (tools: {})",
                    unknown.join(", "),
                    names.join(", ")
                ),
            });
        }
        tools = tools.filtered(|t| only.iter().any(|n| n == t.name()));
    }
    let mut engine = Engine::new(provider, tools, ctx, approver, session, config);
    // Checked at start-up (`utility_provider`), so it builds here too.
    if let (Ok(Some(p)), Some(u)) = (utility_provider(resolved), &resolved.utility) {
        engine.set_utility_model(p, u.model.clone());
    }
    engine
}

/// What `codesmith tool` and `codesmith mcp` run against, built from the same
/// [`Settings`] as a session (user and project config, environment): the built-in tools
/// under the `[network]` policy, a one-shot context (writers accept `force_fresh`) in the
/// tightened sandbox (`[sandbox] required` refuses unisolated commands), and the call
/// policy. Configuration warnings go to stderr.
///
/// The caller of a one-shot call is the person (or an MCP host that runs its own
/// approval), so making the call approves it: `auto` and `suggest` run what needs
/// approval, and `never` (from any layer, a project's tightening included) refuses it.
/// The exec policy's hard refusals apply in every mode.
///
/// # Errors
/// An unusable home, workspace, config, rule file or sandbox (usage errors).
pub(crate) fn one_shot(
    workspace: Option<&std::path::Path>,
) -> anyhow::Result<(Registry, Arc<ToolContext>, CallPolicy)> {
    let settings = crate::config::resolve(crate::config::Flags {
        workspace,
        model: &crate::config::NO_MODEL_FLAGS,
        max_turns: None,
    })?;
    let registry = registry(&settings);
    let sandbox = sandbox(&settings.sandbox)?;
    // Warnings quote the project's own files (a rule's pattern, a key): shown, never acted on.
    for warning in &settings.warnings {
        eprintln!("codesmith: {}", codesmith_policy::terminal_safe(warning));
    }
    let policy = CallPolicy {
        rules: settings.rules.clone(),
        approval: one_shot_approval(settings.approval),
        network: settings.fetch.policy.clone(),
    };
    let mut ctx = ToolContext::one_shot(settings.workspace.clone(), settings.home.clone())
        .with_sandbox(sandbox);
    trust_reads(&ctx, &settings);
    // The same language servers as a session (the registry offers `lsp` when there are
    // any); the caller shuts them down after the call.
    ctx.lsp = lsp_manager(&settings);
    Ok((registry, Arc::new(ctx), policy))
}

/// Adds the user's `[trust] read` directories (already checked by `config::resolve`) to
/// `ctx`: the read-only file tools and the sandbox's read list follow them.
fn trust_reads(ctx: &ToolContext, settings: &Settings) {
    for dir in &settings.trust_read {
        // Checked once when the settings were resolved; a directory gone since is skipped.
        let _ = ctx.trusted.add(dir, &settings.home);
    }
}

/// The approval mode of a one-shot call (see [`one_shot`]): `never` and `read-only` stay
/// as they are; otherwise the call itself is the approval.
pub(crate) fn one_shot_approval(mode: ApprovalMode) -> ApprovalMode {
    match mode {
        ApprovalMode::Never | ApprovalMode::ReadOnly => mode,
        ApprovalMode::Auto | ApprovalMode::AutoEdit | ApprovalMode::Suggest => ApprovalMode::Auto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_shot_call_is_its_own_approval_except_in_never_mode() {
        assert_eq!(one_shot_approval(ApprovalMode::Auto), ApprovalMode::Auto);
        assert_eq!(
            one_shot_approval(ApprovalMode::AutoEdit),
            ApprovalMode::Auto
        );
        assert_eq!(one_shot_approval(ApprovalMode::Suggest), ApprovalMode::Auto);
        assert_eq!(one_shot_approval(ApprovalMode::Never), ApprovalMode::Never);
        assert_eq!(
            one_shot_approval(ApprovalMode::ReadOnly),
            ApprovalMode::ReadOnly
        );
    }
}
