//! `exec_shell`: one foreground command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::process::{self, Running};
use super::wrap::{self, CwdChange};
use super::{drift, network, rel, scope_for};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput, spill};

/// Default timeout in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Largest accepted timeout in seconds (larger values are clamped).
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// How long output pipes held open by leftover background processes are waited for.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// `exec_shell {command, timeout_secs?, cwd?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecShell;

const DESCRIPTION: &str = "Run one shell command with bash in the session's working \
directory and return its exit code and combined stdout+stderr. Each call is a fresh process: \
a `cd` carries over to the next call (when it stays inside the workspace), environment \
variables do not, so repeat `export`/`source` lines in the same command. Default timeout 120 \
s (max 600); on timeout everything the command started is killed, and so is anything \
it leaves running in the background when it ends. Output over 30,000 bytes keeps the \
first 22,000 and last 8,000 bytes; the full text can be paged with retrieve_tool_result. For \
servers, watchers and other long jobs use task_shell_start instead. Use read_file instead of \
cat/head/tail/sed -n, edit_file instead of sed -i, write_file instead of heredocs, grep_files \
instead of grep -r, file_search/list_dir instead of find/ls -R, and fetch_url instead of \
curl/wget. Examples: {\"command\": \"cargo test -p core 2>&1 | tail -50\"}; {\"command\": \
\"cd crates/core && cargo build\", \"timeout_secs\": 300}; {\"command\": \"ls\", \"cwd\": \
\"docs\"}.";

#[async_trait]
impl Tool for ExecShell {
    fn name(&self) -> &'static str {
        "exec_shell"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line to run."},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS, "description": "Seconds before the command is killed (default 120, max 600)."},
                "cwd": {"type": "string", "description": "Workspace-relative directory to run in for this call only (default: the session directory)."}
            },
            "required": ["command"],
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
        let command = command_arg(&args)?;
        let timeout = timeout_arg(&args)?;
        let start_dir = start_dir(ctx, args.get("cwd"))?;
        run(ctx, command, &start_dir, timeout).await
    }
}

/// The required, non-empty `command` argument.
pub(crate) fn command_arg(args: &Value) -> Result<&str, Refusal> {
    match args.get("command").and_then(Value::as_str) {
        Some(c) if !c.trim().is_empty() => Ok(c),
        _ => Err(Refusal::new(
            ErrorCode::InvalidArguments,
            "The \"command\" argument is missing or empty.",
            "Pass the command line as a string, e.g. {\"command\": \"cargo build\"}.",
        )),
    }
}

fn timeout_arg(args: &Value) -> Result<Duration, Refusal> {
    let secs = match args.get("timeout_secs") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
        Some(v) => match v.as_u64() {
            Some(s) if s >= 1 => s.min(MAX_TIMEOUT_SECS),
            _ => {
                return Err(Refusal::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "timeout_secs must be a whole number of seconds from 1 to 600, not {v}."
                    ),
                    "Omit it for the 120 s default, or pass e.g. {\"timeout_secs\": 300}.",
                ));
            }
        },
    };
    Ok(Duration::from_secs(secs))
}

/// The directory a shell call (`exec_shell`, `task_shell_start`) starts in: its `cwd`
/// argument resolved inside the workspace (relative to the session directory), or the
/// session directory. The approval gate judges the command's relative paths from here.
///
/// # Errors
/// `NOT_FOUND` or the workspace-containment refusal when `cwd` does not resolve to a
/// directory inside the workspace.
pub fn start_dir(ctx: &ToolContext, cwd: Option<&Value>) -> Result<PathBuf, Refusal> {
    let mut session = ctx.shell.cwd(&ctx.workspace);
    if !session.is_dir() {
        // The directory a `cd` moved to was deleted since: fall back to the root.
        session = ctx.workspace.clone();
        ctx.shell.set_cwd(session.clone());
    }
    let Some(raw) = cwd.and_then(Value::as_str) else {
        return Ok(session);
    };
    let session_rel = rel(&ctx.workspace, &session);
    let joined = if Path::new(raw).is_absolute() || session_rel == "." {
        raw.to_string()
    } else {
        format!("{session_rel}/{raw}")
    };
    let resolved = ctx.resolve(&joined)?;
    if !resolved.abs.is_dir() {
        return Err(Refusal::new(
            ErrorCode::NotFound,
            format!("The directory {raw:?} does not exist."),
            "Pass an existing workspace directory, or omit cwd to use the session directory.",
        )
        .with("cwd", raw));
    }
    Ok(resolved.abs)
}

/// Runs `command` starting in `start`, enforcing `timeout`, and builds the result.
async fn run(ctx: &ToolContext, command: &str, start: &Path, timeout: Duration) -> ToolOutcome {
    let sentinel = wrap::new_sentinel();
    let script = wrap::wrap_script(command, &sentinel);
    let scope = scope_for(ctx, start)?;
    let run_later = super::run_later::RunLaterGuard::before(&ctx.workspace, start);
    // A sandbox that could not be set up ran nothing: a passing shortage is tried once more,
    // and any such failure is reported as the sandbox's, never as the command's exit code.
    let mut tries = 0;
    let (running, status, complete, leftovers, raw) = loop {
        tries += 1;
        let mut running = process::spawn(&ctx.sandbox, &scope, &script, start)
            .map_err(|e| process::start_refused(&e))?;
        let waited = match ctx.live_output.clone() {
            Some(live) => {
                let watch =
                    super::live::watch(running.output.clone(), live, sentinel.clone(), |t| {
                        shown_output(ctx, t)
                    });
                tokio::select! {
                    status = running.wait_or_cancel(timeout, &ctx.cancel) => status,
                    never = watch => match never {},
                }
            }
            None => running.wait_or_cancel(timeout, &ctx.cancel).await,
        };
        let status = match waited {
            Ok(Some(status)) => status,
            Ok(None) => {
                let refusal = stopped(ctx, &mut running, &sentinel, Some(timeout)).await;
                return Err(undo_run_later(ctx, &run_later, refusal));
            }
            Err(process::Cancelled) => {
                let refusal = stopped(ctx, &mut running, &sentinel, None).await;
                return Err(undo_run_later(ctx, &run_later, refusal));
            }
        };
        let mut complete = running.drain(DRAIN_GRACE).await;
        // Nothing outlives its command: what it left running in the background is killed now.
        let leftovers = running.kill_tree();
        if !complete && !leftovers.killed.is_empty() {
            complete = running.drain(DRAIN_GRACE).await;
        }
        let (raw, _) = process::lock(&running.output).text_from(0, true);
        match running.setup_failure(status, &raw) {
            None => break (running, status, complete, leftovers, raw),
            Some(failure) if failure.transient && tries < 2 => continue,
            Some(failure) => return Err(undo_run_later(ctx, &run_later, failure.refusal())),
        }
    };
    let (text, reported) = wrap::split_sentinel(&raw, &sentinel);
    let text = shown_output(ctx, text);
    let exit_code = process::exit_code(status);
    let elapsed = running.started.elapsed();

    let mut notes = String::new();
    let mut out = ToolOutput::default();
    let written = run_later.finish(ctx.keep_run_later);
    notes.push_str(&super::run_later::note(&written, ctx.keep_run_later));
    if !written.is_empty() {
        out = out.with(
            "runs_later_written",
            written
                .iter()
                .map(|w| format!("{} ({})", w.path, w.program))
                .collect::<Vec<_>>(),
        );
    }
    match wrap::adopt(&ctx.workspace, start, reported.as_deref()) {
        CwdChange::Unchanged => {}
        CwdChange::Adopted(dir) => {
            let r = rel(&ctx.workspace, &dir);
            notes.push_str(&format!("[Working directory is now {r}.]\n"));
            out = out.with("cwd", r);
            ctx.shell.set_cwd(dir);
        }
        CwdChange::Refused(dir) => {
            let stays = rel(&ctx.workspace, &ctx.shell.cwd(&ctx.workspace));
            let stays = if stays == "." {
                "the workspace root".to_string()
            } else {
                stays
            };
            notes.push_str(&format!(
                "[The command ended in {dir}, outside the workspace; the working directory stays \
                 {stays}.]\n"
            ));
        }
    }
    if !leftovers.killed.is_empty() {
        notes.push_str(&format!(
            "[The command left {} running in the background; killed when it ended. Use \
             task_shell_start for processes that should keep running.]\n",
            leftovers.describe()
        ));
        out = out.with("killed_leftovers", leftovers.killed.len());
    }
    if !complete {
        notes.push_str(
            "[A background process still holds the output open; later output is not shown. Use \
             task_shell_start for long-running processes.]\n",
        );
    }
    if exit_code != 0
        && network::blocked_by_policy(
            ctx.sandbox.network_blocked(),
            command,
            &ctx.workspace,
            &text,
        )
    {
        notes.push_str(network::NETWORK_BLOCKED_NOTE);
        notes.push('\n');
        out = out.with("network_blocked", true);
    }
    if exit_code == 0 {
        let drifts = ctx
            .shell
            .drift
            .probe(&ctx.workspace, &drift::tracked_reads(ctx));
        notes.push_str(&drift::reminder_text(&drifts));
    }
    let (capped, reference) = spill::cap_output(&ctx.home, &text, Some(&text));
    let mut body = capped.text;
    if !notes.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(&notes);
    }
    out.output = Value::String(body);
    out = out
        .with("exit_code", exit_code)
        .with("duration_ms", elapsed.as_millis() as u64);
    if capped.omitted > 0 {
        out = out
            .with("truncated", true)
            .with("omitted_bytes", capped.omitted);
    }
    if let Some(r) = reference {
        out = out.with("ref", r);
    }
    Ok(out)
}

/// A command's output as the model may see it: with credentials masked by the one
/// scrubber ([`codesmith_policy::scrub_secrets`]: URL userinfo as `git remote -v` and `git
/// config --list` print it, `extraheader` and `Authorization` values, token shapes, values
/// of secret-named settings, private key bodies), unless a person approved this very
/// command ([`ToolContext::person_approved`]).
fn shown_output(ctx: &ToolContext, text: String) -> String {
    if ctx.person_approved {
        return text;
    }
    match codesmith_policy::scrub_secrets(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(masked) => masked,
    }
}

/// A stopped command's run-later files are judged like a finished one's (see
/// `super::run_later`); the refusal's details name them.
fn undo_run_later(
    ctx: &ToolContext,
    guard: &super::run_later::RunLaterGuard,
    refusal: Refusal,
) -> Refusal {
    let written = guard.finish(ctx.keep_run_later);
    if written.is_empty() {
        return refusal;
    }
    refusal.with(
        "runs_later_written",
        super::run_later::note(&written, ctx.keep_run_later).trim(),
    )
}

/// Kills the command's whole tree after its timeout (`Some`) or a cancellation (`None`)
/// and builds the `TIMEOUT` or `CANCELLED` refusal: how long it ran, what was killed, and
/// the output so far.
async fn stopped(
    ctx: &ToolContext,
    running: &mut Running,
    sentinel: &str,
    timeout: Option<Duration>,
) -> Refusal {
    let ran = running.started.elapsed();
    let report = running.kill_tree();
    let _ = running.wait_for(Duration::from_secs(2)).await;
    running.drain(DRAIN_GRACE).await;
    let (raw, _) = process::lock(&running.output).text_from(0, true);
    let (text, _) = wrap::split_sentinel(&raw, sentinel);
    let text = shown_output(ctx, text);
    let (capped, reference) = spill::cap_output(&ctx.home, &text, Some(&text));
    let mut killed = format!("killed {}", report.describe());
    if !report.survivors.is_empty() {
        let names: Vec<&str> = report.survivors.values().map(String::as_str).collect();
        killed.push_str(&format!(
            "; {} could not be killed ({})",
            names.len(),
            names.join(", ")
        ));
    }
    let mut refusal = match timeout {
        Some(timeout) => {
            let secs = timeout.as_secs();
            Refusal::new(
                ErrorCode::Timeout,
                format!(
                    "The command ran for {:.1} s and was stopped at its {secs} s timeout: \
                     {killed}. Its output so far is in details.output.",
                    ran.as_secs_f64()
                ),
                "Raise timeout_secs (max 600), narrow the command, or run it with \
                 task_shell_start and poll it.",
            )
            .with("timeout_secs", secs)
        }
        None => Refusal::new(
            ErrorCode::Cancelled,
            format!(
                "The command was cancelled after {:.1} s: {killed}. Its output so far is in \
                 details.output.",
                ran.as_secs_f64()
            ),
            "Check what it changed before running it again.",
        ),
    }
    .with("elapsed_ms", ran.as_millis() as u64)
    .with(
        "killed",
        report.killed.values().cloned().collect::<Vec<String>>(),
    )
    .with("output", capped.text);
    if !report.survivors.is_empty() {
        refusal = refusal.with("survivors", report.survivors.len());
    }
    if let Some(r) = reference {
        refusal = refusal.with("ref", r);
    }
    refusal
}
