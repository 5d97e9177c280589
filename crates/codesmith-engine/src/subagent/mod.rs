//! Subagents: the `agent` tool starts a child engine for one delegated task.
//!
//! Every subagent type shares one runtime, the [`crate::Engine`] loop with its approval gate;
//! a type decides only its role prompt and its tool surface:
//!
//! | type | tools |
//! |---|---|
//! | `general` | the parent's whole catalogue (including `agent`) |
//! | `explore` | read-only tools and `fetch_url` (under the network policy) |
//! | `plan` | read-only tools only: nothing that executes or reaches the network |
//! | `review` | read-only tools and `exec_shell` for commands that read and test/build commands, in at least `auto-edit` mode |
//!
//! Permissions only tighten from parent to child: the child runs under the parent's
//! approval mode (`review` at least `auto-edit`), exec policy, network policy and sandbox,
//! asks the parent's [`crate::Approver`] (nobody in `exec`, so requests are refused), and
//! starts with no session approvals of its own; nothing it returns is read as a grant.
//! Children nest at most [`MAX_DEPTH`] deep, so delegation cannot recurse without bound.
//! Each child has caps on model rounds and wall time
//! ([`AgentSettings`]), runs under a child of the parent's cancellation token, and is
//! stored as its own session whose header names its parent ([`ParentLink`]).
//!
//! Its events reach the front end wrapped in [`Event::Subagent`], so a child's `retry`
//! never stands for the foreground's request.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{Event, TaskStatus, ToolCall, Usage};
use codesmith_providers::Provider;
use codesmith_tools::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};
use serde_json::{Value, json};

use codesmith_tools::extensions::agents::CustomAgent;

use crate::agent::{Engine, EngineConfig};
use crate::runtime::Runtime;
use crate::session::{ParentLink, Session};

/// The tool's name.
pub const AGENT_TOOL: &str = "agent";

/// How deep subagents nest: the foreground agent is depth 0, its children depth 1; an
/// agent at this depth cannot start another.
pub const MAX_DEPTH: u32 = 3;

/// Default cap on a child's model rounds (`[agents] max_turns`).
pub const DEFAULT_MAX_TURNS: u32 = 30;

/// Default cap on a child's wall time in seconds (`[agents] max_wall_secs`).
pub const DEFAULT_MAX_WALL_SECS: u64 = 600;

/// How many children one engine runs at once: read-only calls of one response run in
/// parallel, and more of them wait for a slot.
pub const MAX_PARALLEL: usize = 4;

/// How many children one model response may start; further `agent` calls of the same
/// response are refused (a response with a hundred of them is a runaway, not a plan).
pub const MAX_PER_RESPONSE: u32 = 8;

/// The four subagent types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentType {
    /// The parent's whole tool surface, for multi-step work that changes files.
    General,
    /// Read-only exploration of the code base (and fetching pages).
    Explore,
    /// Read-only analysis that ends in a plan; nothing executes.
    Plan,
    /// Read-only review that may run tests and linters through the shell.
    Review,
}

impl AgentType {
    /// The type named `name` (`general`, `explore`, `plan`, `review`).
    pub fn parse(name: &str) -> Option<AgentType> {
        match name {
            "general" => Some(AgentType::General),
            "explore" => Some(AgentType::Explore),
            "plan" => Some(AgentType::Plan),
            "review" => Some(AgentType::Review),
            _ => None,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentType::General => "general",
            AgentType::Explore => "explore",
            AgentType::Plan => "plan",
            AgentType::Review => "review",
        }
    }

    /// True for the types that only read (`explore`, `plan`): their calls may run beside
    /// other read-only calls of the same batch.
    pub fn read_only(self) -> bool {
        matches!(self, AgentType::Explore | AgentType::Plan)
    }

    /// Whether `tool` belongs to this type's surface.
    fn keeps(self, tool: &dyn Tool) -> bool {
        let read_only = tool.capability() == Capability::ReadOnly;
        match self {
            AgentType::General => true,
            AgentType::Explore => read_only || tool.name() == "fetch_url",
            // A read-only tool that answers from elsewhere (a trusted MCP server's, a web
            // search) still reaches the network.
            AgentType::Plan => read_only && tool.external_label(&Value::Null).is_none(),
            AgentType::Review => read_only || tool.name() == "exec_shell",
        }
    }

    /// The child's approval mode: the parent's, and at least `auto-edit` for `review`
    /// (a shell command that writes then needs a person, and is refused in `exec`).
    fn approval(self, parent: ApprovalMode) -> ApprovalMode {
        match self {
            AgentType::Review => parent.at_least(ApprovalMode::AutoEdit),
            _ => parent,
        }
    }

    /// The role section appended to the parent's system prompt (byte-stable).
    fn role_prompt(self) -> &'static str {
        match self {
            AgentType::General => {
                "# Role: general subagent\nYou are a subagent: another agent delegated one task to you. \
                 Do it with the tools you have, then end with a short report for that agent: what you \
                 did, what you found, and what is left. Your last message is all it reads."
            }
            AgentType::Explore => {
                "# Role: explore subagent\nYou are a read-only subagent: another agent asked you to find \
                 something out. Search and read; you cannot change files or run commands. End with a \
                 compact answer for that agent: the facts, with the paths and line numbers they come \
                 from. Your last message is all it reads."
            }
            AgentType::Plan => {
                "# Role: plan subagent\nYou are a read-only planning subagent: another agent asked you for \
                 a plan. Read what you need; you cannot change files, run commands or reach the network. \
                 End with the plan: numbered steps naming the files and functions to change, and the \
                 risks. Your last message is all it reads."
            }
            AgentType::Review => {
                "# Role: review subagent\nYou are a review subagent: another agent asked you to review \
                 work. Read the code and run tests and linters with exec_shell; you cannot edit files. \
                 End with your findings for that agent, most serious first, each with its path and line. \
                 Your last message is all it reads."
            }
        }
    }
}

/// The caps and model of subagents, from `[agents]` in the user's config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// The model children use (`[agents] model`); `None`: the parent's model. Always
    /// the parent's provider.
    pub model: Option<String>,
    /// Cap on a child's model rounds (default [`DEFAULT_MAX_TURNS`]).
    pub max_turns: u32,
    /// Cap on a child's wall time (default [`DEFAULT_MAX_WALL_SECS`] seconds); when it
    /// passes, the child is cancelled like an interrupt and its partial answer returned.
    pub max_wall: Duration,
    /// Custom agents offered beside the built-in types (see
    /// [`codesmith_tools::extensions::agents`]); each only narrows its parent's tools.
    pub custom: Vec<CustomAgent>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            model: None,
            max_turns: DEFAULT_MAX_TURNS,
            max_wall: Duration::from_secs(DEFAULT_MAX_WALL_SECS),
            custom: Vec::new(),
        }
    }
}

/// The `agent` tool as the catalogue shows it. Its calls are run by the engine's
/// dispatch (which owns the provider, the approver and the session store), never
/// through [`Tool::call`], which refuses: outside an engine session there is no model
/// to delegate to. Its schema offers the built-in types and the custom agents it was
/// built with ([`AgentTool::with_custom`]; the same list as [`AgentSettings::custom`]).
#[derive(Debug, Default, Clone)]
pub struct AgentTool {
    custom: Vec<CustomAgent>,
}

impl AgentTool {
    /// The tool offering `custom` agents beside the built-in types.
    pub fn with_custom(custom: Vec<CustomAgent>) -> AgentTool {
        AgentTool { custom }
    }
}

const DESCRIPTION: &str = "Delegate one self-contained task to a subagent: a fresh agent with its own \
transcript that works until done and returns only its final answer (plus the files it changed). Use \
it to keep long searches, reviews or plans out of your own context, or to run several read-only \
investigations at once (explore and plan calls in one response run in parallel). Do not use it for \
a single read or search you can do yourself. The subagent sees nothing of this conversation: put \
everything it needs into `prompt`. Types: `explore` (read-only search and reading, fetch_url), \
`plan` (read-only, no commands, no network), `review` (read-only plus exec_shell for tests and \
linters; it cannot edit files), `general` (all of your tools). Examples: {\"type\": \"explore\", \
\"description\": \"find the retry logic\", \"prompt\": \"Where does the HTTP client retry failed \
requests? Name the files, functions and the backoff constants.\"} or {\"type\": \"review\", \
\"description\": \"review the parser change\", \"prompt\": \"Review src/parse.rs for bugs and run \
cargo test -p parser; report failures with paths and lines.\"}";

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        AGENT_TOOL
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let mut types: Vec<&str> = vec!["explore", "general", "plan", "review"];
        let mut about = "The subagent type: its tool surface and role.".to_string();
        if !self.custom.is_empty() {
            about.push_str(" Custom agents of this user:");
            for agent in &self.custom {
                types.push(&agent.name);
                about.push_str(&format!(
                    " `{}`: {}.",
                    agent.name,
                    codesmith_policy::visible_line(agent.description.trim_end_matches('.'), 200)
                ));
            }
        }
        json!({
            "type": "object",
            "properties": {
                "type": {
                    "type": "string",
                    "enum": types,
                    "description": about
                },
                "description": {
                    "type": "string",
                    "description": "A short label for the task (3 to 8 words), shown to the user."
                },
                "prompt": {
                    "type": "string",
                    "description": "The whole task: what to do, what to return, and every fact it needs."
                }
            },
            "required": ["type", "description", "prompt"],
            "additionalProperties": false
        })
    }

    /// A `general` child may run code, so the honest capability of the tool is the
    /// strongest; the gate judges each call by its type (see [`requested_type`]).
    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    async fn call(&self, _ctx: &ToolContext, _args: Value) -> ToolOutcome {
        Err(unavailable())
    }
}

/// The refusal of an `agent` call outside an engine session.
fn unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::Unavailable,
        "The agent tool runs only inside an agent session: here there is no model to delegate to.",
        "Do the task with the other tools directly.",
    )
}

/// The subagent type a call of `tool` asks for: `None` when `tool` is not the `agent`
/// tool or the type is missing or unknown (the call then refuses when it runs).
pub(crate) fn requested_type(tool: &dyn Tool, args: &Value) -> Option<AgentType> {
    (tool.name() == AGENT_TOOL)
        .then(|| {
            args.get("type")
                .and_then(Value::as_str)
                .and_then(AgentType::parse)
        })
        .flatten()
}

/// What an engine needs to start children: the parent's provider and settings, its
/// place in the tree, and the caps.
#[derive(Clone)]
pub(crate) struct Delegation {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) config: EngineConfig,
    pub(crate) settings: AgentSettings,
    /// This engine's depth (0: the foreground).
    pub(crate) depth: u32,
    /// This engine's own type when it is a subagent (its withheld tools are refused
    /// naming it).
    pub(crate) role: Option<AgentType>,
    /// The session this engine writes (the children's parent).
    pub(crate) session_id: String,
    /// The provider name the session header records.
    pub(crate) provider_label: String,
    /// Tools of the parent's catalogue this subagent's type does not have: a call to
    /// one is refused naming the type (before name repair could turn it into another).
    pub(crate) withheld: Vec<&'static str>,
    /// The custom agent this subagent runs as, if any (its withheld tools are refused
    /// naming it).
    pub(crate) custom: Option<String>,
    /// This engine's [`MAX_PARALLEL`] slots for running children (its own: a child's
    /// children wait for the child's slots, never for the ones their ancestors hold).
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// Children started in the running model response (see [`MAX_PER_RESPONSE`]).
    pub(crate) started: Arc<std::sync::atomic::AtomicU32>,
}

impl Delegation {
    /// A foreground engine's delegation: depth 0, no role, the settings of `config`.
    pub(crate) fn root(
        provider: Arc<dyn Provider>,
        config: EngineConfig,
        session_id: String,
        provider_label: String,
    ) -> Delegation {
        Delegation {
            provider,
            settings: config.agents.clone(),
            config,
            depth: 0,
            role: None,
            session_id,
            provider_label,
            withheld: Vec::new(),
            custom: None,
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_PARALLEL)),
            started: Arc::default(),
        }
    }

    /// Starts counting the children of a new model response.
    pub(crate) fn new_response(&self) {
        self.started.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// One child that ran, as the parent's transcript and totals record it.
#[derive(Debug, Clone)]
pub(crate) struct Delegated {
    pub(crate) call_id: String,
    pub(crate) agent_id: String,
    /// The type's name (a built-in type's, or a custom agent's).
    pub(crate) agent_type: String,
    pub(crate) status: &'static str,
    pub(crate) turns: u32,
    pub(crate) usage: Usage,
}

impl Delegated {
    /// The [`crate::session::NoteKind::Subagent`] data.
    pub(crate) fn note(&self) -> Value {
        json!({
            "call_id": self.call_id,
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
            "status": self.status,
            "turns": self.turns,
            "usage": self.usage,
        })
    }
}

/// Where a running child's events go: the parent's dispatch forwards them to its sink.
pub(crate) type EventTx = tokio::sync::mpsc::UnboundedSender<Event>;

/// The refusal of an `agent` call by an agent at `depth`, already [`MAX_DEPTH`] deep.
fn too_deep(depth: u32) -> Refusal {
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "Subagents nest at most {MAX_DEPTH} deep and this agent is at depth {depth}: it cannot \
             start another."
        ),
        "Do this part yourself with your own tools, or end with what you found and say what is left, \
         so the agent above you can decide.",
    )
    .with("depth", depth)
    .with("max_depth", MAX_DEPTH)
}

/// The refusal of a tool the running subagent (of type `role`, at `depth`) does not have.
/// A `general` subagent at [`MAX_DEPTH`] is not shown `agent` at all, and is told why when
/// it calls it anyway.
pub(crate) fn withheld(role: AgentType, depth: u32, name: &str, custom: Option<&str>) -> Refusal {
    if role == AgentType::General && name == AGENT_TOOL && depth >= MAX_DEPTH {
        return too_deep(depth);
    }
    if let Some(agent) = custom {
        return Refusal::new(
            ErrorCode::Denied,
            format!(
                "`{name}` is not available to this subagent: the user's custom agent `{agent}` \
                 may use only the tools its definition lists (and that its parent has); the call \
                 was NOT run."
            ),
            "Do not try to reach it another way. Put what should change into your final answer; \
             the agent that delegated to you decides.",
        )
        .with("agent_type", agent.to_string())
        .with("tool", name.to_string())
        .with("executed", false);
    }
    let what = match role {
        AgentType::General => "it is not in this session's catalogue",
        AgentType::Explore => "an explore subagent only searches and reads",
        AgentType::Plan => "a plan subagent only reads; nothing executes",
        AgentType::Review => "a review subagent reads and runs tests, and never edits files",
    };
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "`{name}` is not available to this {} subagent: {what}.",
            role.as_str()
        ),
        "Do not try to reach it another way. Put what should change into your final answer; the \
         agent that delegated to you decides.",
    )
    .with("agent_type", role.as_str())
    .with("tool", name.to_string())
}

/// The approver a child asks: the parent's (the same person, or nobody), told which
/// subagent asks, so a person never mistakes a child's request for the foreground's.
///
/// The request's id becomes `<agent_id>/<call id>` (a grandchild's gets its parent's
/// prefix too) and carries the innermost asker's `agent_id`, so an answer through the
/// engine's queue reaches this child's call and never a same-named call of another agent.
struct ChildApprover {
    inner: Arc<dyn crate::Approver>,
    /// `explore subagent "find the retry logic"`.
    asker: String,
    /// The child's id (its session id).
    agent_id: String,
}

#[async_trait]
impl crate::Approver for ChildApprover {
    async fn ask(
        &self,
        request: &codesmith_protocol::ApprovalRequest,
    ) -> codesmith_protocol::ApprovalAnswer {
        self.ask_with_reason(request).await.0
    }

    async fn ask_with_reason(
        &self,
        request: &codesmith_protocol::ApprovalRequest,
    ) -> (codesmith_protocol::ApprovalAnswer, Option<String>) {
        let mut request = request.clone();
        request.reason = format!(
            "The {} asks. {}",
            codesmith_policy::visible_line(&self.asker, 120),
            request.reason
        );
        request.call_id = format!("{}/{}", self.agent_id, request.call_id);
        request
            .agent_id
            .get_or_insert_with(|| self.agent_id.clone());
        self.inner.ask_with_reason(&request).await
    }

    fn interactive(&self) -> bool {
        self.inner.interactive()
    }
}

/// What [`run`] returns: the call's result, with the record of the child when one ran.
type Ran = (ToolOutcome, Option<Delegated>);

/// The refusal of a shell command a `review` subagent may not run: only commands that
/// read, and test and build commands that write nowhere else, are its to run. `why` says
/// what in the command may change files.
pub(crate) fn review_shell_refusal(command: &str, why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "`{command}` was not run: a review subagent runs only commands that read, and test or \
             build commands that write nowhere else; {why}."
        ),
        "Do not try another way to change files. Run the tests or linters plainly (no redirection, \
         no output, report or config options), and put what should change into your final answer.",
    )
    .with("agent_type", AgentType::Review.as_str())
    .with("tool", "exec_shell")
}

/// Why a `review` subagent may not run the command `eval` judged, or `None` when it may:
/// the exec policy parsed it whole, no part redirects output into a file, and each part
/// only reads (`safe`) or is a test or build command (the claim verifier's list) given no
/// option that points its writes, reports or configuration elsewhere or hands it a program
/// to run (`--basetemp`, `--junitxml=…`, `-o`, `--out-dir`, `-exec`, `--config`, `-u`, …),
/// and, for a task runner (`make`, `ninja`, `just`, `task`), no target but a test target.
/// A test runner's own writes (its build directory, its cache) are the price of running
/// it; anything it is told to write besides is refused.
pub(crate) fn review_objection(eval: &codesmith_policy::Evaluation) -> Option<String> {
    use codesmith_policy::SafetyLevel;
    if !eval.parsed || eval.segments.is_empty() {
        return Some("the command could not be parsed whole".into());
    }
    for segment in &eval.segments {
        if segment.redirect_level != SafetyLevel::Safe {
            return Some(format!(
                "`{}` redirects its output into a file",
                segment.text
            ));
        }
        if segment.level == SafetyLevel::Safe {
            continue;
        }
        if crate::verify::commands::class_of_argv(&segment.argv).is_none() {
            return Some(format!(
                "`{}` is neither a test nor a build command, and it may change files",
                segment.text
            ));
        }
        if let Some(word) = segment.argv.iter().skip(1).find(|w| points_writes(w)) {
            return Some(format!(
                "`{word}` may make `{}` write files, or run another program",
                segment.text
            ));
        }
        if let Some(target) = non_test_target(&segment.argv) {
            return Some(format!(
                "`{target}` is not a test target of `{}`",
                segment.text
            ));
        }
    }
    None
}

/// Words of an option name that point a test or build command's writes elsewhere, load
/// configuration, or hand it a program to run, matched whole against the parts of the name
/// (split at `-`, `_`, `.` and lower-to-upper case changes), lowercased.
const WRITING_OPTION_WORDS: &[&str] = &[
    "accept", "clean", "cov", "debug", "emit", "fix", "html", "ini", "install", "lcov", "out",
    "prefix", "record", "target", "xml",
];

/// Pieces that mark a part of an option name wherever they occur in it, so glued names
/// are caught too (`-coverprofile`, `-test.outputdir`, `--junitxml`, `--basetemp`).
const WRITING_OPTION_PIECES: &[&str] = &[
    "bless",
    "cache",
    "config",
    "cover",
    "dir",
    "eval",
    "exec",
    "file",
    "junit",
    "log",
    "outdir",
    "outfile",
    "output",
    "override",
    "overwrite",
    "report",
    "result",
    "runner",
    "save",
    "snapshot",
    "temp",
    "tmp",
    "trace",
    "update",
    "wrapper",
    "write",
];

/// Parts that contain a piece above but name nothing written: `--profile release` picks a
/// build profile.
const HARMLESS_OPTION_PARTS: &[&str] = &["profile"];

/// Single-letter options with the same effect in common runners: `-o` (output, pytest's
/// ini override), `-c` (config file, `go test -c` writes a binary), `-f` (file), `-t`
/// (ninja's tools, make's touch), `-u` (update snapshots).
const WRITING_SHORT_OPTIONS: &[&str] = &["o", "c", "f", "t", "u"];

/// True when `word` is an option (`-x`, `--name`, `--name=value`, `-name`) whose name
/// [`WRITING_OPTION_WORDS`], [`WRITING_OPTION_PIECES`] or [`WRITING_SHORT_OPTIONS`] marks;
/// a name whose first part is `no` negates it (`--noEmit`, `--no-cache`) and is harmless.
fn points_writes(word: &str) -> bool {
    let Some(option) = word.strip_prefix('-') else {
        return false;
    };
    let name = option.trim_start_matches('-');
    let name = name.split_once('=').map_or(name, |(n, _)| n);
    if name.is_empty() {
        return false;
    }
    if WRITING_SHORT_OPTIONS.contains(&name) {
        return true;
    }
    let parts = name_parts(name);
    if parts.first().is_some_and(|p| p == "no") {
        return false;
    }
    parts.iter().any(|p| {
        WRITING_OPTION_WORDS.contains(&p.as_str())
            || (!HARMLESS_OPTION_PARTS.contains(&p.as_str())
                && WRITING_OPTION_PIECES.iter().any(|piece| p.contains(piece)))
    })
}

/// `outputFile` → `output`, `file`; `--target-dir` → `target`, `dir`.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            parts.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    parts.push(current);
    parts.retain(|p| !p.is_empty());
    parts
}

/// Task runners whose operands are targets: each target runs a recipe of its own.
const TARGET_RUNNERS: &[&str] = &["make", "gmake", "just", "task", "ninja"];

/// The first operand of a task runner in `argv` that is not a test target (`test`,
/// `check`, `test-…`, or `all` for a build): `make test install` would install, and a
/// variable assignment (`make test SHELL=…`) changes what every recipe runs.
fn non_test_target(argv: &[String]) -> Option<&str> {
    let program = argv.first()?.rsplit('/').next().unwrap_or_default();
    if !TARGET_RUNNERS.contains(&program) {
        return None;
    }
    let mut skip_value = false;
    argv[1..].iter().map(String::as_str).find(|w| {
        if std::mem::take(&mut skip_value) {
            return false;
        }
        if w.starts_with('-') {
            // `-C dir`: the next word is the directory. Other options' values are only
            // passed over when numeric (`-j 4`), so no target hides behind one.
            skip_value = *w == "-C";
            return false;
        }
        let number = w.chars().all(|c| c.is_ascii_digit());
        !number && (w.contains('=') || !(*w == "all" || crate::verify::commands::is_test_target(w)))
    })
}

/// Runs one `agent` call of the engine `rt` belongs to. Child events go to `tx`, wrapped.
///
/// Boxed, and declared `Send`: a child's loop may start children of its own, so the
/// future is recursive.
pub(crate) fn run<'a>(
    rt: &'a Runtime,
    call: &'a ToolCall,
    args: &'a Value,
    tx: &'a EventTx,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Ran> + Send + 'a>> {
    Box::pin(run_child(rt, call, args, tx))
}

async fn run_child(rt: &Runtime, call: &ToolCall, args: &Value, tx: &EventTx) -> Ran {
    let custom = rt
        .delegation
        .as_ref()
        .map_or(&[][..], |d| d.settings.custom.as_slice());
    let request = match Request::read(args, custom) {
        Ok(r) => r,
        Err(refusal) => return (Err(refusal), None),
    };
    let Some(host) = &rt.delegation else {
        return (Err(unavailable()), None);
    };
    let depth = host.depth + 1;
    if depth > MAX_DEPTH {
        return (Err(too_deep(host.depth)), None);
    }
    let nth = host
        .started
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        + 1;
    if nth > MAX_PER_RESPONSE {
        let refusal = Refusal::new(
            ErrorCode::Denied,
            format!(
                "This response already started {MAX_PER_RESPONSE} subagents, the most one response \
                 may start: this one was not started."
            ),
            "Wait for the answers of the ones that ran, then delegate what is still open in a \
             later response, or do it yourself.",
        )
        .with("max_per_response", MAX_PER_RESPONSE);
        return (Err(refusal), None);
    }
    // A slot among this engine's running children; an interrupt ends the wait.
    let _slot = tokio::select! {
        slot = host.slots.acquire() => match slot {
            Ok(slot) => slot,
            Err(_) => return (Err(failed("the subagent slots were closed")), None),
        },
        () = rt.ctx.cancel.cancelled() => {
            return (Err(codesmith_tools::cancelled(AGENT_TOOL, None)), None);
        }
    };
    let kind = request.kind;
    let custom = request.custom.as_ref();
    // The name front ends, notes and the child's session header show.
    let type_name = custom
        .map_or(kind.as_str(), |a| a.name.as_str())
        .to_string();
    let model = custom
        .and_then(|a| a.model.clone())
        .or_else(|| host.settings.model.clone())
        .unwrap_or_else(|| host.config.model.clone());
    let link = ParentLink {
        session_id: host.session_id.clone(),
        call_id: call.id.clone(),
        agent_type: type_name.clone(),
        depth,
    };
    let session = match Session::create_linked(
        &rt.ctx.home,
        &rt.ctx.workspace,
        &host.provider_label,
        &model,
        Some(link),
    ) {
        Ok(s) => s,
        Err(e) => return (Err(failed(&e.to_string())), None),
    };
    let agent_id = session.id().to_string();
    let config = EngineConfig {
        model,
        system_prompt: match custom {
            None => format!("{}\n\n{}", host.config.system_prompt, kind.role_prompt()),
            Some(agent) => format!(
                "{}\n\n# Role: {} subagent (the user's custom agent)\nYou are a subagent: another \
                 agent delegated one task to you. End with a short report for that agent; your \
                 last message is all it reads.\n\n{}",
                host.config.system_prompt, agent.name, agent.prompt
            ),
        },
        max_turns: host.settings.max_turns,
        approval: kind.approval(host.config.approval),
        // The parent's task snapshot, taken before a writing child starts, covers it.
        snapshots: crate::snapshot::SnapshotSettings {
            enabled: false,
            ..host.config.snapshots.clone()
        },
        ..host.config.clone()
    };
    // At the deepest level `agent` could only be refused: it is not offered.
    // A custom agent's list narrows the surface (an intersection with the parent's).
    let listed = |t: &dyn Tool| {
        custom
            .and_then(|a| a.tools.as_ref())
            .is_none_or(|list| list.iter().any(|n| n == t.name()))
    };
    let tools = rt.tools.filtered(|t| {
        kind.keeps(t) && listed(t) && !(depth >= MAX_DEPTH && t.name() == AGENT_TOOL)
    });
    let kept = tools.names();
    let withheld: Vec<&'static str> = rt
        .tools
        .names()
        .into_iter()
        .filter(|n| !kept.contains(n))
        .collect();
    let ctx = ToolContext::new(rt.ctx.workspace.clone(), rt.ctx.home.clone())
        .with_sandbox(rt.ctx.sandbox.clone());
    let mut child = Engine::new(
        Arc::clone(&host.provider),
        tools,
        Arc::new(ctx),
        Arc::new(ChildApprover {
            inner: Arc::clone(&rt.approver),
            asker: format!("{type_name} subagent \"{}\"", request.description),
            agent_id: agent_id.clone(),
        }),
        session,
        config,
    );
    child.set_delegation(
        host.settings.clone(),
        depth,
        kind,
        withheld,
        custom.map(|a| a.name.clone()),
    );

    let _ = tx.send(Event::SubagentStarted {
        agent_id: agent_id.clone(),
        call_id: call.id.clone(),
        agent_type: type_name.clone(),
        description: request.description.clone(),
        depth,
    });
    let started = Instant::now();
    let cancel = rt.ctx.cancel.child_token();
    let mut seen = Findings::default();
    let mut timed_out = false;
    let result = {
        let mut sink = |event: Event| {
            seen.record(&event);
            let _ = tx.send(Event::Subagent {
                agent_id: agent_id.clone(),
                event: Box::new(event),
            });
        };
        let mut task =
            std::pin::pin!(child.run_task_cancellable(&request.prompt, cancel.clone(), &mut sink));
        tokio::select! {
            result = &mut task => result,
            () = tokio::time::sleep(host.settings.max_wall) => {
                timed_out = true;
                cancel.cancel();
                task.await
            }
        }
    };
    let parent_cancelled = rt.ctx.cancel.is_cancelled();
    let (status, turns, usage, outcome) = match result {
        Ok(done) => {
            let status = match (&done.status, timed_out) {
                (TaskStatus::Cancelled, true) => "wall_time_limit",
                (TaskStatus::Cancelled, false) => "cancelled",
                (TaskStatus::Completed, _) => "completed",
                (TaskStatus::TurnLimit, _) => "turn_limit",
                (TaskStatus::TooManyFailures, _) => "too_many_failures",
                (TaskStatus::Interrupted, _) => "interrupted",
                (TaskStatus::Failed, _) => "failed",
            };
            let outcome = if parent_cancelled {
                Err(codesmith_tools::cancelled(
                    AGENT_TOOL,
                    Some(started.elapsed()),
                ))
            } else {
                Ok(answer(
                    &rt.ctx.home,
                    &agent_id,
                    status,
                    &done.final_text,
                    &seen,
                    &host.settings,
                )
                .with("duration_ms", started.elapsed().as_millis() as u64))
            };
            (status, done.turns, done.usage, outcome)
        }
        Err(e) => {
            // The rounds that ran before the failure cost too: the child's transcript
            // recorded each one's usage.
            let (usage, _) = crate::session::recorded_usage(child.session().path());
            ("failed", 0, usage, Err(failed(&e.to_string())))
        }
    };
    let _ = tx.send(Event::SubagentFinished {
        agent_id: agent_id.clone(),
        status: status.to_string(),
        turns,
        usage,
    });
    let record = Delegated {
        call_id: call.id.clone(),
        agent_id,
        agent_type: type_name,
        status,
        turns,
        usage,
    };
    (outcome, Some(record))
}

/// Most characters of a subagent's description as front ends and approval prompts show it.
pub const DESCRIPTION_CHARS: usize = 80;

/// A description as a label: its first line, at most [`DESCRIPTION_CHARS`] characters
/// (longer ones end in `…`). It is shown on one line wherever a child is named, and a
/// model may send anything.
fn label(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    let mut out: String = line.chars().take(DESCRIPTION_CHARS).collect();
    if line.chars().count() > DESCRIPTION_CHARS || description.trim().lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The arguments of an `agent` call.
struct Request {
    /// The built-in type it runs as (`general` for a custom agent, narrowed by its list).
    kind: AgentType,
    /// The custom agent it asked for, if any.
    custom: Option<CustomAgent>,
    description: String,
    prompt: String,
}

impl Request {
    fn read(args: &Value, custom: &[CustomAgent]) -> Result<Request, Refusal> {
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        if let Some(extra) = args.as_object().and_then(|o| {
            o.keys()
                .find(|k| !matches!(k.as_str(), "type" | "description" | "prompt"))
        }) {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!(
                    "`{}` is not an argument of `agent`: it takes only `type`, `description` and \
                     `prompt`. A subagent's model, permissions and limits come from this session \
                     and its configuration, and only ever tighten.",
                    codesmith_policy::visible_line(extra, 60)
                ),
                "Send the call again with only those three arguments.",
            )
            .with("executed", false));
        }
        let kind_name = args.get("type").and_then(Value::as_str).unwrap_or("");
        let agent = custom.iter().find(|a| a.name == kind_name).cloned();
        let Some(kind) = AgentType::parse(kind_name).or(agent.as_ref().map(|_| AgentType::General))
        else {
            let mut names: Vec<&str> = vec!["explore", "plan", "review", "general"];
            names.extend(custom.iter().map(|a| a.name.as_str()));
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!(
                    "`type` must be one of {}; got {:?}.",
                    names.join(", "),
                    kind_name
                ),
                "Send the call again with one of those types, e.g. {\"type\": \"explore\", \
                 \"description\": \"…\", \"prompt\": \"…\"}.",
            ));
        };
        let (Some(description), Some(prompt)) = (text("description"), text("prompt")) else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                "`description` and `prompt` must both be non-empty strings.",
                "Send the call again with a short `description` and the whole task in `prompt`.",
            ));
        };
        Ok(Request {
            kind,
            custom: agent,
            description: label(&description),
            prompt,
        })
    }
}

/// The result the parent reads: the child's final answer (made inert for the terminal
/// and capped like a shell's output, the whole text kept for `retrieve_tool_result`), how
/// it ended when it did not finish, and (in the `[meta]` line) its id, the files it
/// changed and the network sources it read (the parent wraps such an answer as external
/// content, see [`external_label`]).
fn answer(
    home: &std::path::Path,
    agent_id: &str,
    status: &str,
    final_text: &str,
    seen: &Findings,
    settings: &AgentSettings,
) -> ToolOutput {
    let why = match status {
        "completed" => None,
        "turn_limit" => Some(format!(
            "the subagent used its {} model rounds (`[agents] max_turns`) without finishing",
            settings.max_turns
        )),
        "wall_time_limit" => Some(format!(
            "the subagent ran out of its {} s of wall time (`[agents] max_wall_secs`) and was stopped",
            settings.max_wall.as_secs()
        )),
        "too_many_failures" => {
            Some("the subagent's loop guard stopped it after repeated failed calls".into())
        }
        "interrupted" => Some("the subagent's last answer was cut off".into()),
        _ => Some("the subagent was stopped".into()),
    };
    let text = match why {
        None => final_text.to_string(),
        Some(why) => format!(
            "The subagent did not finish: {why}. Its last words:\n{}",
            if final_text.is_empty() {
                "(none)"
            } else {
                final_text
            }
        ),
    };
    let (capped, spill) = codesmith_tools::spill::cap_output(home, &text, Some(&text));
    let mut output = ToolOutput::new(Value::String(capped.text))
        .with("agent_id", agent_id)
        .with("status", status);
    if capped.omitted > 0 {
        output = output.with("omitted_bytes", capped.omitted);
    }
    if let Some(reference) = spill {
        output = output.with("spill_ref", reference);
    }
    if !seen.changed.is_empty() {
        output = output.with(
            "files_changed",
            seen.changed.iter().cloned().collect::<Vec<_>>(),
        );
    }
    if !seen.external.is_empty() {
        output = output.with(
            READ_EXTERNAL,
            seen.external.iter().cloned().collect::<Vec<_>>(),
        );
    }
    output
}

/// Meta key of an `agent` result: the labels of the network sources the child (or one of
/// its own children) read.
const READ_EXTERNAL: &str = "read_external";

/// The `<external_content>` label of an `agent` call's result, `None` when the child read
/// nothing from the network. A child that read a page or an MCP server's answer writes its
/// final answer under that content's influence, so the answer reaches the parent wrapped
/// and labelled as external content, like the page itself would.
pub(crate) fn external_label(tool: &str, outcome: &ToolOutcome) -> Option<String> {
    if tool != AGENT_TOOL {
        return None;
    }
    let sources: Vec<&str> = outcome
        .as_ref()
        .ok()?
        .meta
        .get(READ_EXTERNAL)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    (!sources.is_empty()).then(|| format!("subagent:{}", sources.join(",")))
}

/// What a running child's events show the parent: the workspace paths its successful
/// writes reported, and the labels of the network-origin results it read.
#[derive(Debug, Default)]
struct Findings {
    changed: BTreeSet<String>,
    external: BTreeSet<String>,
}

impl Findings {
    fn record(&mut self, event: &Event) {
        if let Event::ToolResult {
            ok: true,
            name,
            meta,
            source,
            ..
        } = event
        {
            // An `agent` result's own label names its child's sources, which its meta
            // lists one by one.
            if name != AGENT_TOOL
                && let Some(label) = source
            {
                self.external.insert(label.clone());
            }
            self.record_meta(name, meta);
        }
    }

    /// Adds what a successful result's meta reports: the paths of a write (`path`, or
    /// each of an `apply_patch`'s `files`), and what a grandchild read or changed.
    fn record_meta(&mut self, name: &str, meta: &Value) {
        let strings = |key: &str| -> Vec<String> {
            meta.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        if name == AGENT_TOOL {
            self.external.extend(strings(READ_EXTERNAL));
            self.changed.extend(strings("files_changed"));
            return;
        }
        if !matches!(
            name,
            "write_file" | "edit_file" | "fim_edit" | "apply_patch"
        ) {
            return;
        }
        if let Some(path) = meta.get("path").and_then(Value::as_str) {
            self.changed.insert(path.to_string());
        }
        for file in meta
            .get("files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(path) = file.get("path").and_then(Value::as_str) {
                self.changed.insert(path.to_string());
            }
        }
    }
}

/// The refusal of a child that could not run (its session could not be written, its
/// model could not be reached).
fn failed(why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::ToolError,
        format!("The subagent failed: {why}"),
        "Do the task yourself, or try the delegation once more if the cause was transient.",
    )
}
