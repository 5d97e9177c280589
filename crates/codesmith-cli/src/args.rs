//! Command-line arguments (stage one: what the user typed, no side effects).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// CodeSmith: a terminal coding agent that keeps even a cheap model from wrecking your repository.
#[derive(Debug, Parser)]
#[command(
    name = "codesmith",
    version,
    about,
    // The UI's flags before a sub-command would otherwise be accepted and silently
    // ignored (`codesmith --provider openai exec ...` ran the default provider):
    // give them after the sub-command instead.
    args_conflicts_with_subcommands = true,
    after_help = "With no command, `codesmith` opens the interactive terminal UI in the current \
                  directory (or --workspace DIR); `codesmith resume` reopens its last conversation."
)]
pub(crate) struct Cli {
    /// What to do (none: open the interactive terminal UI).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the interactive terminal UI (used when no sub-command is given).
    #[command(flatten)]
    pub ui: UiArgs,
}

/// Flags of the interactive terminal UI (`codesmith` with no sub-command, and `codesmith resume`).
#[derive(Debug, Clone, Args)]
pub(crate) struct UiArgs {
    /// Workspace.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Model selection.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Colour theme (default: from COLORFGBG, else dark).
    #[arg(long, value_name = "THEME")]
    pub theme: Option<ThemeArg>,
}

/// Colour themes of the terminal UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ThemeArg {
    /// Light text on a dark background.
    Dark,
    /// Dark text on a light background.
    Light,
}

/// Sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one task non-interactively and print the final answer.
    Exec(ExecArgs),
    /// Run one tool call and print its result envelope as one JSON line (--help lists the tools).
    Tool(ToolArgs),
    /// Serve the tools over MCP on stdio (`codesmith mcp list` shows the configured MCP
    /// servers instead).
    Mcp(McpArgs),
    /// Decide what the command policy says about a shell command.
    Policy {
        /// What to check.
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Run a command inside the sandbox.
    Sandbox {
        /// What to run.
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// Reopen the last session in this workspace in the terminal UI.
    Resume(UiArgs),
    /// Read the claim verifier's ledger of verdicts.
    Verify {
        /// What to do.
        #[command(subcommand)]
        command: VerifyCommand,
    },
    /// List sessions, or roll the workspace back to the state before a turn.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Manage the embedded local model.
    Model {
        /// What to do.
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Check the installation and configuration; every finding says what to do next.
    Doctor(DoctorArgs),
    /// Show the effective configuration and where each value came from.
    Config {
        /// What to show.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Tidy long-lived memory (MEMORY.md and its topic files).
    Memory {
        /// What to do.
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Trust a project's hooks, slash command or custom agent on this machine (recorded in
    /// $CODESMITH_HOME for this workspace and its current content; any change untrusts it).
    Trust {
        /// What to trust.
        #[command(subcommand)]
        what: TrustCommand,
    },
    /// List, show, trust and install skills (instructions the model loads on demand).
    Skills {
        /// What to do.
        #[command(subcommand)]
        command: SkillsCommand,
    },
    /// Read the project's slop ledger (technical debt an agent recorded) and close entries.
    Slop {
        /// What to do.
        #[command(subcommand)]
        command: SlopCommand,
    },
    /// List or revoke the grants "always" answers saved for a workspace.
    Approvals {
        /// What to do.
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
}

/// `codesmith slop ...`: every change is a new record in `.codesmith/slop/ledger.jsonl`.
#[derive(Debug, Subcommand)]
pub(crate) enum SlopCommand {
    /// List the open entries (all with --all).
    List {
        /// Workspace whose ledger is read.
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// Also resolved, accepted and wont_fix entries.
        #[arg(long)]
        all: bool,
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one entry with its history.
    Show(SlopIdArgs),
    /// Mark an entry resolved (cleaned up).
    Resolve(SlopIdArgs),
    /// Mark an entry accepted (the debt is kept on purpose).
    Accept(SlopIdArgs),
    /// Mark an entry wont_fix.
    Wontfix(SlopIdArgs),
}

/// The entry a `codesmith slop` sub-command acts on.
#[derive(Debug, Clone, Args)]
pub(crate) struct SlopIdArgs {
    /// The entry (`SLOP-3`, or `3`).
    pub id: String,
    /// Why (recorded with the change).
    #[arg(long, default_value = "")]
    pub note: String,
    /// Workspace whose ledger is changed.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `codesmith approvals ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// List the workspace's saved grants, each with the id `revoke` takes.
    List {
        /// The workspace whose grants are listed.
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a saved grant by its id (from `list`), or every grant of the workspace.
    Revoke {
        /// The grant's id.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Remove every grant of the workspace.
        #[arg(long)]
        all: bool,
        /// The workspace whose grants are revoked.
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
}

/// `codesmith trust ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum TrustCommand {
    /// The `[hooks]` of .codesmith/config.toml: they run outside the sandbox with your rights.
    Hooks {
        /// Workspace holding .codesmith/config.toml.
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
    /// A slash command in .codesmith/commands/NAME.md (its text then reaches the model as
    /// instructions, not data).
    Command {
        /// The command's name (its file name without .md).
        name: String,
        /// Workspace holding .codesmith/commands/.
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
    /// A custom agent in .codesmith/agents/NAME.md (it is then offered to the agent tool).
    Agent {
        /// The agent file's name without .md.
        name: String,
        /// Workspace holding .codesmith/agents/.
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
}

/// `codesmith skills ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the user's and the project's skills with their trust state; skipped skills
    /// are named on stderr with what to fix.
    List {
        /// Workspace whose project skills are listed.
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a skill's SKILL.md, its files and its trust state.
    Show {
        /// The skill's name.
        name: String,
        /// Workspace (for project skills).
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
    /// Trust a project skill on this machine: recorded in $CODESMITH_HOME for this
    /// workspace and the skill's current content (any later change untrusts it).
    Trust {
        /// The project skill's name.
        name: String,
        /// Workspace holding the skill in .codesmith/skills/.
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
    /// Check a skill folder and copy it into $CODESMITH_HOME/skills/ (symlinks and
    /// oversized files are refused).
    Install {
        /// The skill folder (holding SKILL.md).
        path: PathBuf,
    },
}

/// Which model provider to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderName {
    /// OpenAI-compatible Chat Completions (OpenAI, DeepSeek, OpenRouter, vLLM, llama.cpp, Ollama).
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// The embedded local model (SmolLM2-135M-Instruct on the CPU).
    Local,
}

/// The workspace flag shared by several commands.
#[derive(Debug, Clone, Args)]
pub(crate) struct WorkspaceArg {
    /// The repository to work on (default: the current directory).
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// Flags that select and configure the model.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModelArgs {
    /// Model provider (default: from config.toml, else `local`).
    #[arg(long)]
    pub provider: Option<ProviderName>,
    /// Model name, or a GGUF path for `local`.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible or Anthropic endpoint.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Approval mode: read-only (plan mode), suggest (asks before each file write),
    /// auto-edit (the default: writes run, commands the policy does not allow ask), auto,
    /// or never (refuses what would ask).
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(codesmith_policy::ApprovalMode))]
    pub approval: Option<codesmith_policy::ApprovalMode>,
    /// The model's context window in tokens (default: `context_window` in the provider's
    /// config section, else a built-in table of common models, else a guess of 32768).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1024..))]
    pub context_window: Option<u64>,
}

/// `codesmith exec`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ExecArgs {
    /// Workspace.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Model selection.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Maximum model rounds for the task (default 500, a safety bound; at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Print one JSON event per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Continue an earlier session (its id).
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,
    /// Attach an image (PNG, JPEG, GIF or WebP) to the task; repeatable. A large image is
    /// downscaled to the providers' limits; a model that does not read images is told it
    /// was omitted.
    #[arg(long, short = 'i', value_name = "PATH")]
    pub image: Vec<std::path::PathBuf>,
    /// The task.
    #[arg(value_name = "TASK")]
    pub task: String,
}

/// `codesmith tool`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ToolArgs {
    /// Tool name (e.g. read_file).
    pub name: String,
    /// Workspace.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Arguments as a JSON object (default `{}`); for a tool with one required text
    /// argument, that argument's value alone (`codesmith tool read_file README.md`).
    #[arg(value_name = "JSON-ARGS")]
    pub args: Option<String>,
    /// Print the result for a person (the text the model reads, an edit's diff, a
    /// refusal's reason and hint) instead of the JSON envelope.
    #[arg(long)]
    pub pretty: bool,
}

/// `codesmith policy ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Print the decision for COMMAND as one JSON object (its `context` says whether it was
    /// judged as run bare or sandboxed).
    Check {
        /// Workspace (for project rules and redirect targets).
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// Judge COMMAND as run under an isolating sandbox with a private /tmp (bwrap), where
        /// writing and deleting below /tmp is harmless. By default it is judged as run bare.
        #[arg(long)]
        sandboxed: bool,
        /// The approval mode to judge it under (suggest, auto-edit, auto, never, read-only;
        /// default auto-edit).
        #[arg(long, value_name = "MODE", default_value = "auto-edit", value_parser = clap::value_parser!(codesmith_policy::ApprovalMode))]
        approval: codesmith_policy::ApprovalMode,
        /// The shell command.
        command: String,
    },
}

/// `codesmith sandbox ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Run CMD in the configured sandbox: `codesmith sandbox run -- CMD ARGS...`.
    Run {
        /// Workspace (writable inside the sandbox).
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// Allow network access inside the sandbox.
        #[arg(long)]
        allow_network: bool,
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Show what a sandboxed command sees: paths with their access, environment names,
    /// refused system calls, the host uid.
    Explain {
        /// Workspace (writable inside the sandbox).
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// Explain a run with the network allowed.
        #[arg(long)]
        allow_network: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `codesmith model ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ModelCommand {
    /// Download, verify and cache the embedded default model.
    Fetch,
}

/// `codesmith doctor`.
#[derive(Debug, Clone, Args)]
pub(crate) struct DoctorArgs {
    /// Workspace whose project config and policy are checked.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Print one JSON object (stable schema, for CI) instead of text.
    #[arg(long)]
    pub json: bool,
    /// After the checks, ask the configured model to explain the findings (advice only).
    #[arg(long)]
    pub analyze: bool,
}

/// `codesmith config ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print each effective value with its origin (`default`, `user`, `project
    /// (tightened)`, `env NAME`, `flag --NAME`); secrets are redacted.
    Show(ConfigShowArgs),
}

/// `codesmith config show`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ConfigShowArgs {
    /// Workspace whose project config and policy apply.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Model selection, as `exec` takes it (to see what a flag changes).
    #[command(flatten)]
    pub model: ModelArgs,
    /// Print one JSON object (`settings`: key, value, origin; `warnings`) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `codesmith memory ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Tidy MEMORY.md: drop duplicate and dead pointers, report orphans (dry run by default).
    Consolidate(ConsolidateArgs),
}

/// `codesmith memory consolidate`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ConsolidateArgs {
    /// Write the result (after saving MEMORY.md.bak); without it, print a diff only.
    #[arg(long)]
    pub apply: bool,
    /// Also ask the configured model for a rewritten index (kept only if it validates).
    #[arg(long)]
    pub llm: bool,
    /// Consolidate the project memory (`.codesmith/memory/`) instead of the user's.
    #[arg(long)]
    pub project: bool,
    /// Workspace (with --project).
    #[command(flatten)]
    pub workspace: WorkspaceArg,
}

/// `codesmith verify ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum VerifyCommand {
    /// Counts per verdict and the claim-match rate, from `$CODESMITH_HOME/evolution/verdicts.jsonl`.
    Stats(VerifyStatsArgs),
}

/// `codesmith verify stats`.
#[derive(Debug, Clone, Args)]
pub(crate) struct VerifyStatsArgs {
    /// Print one JSON object (`verified_pass`, `verified_fail`, `verify_error`, `unsubstantiated`,
    /// `claim_match_rate`) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `codesmith sessions ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// List the sessions under $CODESMITH_HOME, newest first.
    List {
        /// Print one JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Return the workspace to its state before TASK of SESSION (asks first).
    Restore {
        /// Session id (as printed by `codesmith sessions list`).
        session: String,
        /// Task number (1 is the session's first task: what a person typed and the agent
        /// ran to the end).
        task: u32,
        /// Workspace to restore (default: the session's own workspace).
        #[command(flatten)]
        workspace: WorkspaceArg,
        /// Do not ask for confirmation (needed when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// `codesmith mcp [list]`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Workspace.
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// `list`; none serves CodeSmith's tools over MCP on stdio.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
}

/// `codesmith mcp` sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Start the configured MCP servers (`[mcp_servers.NAME]`) and show their state and tools.
    List {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Authorize CodeSmith at an HTTP server that uses OAuth: prints the authorization
    /// URL, waits for the browser's redirect on a loopback port, and stores the tokens in
    /// $CODESMITH_HOME/mcp-auth/NAME.json (mode 0600).
    Login {
        /// The server's name in `[mcp_servers.NAME]`.
        name: String,
    },
}
