//! RLM, a Recursive Language Model session: for
//! exact work over inputs larger than the context window, the model holds a handle, not
//! the raw body. `rlm {task, inputs}` loads the inputs into a resident Python REPL as
//! variables and answers with metadata only (sizes, a short preview); `rlm_exec {code}`
//! runs one round of Python there and answers with its printed output, capped. Semantic
//! judgement of small pieces goes to child model calls (`llm`, `llm_batch`, `rlm_query`).
//!
//! Invariants:
//! - an input's body travels only over the REPL's stdin pipe; the transcript holds at
//!   most [`PREVIEW_CHARS`] of it per input and [`OUTPUT_CAP`] characters of printed
//!   output per round (the rest is spilled, and kept in the REPL as `last_output`);
//! - the REPL runs through the shell's isolation check and sandbox backend ([`Sandbox::admit`]), always
//!   without network, under the shell's reaper, with its address space limited; child
//!   calls travel over its stdout pipe to the harness, never over a network;
//! - every round, child call and session has a clock: [`RlmConfig`].
//!
//! The Python runs inside the sandbox, never beside it.
//!
//! [`Sandbox::admit`]: codesmith_tools::sandbox::Sandbox::admit

mod child;
mod repl;
mod round;

use std::ffi::OsString;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use codesmith_providers::{CompleteOptions, Provider};
use codesmith_tools::{
    Capability, ErrorCode, Refusal, Registry, Tool, ToolContext, ToolOutcome, ToolOutput,
};
use serde_json::{Value, json};

pub use child::{CHILD_SYSTEM, ChildModel};
pub use repl::{PYTHON_NAMES, find_python};
pub use round::{CHILD_RLM_ROUNDS, CHILD_RLM_SYSTEM, DEGRADED_CONTEXT_CHARS, code_block};

/// Wall time of one child call, retries included (seed: `CHILD_TIMEOUT_SECS` = 120).
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);
/// Default output-token cap of a child call (seed: 4096).
pub const CHILD_MAX_TOKENS: u32 = 4096;
/// Most prompts in one `llm_batch` (seed: `MAX_BATCH` = 16).
pub const MAX_BATCH: usize = 16;
/// Default recursion budget: how many levels of `rlm_query` children may nest below the
/// root before a child call is a plain completion (`depth_remaining`).
pub const DEFAULT_DEPTH: u32 = 1;
/// Characters of printed output one round shows the model (seed: past 1,000 characters,
/// output becomes a handle): 700 from the start and 300 from the end.
pub const OUTPUT_CAP: usize = 1_000;
/// Characters of each input's preview in the `rlm` result.
pub const PREVIEW_CHARS: usize = 200;
/// Default wall time of one round (child calls included).
pub const ROUND_TIMEOUT: Duration = Duration::from_secs(300);
/// Default wall time of one RLM session, from `rlm` to its last round.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default address-space limit of the REPL (`RLIMIT_AS`), in bytes.
pub const MEMORY_BYTES: u64 = 4 << 30;
/// Most bytes of input one session loads.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;
/// Most files one glob input loads.
pub const MAX_GLOB_FILES: usize = 5_000;

/// The bounds of RLM sessions. `Default` gives the constants of this module.
#[derive(Debug, Clone)]
pub struct RlmConfig {
    /// Wall time of one round (default [`ROUND_TIMEOUT`]).
    pub round_timeout: Duration,
    /// Wall time of one session (default [`SESSION_TIMEOUT`]).
    pub session_timeout: Duration,
    /// Address-space limit of each REPL in bytes (default [`MEMORY_BYTES`]).
    pub memory_bytes: u64,
    /// Characters of printed output shown per round (default [`OUTPUT_CAP`]).
    pub output_cap: usize,
    /// Wall time of one child call (default [`CHILD_TIMEOUT`]).
    pub child_timeout: Duration,
    /// Output-token cap of one child call (default [`CHILD_MAX_TOKENS`]).
    pub child_max_tokens: u32,
    /// Most prompts per batch (default [`MAX_BATCH`]).
    pub max_batch: usize,
    /// Recursion budget of the root session (default [`DEFAULT_DEPTH`]).
    pub depth: u32,
    /// The `PATH` searched for [`PYTHON_NAMES`] (default: this process's `PATH`).
    pub python_path: Option<OsString>,
    /// Most bytes of input per session (default [`MAX_INPUT_BYTES`]).
    pub max_input_bytes: u64,
}

impl Default for RlmConfig {
    fn default() -> Self {
        RlmConfig {
            round_timeout: ROUND_TIMEOUT,
            session_timeout: SESSION_TIMEOUT,
            memory_bytes: MEMORY_BYTES,
            output_cap: OUTPUT_CAP,
            child_timeout: CHILD_TIMEOUT,
            child_max_tokens: CHILD_MAX_TOKENS,
            max_batch: MAX_BATCH,
            depth: DEFAULT_DEPTH,
            python_path: None,
            max_input_bytes: MAX_INPUT_BYTES,
        }
    }
}

/// Registers [`tools`] in `registry`.
pub fn register(
    registry: &mut Registry,
    provider: Arc<dyn Provider>,
    model: &str,
    complete: CompleteOptions,
    config: RlmConfig,
) {
    for tool in tools(provider, model, complete, config) {
        registry.register(tool);
    }
}

/// The tools `rlm` and `rlm_exec`, sharing one session slot, with child calls going to
/// `provider` as `model` under `complete`'s retry settings.
pub fn tools(
    provider: Arc<dyn Provider>,
    model: &str,
    complete: CompleteOptions,
    config: RlmConfig,
) -> Vec<Arc<dyn Tool>> {
    let child = ChildModel {
        provider,
        model: model.to_string(),
        complete,
        timeout: config.child_timeout,
        max_tokens: config.child_max_tokens,
    };
    let shared = Arc::new(Shared {
        config,
        child,
        slots: Mutex::new(std::collections::HashMap::new()),
        serial: Mutex::new(0),
    });
    vec![Arc::new(RlmOpen(shared.clone())), Arc::new(RlmExec(shared))]
}

/// State shared by `rlm` and `rlm_exec`: the bounds, the child model and the open session.
struct Shared {
    config: RlmConfig,
    child: ChildModel,
    /// The open RLM session of each tool session (by [`ToolContext::session_key`], so a
    /// subagent sharing these tools never touches its parent's); taken out while a round
    /// runs.
    slots: Mutex<std::collections::HashMap<u64, Open>>,
    serial: Mutex<u64>,
}

impl Shared {
    fn take(&self, ctx: &ToolContext) -> Option<Open> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&ctx.session_key())
    }

    fn put(&self, ctx: &ToolContext, open: Open) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ctx.session_key(), open);
    }
}

/// An open RLM session.
struct Open {
    id: String,
    repl: repl::Repl,
    opened: Instant,
    rounds: u32,
    child_calls: u32,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.repl.kill();
    }
}

/// Cuts `text` to `cap` characters: the first 70% and the last 30%, with a marker naming
/// how many were left out.
pub(crate) fn cap_text(text: &str, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_string();
    }
    let head = cap * 7 / 10;
    let tail = cap - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    format!(
        "{start}\n[... {} characters omitted ...]\n{end}",
        total - head - tail
    )
}

const OPEN_DESCRIPTION: &str = "Open an RLM session: load large inputs (files, a glob of files, \
a spilled tool result, or text) into a resident, sandboxed Python REPL as variables, and get \
back only their sizes and a short preview. Then call rlm_exec with Python code, round by round, \
to do exact work over them (count, slice, search, parse) and hand small pieces to child model \
calls for judgement.\nUse it when the exact answer needs more input than fits in your context \
(a multi-megabyte log, a whole directory) or exact arithmetic over many items. Do not use it \
for a file you can simply read, a single grep (use grep_files), or work that needs no code: it \
costs more time and tokens per step than reading. Opening a new session closes the previous \
one; a session ends with final(answer), at the end of the task, or after its time limit.\n\
Examples: {\"task\": \"count ERROR lines and the top error codes\", \"inputs\": [{\"name\": \
\"log\", \"path\": \"logs/app.log\"}]}; {\"task\": \"find every TODO with its owner\", \
\"inputs\": [{\"name\": \"src\", \"glob\": \"src/**/*.rs\"}]}; {\"task\": \"summarize the \
failures\", \"inputs\": [{\"name\": \"out\", \"ref\": \"shell-123-1700000000000-0.txt\"}]}";

const EXEC_DESCRIPTION: &str = "Run one round of Python in the open RLM session (see rlm). \
Inputs are variables (a glob input is a dict of path -> text; `inputs` holds their metadata). \
Helpers: peek(var, start, length) -> str; grep(var, pattern, max=100) -> [(line_no, line)]; \
chunks(var, size) -> [str]; llm(prompt) -> str (a child model call, 120 s, 4096 tokens); \
llm_batch(prompts) -> [str] (at most 16 prompts, run concurrently); rlm_query(prompt, context) \
-> str (a child with its own REPL holding context, while the depth budget lasts); \
final(answer) ends the session with that answer. Variables persist between rounds. Print only \
small summaries: output past 1,000 characters is cut (the whole of it stays in the variable \
last_output and is saved for retrieve_tool_result). It runs in the shell's sandbox without \
network: only the workspace is writable. Do the exact parts (counting, matching, sorting) in Python, not in your head.\n\
Examples: {\"code\": \"print(len(log), len(grep(log, r'ERROR', 5)))\"}; {\"code\": \"import \
collections, re\\nc = collections.Counter(re.findall(r'E\\\\d{4}', log))\\nprint(c.most_common(3))\"}; \
{\"code\": \"final(f'{n} lines match')\"}";

/// `rlm`: opens a session.
struct RlmOpen(Arc<Shared>);

/// `rlm_exec`: runs one round.
struct RlmExec(Arc<Shared>);

#[async_trait]
impl Tool for RlmOpen {
    fn name(&self) -> &'static str {
        "rlm"
    }

    fn description(&self) -> &'static str {
        OPEN_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What the session is to find out, in one sentence."},
                "inputs": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 16,
                    "description": "Each input becomes a Python variable named `name`, loaded from exactly one of path, glob, ref or text.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "A Python identifier, e.g. \"log\"."},
                            "path": {"type": "string", "description": "A workspace file."},
                            "glob": {"type": "string", "description": "Workspace files by glob (\"src/**/*.rs\"): a dict of path -> text."},
                            "ref": {"type": "string", "description": "A spilled tool result's ref (from a truncation marker)."},
                            "text": {"type": "string", "description": "Text given inline (e.g. fetched content)."}
                        },
                        "required": ["name"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["task", "inputs"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        // It reads workspace files and starts the REPL; no code of the model's runs yet.
        Capability::ReadOnly
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let shared = &self.0;
        let task = args["task"].as_str().unwrap_or_default().to_string();
        let inputs = load_inputs(ctx, &args["inputs"], shared.config.max_input_bytes).await?;
        let path = shared
            .config
            .python_path
            .clone()
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let python = find_python(&path).ok_or_else(repl::missing_python)?;
        // Closing the previous session first frees its memory before the next one loads.
        let previous = shared.take(ctx).map(|o| o.id.clone());
        let start = async {
            let mut repl = repl::Repl::start(
                ctx,
                &python,
                shared.config.memory_bytes,
                shared.config.max_batch,
            )
            .await?;
            for input in &inputs {
                repl.load(&input.name, &input.value, input.meta.clone())
                    .await
                    .map_err(|e| repl_refusal(&e, LOADING))?;
            }
            Ok::<_, Refusal>(repl)
        };
        let repl = tokio::select! {
            r = start => r?,
            () = ctx.cancel.cancelled() => return Err(codesmith_tools::cancelled("rlm", None)),
        };
        let id = {
            let mut n = shared.serial.lock().unwrap_or_else(PoisonError::into_inner);
            *n += 1;
            format!("rlm-{n}")
        };
        let confinement = if ctx.sandbox.backend.isolates() {
            "no network"
        } else {
            "NOT isolated: the backend runs it with the user's own access"
        };
        let mut text = format!(
            "RLM session {id} is open: Python REPL ({}) in the sandbox \"{}\", {confinement}; \
             depth budget {}.\nTask: {task}\nInputs (REPL variables; their text is not shown \
             here):\n",
            python.display(),
            ctx.sandbox.backend.name(),
            shared.config.depth,
        );
        for input in &inputs {
            text.push_str(&format!("- {}: {}\n", input.name, input.summary));
        }
        text.push_str(&format!(
            "Next: call rlm_exec with Python; print small summaries only (output over {} \
             characters is cut); call final(answer) when you have the answer.",
            shared.config.output_cap
        ));
        shared.put(
            ctx,
            Open {
                id: id.clone(),
                repl,
                opened: Instant::now(),
                rounds: 0,
                child_calls: 0,
            },
        );
        let mut out = ToolOutput::new(text).with("session", id);
        if let Some(previous) = previous {
            out = out.with("closed_session", previous);
        }
        Ok(out)
    }

    fn task_ended(&self, ctx: &ToolContext) {
        drop(self.0.take(ctx));
    }
}

#[async_trait]
impl Tool for RlmExec {
    fn name(&self) -> &'static str {
        "rlm_exec"
    }

    fn description(&self) -> &'static str {
        EXEC_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python to run in the session's REPL."}
            },
            "required": ["code"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let shared = &self.0;
        let Some(code) = args["code"].as_str() else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                "rlm_exec needs `code`, the Python to run.",
                "Pass {\"code\": \"print(len(log))\"}.",
            ));
        };
        let Some(mut open) = shared.take(ctx) else {
            return Err(Refusal::new(
                ErrorCode::NotFound,
                "No RLM session is open (it was never opened, ended with final(), hit a \
                 limit, or the task ended).",
                "Open one with rlm {\"task\": ..., \"inputs\": [...]} first.",
            ));
        };
        let config = &shared.config;
        let session_left = config.session_timeout.saturating_sub(open.opened.elapsed());
        if session_left.is_zero() {
            return Err(session_expired(&open.id, config.session_timeout));
        }
        let limit = config.round_timeout.min(session_left);
        let env = round::RoundEnv {
            ctx: ctx.clone(),
            child: shared.child.clone(),
            config: config.clone(),
            python: open.repl.python.clone(),
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, round::run_round(&env, &mut open.repl, code, config.depth)) => r,
            () = ctx.cancel.cancelled() => {
                let id = open.id.clone();
                drop(open);
                return Err(codesmith_tools::cancelled("rlm_exec", Some(started.elapsed()))
                    .with("session", id)
                    .with("session_closed", true));
            }
        };
        let round = match outcome {
            Err(_) => {
                let id = open.id.clone();
                drop(open);
                let (what, cap) = if limit < config.round_timeout {
                    ("session", config.session_timeout)
                } else {
                    ("round", config.round_timeout)
                };
                return Err(Refusal::new(
                    ErrorCode::Timeout,
                    format!(
                        "The round ran out of time: the {what} limit is {} s. The REPL was \
                         killed and session {id} is closed.",
                        cap.as_secs_f64()
                    ),
                    "Open a new session and do less per round (work on chunks, fewer child \
                     calls), or tell the user.",
                )
                .with("session", id)
                .with("session_closed", true));
            }
            Ok(Err(e)) => {
                let id = open.id.clone();
                drop(open);
                return Err(repl_refusal(&e, "the round")
                    .with("session", id)
                    .with("session_closed", true));
            }
            Ok(Ok(round)) => round,
        };
        open.rounds += 1;
        open.child_calls += round.child_calls;
        let mut text = if round.output.is_empty() {
            "(nothing printed)".to_string()
        } else {
            // Screened before it is cut, so an escape sequence split by the cut cannot
            // swallow the marker.
            cap_text(
                &codesmith_policy::screen_text(&round.output),
                config.output_cap,
            )
        };
        let mut out_meta = Vec::new();
        if round.output_chars as usize > config.output_cap {
            let reference = codesmith_tools::spill::write_spill(&ctx.home, &round.output).ok();
            text.push_str(&format!(
                "\n[{} characters printed; the whole output is in the REPL variable \
                 last_output{}. Print less: a count, a slice, the top N.]",
                round.output_chars,
                match &reference {
                    Some(r) => format!(" and saved: retrieve_tool_result {{\"ref\": \"{r}\"}}"),
                    None => String::new(),
                }
            ));
            if let Some(r) = reference {
                out_meta.push(("ref", Value::String(r)));
            }
        }
        if let Some(err) = &round.error {
            text.push_str("\nError (the round raised; variables set before it are kept):\n");
            text.push_str(&repl::report(err));
        }
        let id = open.id.clone();
        let mut out = if let Some(answer) = round.final_answer {
            drop(open);
            ToolOutput::new(format!(
                "{text}\nFinal answer (session {id} is closed):\n{}",
                cap_text(&codesmith_policy::screen_text(&answer), 8_000)
            ))
            .with("session_closed", true)
        } else {
            let rounds = open.rounds;
            shared.put(ctx, open);
            ToolOutput::new(text).with("round", rounds)
        };
        out = out
            .with("session", id)
            .with("child_calls", round.child_calls);
        for (k, v) in out_meta {
            out = out.with(k, v);
        }
        Ok(out.with("elapsed_ms", started.elapsed().as_millis() as u64))
    }
}

fn session_expired(id: &str, limit: Duration) -> Refusal {
    Refusal::new(
        ErrorCode::Timeout,
        format!(
            "RLM session {id} reached its time limit of {} s and is closed.",
            limit.as_secs_f64()
        ),
        "Open a new session if the work is not done, doing more per round.",
    )
    .with("session", id)
    .with("session_closed", true)
}

/// What [`repl_refusal`] says the REPL was doing when it failed while loading the inputs.
const LOADING: &str = "loading the inputs";

fn repl_refusal(e: &repl::ReplError, during: &str) -> Refusal {
    let memory = matches!(e, repl::ReplError::Exited(t) if t.contains("MemoryError"));
    Refusal::new(
        ErrorCode::ToolError,
        format!("The Python REPL failed during {during}: {e}. The session is closed."),
        if memory && during == LOADING {
            "The inputs do not fit in the REPL's memory limit: load fewer or smaller inputs \
             (one file, a narrower glob), or tell the user the limit is too small."
        } else if memory {
            "It ran out of its memory limit: open a new session and work on chunks instead of \
             copies of the whole input."
        } else {
            "Open a new session; if it fails again, tell the user."
        },
    )
}

/// One input, loaded.
struct Input {
    name: String,
    value: Value,
    meta: Value,
    summary: String,
}

/// Names the REPL already uses.
const RESERVED: &[&str] = &[
    "peek",
    "grep",
    "chunks",
    "llm",
    "llm_batch",
    "rlm_query",
    "final",
    "inputs",
    "last_output",
];

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
        && !RESERVED.contains(&name)
        && !PY_KEYWORDS.contains(&name)
        && !PY_BUILTINS.contains(&name)
}

/// Python's builtin functions and types: an input of that name would hide the builtin
/// from every round (an input `print` breaks printing). Names starting with `__` are
/// refused too: they are Python's own (`__builtins__` would break every round).
const PY_BUILTINS: &[&str] = &[
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "copyright",
    "credits",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "exit",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "license",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "quit",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

fn invalid(message: String, hint: &str) -> Refusal {
    Refusal::new(ErrorCode::InvalidArguments, message, hint)
}

/// Reads every input through the workspace's path containment (or the spill directory, for
/// a `ref`), within `max_bytes` in all.
async fn load_inputs(
    ctx: &ToolContext,
    inputs: &Value,
    max_bytes: u64,
) -> Result<Vec<Input>, Refusal> {
    let Some(items) = inputs.as_array().filter(|a| !a.is_empty()) else {
        return Err(invalid(
            "rlm needs `inputs`: a non-empty list of {name, path|glob|ref|text}.".into(),
            "Pass e.g. {\"inputs\": [{\"name\": \"log\", \"path\": \"logs/app.log\"}]}.",
        ));
    };
    let mut loaded: Vec<Input> = Vec::new();
    let mut total = 0u64;
    for item in items {
        let name = item["name"].as_str().unwrap_or_default();
        if !valid_name(name) {
            return Err(invalid(
                format!(
                    "{name:?} cannot be an input name: it must be a Python identifier that is not a keyword, a Python builtin (print, len, input, ...), a name starting with `__`, or a helper ({}).",
                    RESERVED.join(", ")
                ),
                "Use a short identifier such as \"log\" or \"src\".",
            ));
        }
        if loaded.iter().any(|i| i.name == name) {
            return Err(invalid(
                format!("The input name {name:?} is given twice."),
                "Give each input its own name.",
            ));
        }
        let sources: Vec<&str> = ["path", "glob", "ref", "text"]
            .into_iter()
            .filter(|k| item.get(*k).is_some())
            .collect();
        let [source] = sources[..] else {
            return Err(invalid(
                format!(
                    "The input {name:?} must name exactly one of path, glob, ref or text; it names {}.",
                    if sources.is_empty() {
                        "none".to_string()
                    } else {
                        sources.join(" and ")
                    }
                ),
                "Give one source per input, e.g. {\"name\": \"log\", \"path\": \"logs/app.log\"}.",
            ));
        };
        let Some(arg) = item[source].as_str() else {
            return Err(invalid(
                format!(
                    "The {source} of the input {name:?} must be a string; it is {}.",
                    crate::dispatch::kind_of(&item[source])
                ),
                "Give e.g. {\"name\": \"log\", \"path\": \"logs/app.log\"}.",
            ));
        };
        let (value, meta, summary, bytes) = match source {
            "path" => {
                let text = read_workspace_file(ctx, arg, max_bytes - total).await?;
                let (meta, summary) = describe_text("file", arg, &text);
                let bytes = text.len() as u64;
                (Value::String(text), meta, summary, bytes)
            }
            "ref" => {
                if !codesmith_tools::spill::is_safe_ref(arg) {
                    return Err(invalid(
                        format!("{arg:?} is not a spill ref."),
                        "Copy the ref exactly as the truncation marker gives it.",
                    ));
                }
                let path = codesmith_tools::spill::spill_dir(&ctx.home).join(arg);
                let bytes = tokio::fs::read(&path).await.map_err(|_| {
                    Refusal::new(
                        ErrorCode::NotFound,
                        format!("No saved output named {arg}."),
                        "Saved outputs are kept for 7 days; rerun the command if it is gone.",
                    )
                })?;
                if bytes.len() as u64 > max_bytes - total {
                    return Err(too_large(max_bytes));
                }
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let (meta, summary) = describe_text("spilled result", arg, &text);
                let n = text.len() as u64;
                (Value::String(text), meta, summary, n)
            }
            "text" => {
                let text = arg.to_string();
                let (meta, summary) = describe_text("text", "inline", &text);
                let n = text.len() as u64;
                (Value::String(text), meta, summary, n)
            }
            _ => {
                let files = codesmith_tools::search::glob_paths(ctx, arg, MAX_GLOB_FILES).await?;
                let mut map = serde_json::Map::new();
                let mut n = 0u64;
                for rel in &files {
                    let text = read_workspace_file(ctx, rel, max_bytes - total - n).await?;
                    n += text.len() as u64;
                    map.insert(rel.clone(), Value::String(text));
                }
                let shown: Vec<&String> = files.iter().take(5).collect();
                let meta = json!({"kind": "glob", "source": arg, "files": files.len(), "bytes": n});
                let summary = format!(
                    "glob {arg:?}, {} files, {n} bytes (a dict path -> text); first: {shown:?}",
                    files.len()
                );
                (Value::Object(map), meta, summary, n)
            }
        };
        total += bytes;
        if total > max_bytes {
            return Err(too_large(max_bytes));
        }
        loaded.push(Input {
            name: name.to_string(),
            value,
            meta,
            summary,
        });
    }
    Ok(loaded)
}

fn too_large(max: u64) -> Refusal {
    Refusal::new(
        ErrorCode::TooLarge,
        format!("The inputs come to more than {max} bytes, the most one RLM session loads."),
        "Load fewer or smaller inputs (a narrower glob, one file at a time).",
    )
}

/// Reads a workspace file below the held workspace handle, at most `room` bytes.
async fn read_workspace_file(ctx: &ToolContext, rel: &str, room: u64) -> Result<String, Refusal> {
    use std::io::Read;
    let resolved = ctx.resolve(rel)?;
    if !resolved.exists {
        return Err(Refusal::new(
            ErrorCode::NotFound,
            format!("There is no file {:?} in the workspace.", resolved.rel),
            "Check the path with list_dir or file_search.",
        ));
    }
    tokio::task::spawn_blocking(move || {
        let file = resolved.open_read().map_err(|_| {
            Refusal::new(
                ErrorCode::NotFound,
                format!("{:?} cannot be read as a file.", resolved.rel),
                "Name a regular file inside the workspace.",
            )
        })?;
        let mut bytes = Vec::new();
        file.take(room.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|_| Refusal::internal())?;
        if bytes.len() as u64 > room {
            return Err(too_large(room));
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    })
    .await
    .map_err(|_| Refusal::internal())?
}

/// The metadata the model sees of one text input.
fn describe_text(kind: &str, source: &str, text: &str) -> (Value, String) {
    let chars = text.chars().count();
    let lines = text.lines().count();
    let preview: String = text.chars().take(PREVIEW_CHARS).collect();
    let preview = codesmith_policy::screen_text(&preview).into_owned();
    let meta = json!({"kind": kind, "source": source, "bytes": text.len(), "chars": chars, "lines": lines});
    let summary = format!(
        "{kind} {source:?}, {} bytes, {chars} characters, {lines} lines; starts {preview:?}",
        text.len()
    );
    (meta, summary)
}
