//! Background shell tasks: `task_shell_start`, `task_shell_poll`, `task_shell_cancel`.
//!
//! A task runs `bash -c` under the sandbox in the session directory (a `cd` inside it is
//! not adopted). Each poll returns the status and the output produced since the previous
//! poll. Output is spilled only by the poll (or cancel) that observes the final state
//! (running polls never spill, so disk churn stays O(bytes)). Drift reminders are
//! probed only then, too.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::exec::command_arg;
use super::process::{self, Running};
use super::{drift, network, scope_for};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Most tasks running at once per session.
pub const MAX_RUNNING_TASKS: usize = 8;
/// Most tasks remembered per session (finished ones are forgotten oldest first).
const MAX_REMEMBERED_TASKS: usize = 64;
/// Longest `wait_secs` a poll accepts.
const MAX_POLL_WAIT_SECS: u64 = 60;
/// How long output pipes are drained once the task's shell has exited.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Exited(i32),
    Cancelled,
    /// bubblewrap could not set the sandbox up: the command never ran (see `failure`).
    SandboxFailed,
}

#[derive(Debug)]
struct Task {
    command: String,
    running: Running,
    cursor: usize,
    state: State,
    /// True once the final state has been reported (spill and drift already done).
    reported_final: bool,
    /// What cancelling killed ("3 processes (bash, sleep, node)").
    killed: String,
    /// Processes the task's shell left running when it exited (killed then).
    leftovers: usize,
    /// Why the sandbox could not be set up, for [`State::SandboxFailed`].
    failure: Option<crate::sandbox::SetupFailure>,
}

impl Drop for Task {
    fn drop(&mut self) {
        if self.state == State::Running {
            self.running.kill_tree();
        }
    }
}

impl super::table::Entry for Task {
    fn is_running(&self) -> bool {
        self.state == State::Running
    }
}

/// The background tasks of one session. Dropping the table kills every task still running.
#[derive(Debug)]
pub struct TaskTable(super::table::Table<Task>);

impl Default for TaskTable {
    fn default() -> Self {
        TaskTable(super::table::Table::new("task-", MAX_REMEMBERED_TASKS))
    }
}

impl TaskTable {
    fn get(&self, id: &str) -> Option<Arc<tokio::sync::Mutex<Task>>> {
        self.0.get(id)
    }

    fn running_count(&self) -> usize {
        self.0.running_count()
    }

    fn insert(&self, task: Task) -> String {
        self.0.insert(task)
    }
}

fn unknown_task(id: &str) -> Refusal {
    Refusal::new(
        ErrorCode::NotFound,
        format!("There is no background task {id:?} in this session."),
        "Use the id task_shell_start returned (e.g. \"task-1\"); tasks do not survive the session.",
    )
    .with("id", id)
}

fn id_arg(args: &Value) -> Result<&str, Refusal> {
    args.get("id").and_then(Value::as_str).ok_or_else(|| {
        Refusal::new(
            ErrorCode::InvalidArguments,
            "The \"id\" argument is missing.",
            "Pass the id task_shell_start returned, e.g. {\"id\": \"task-1\"}.",
        )
    })
}

/// `task_shell_start {command, cwd?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskShellStart;

const START_DESCRIPTION: &str = "Start a shell command in the background (bash, in the \
session's working directory, same sandbox as exec_shell) and return its id at once. Use this \
instead of exec_shell with `&` or `nohup` for servers, watchers and builds that outlive one call; \
then read its output with task_shell_poll and stop it with task_shell_cancel. At most 8 tasks \
run at once. Examples: {\"command\": \"npm run dev\"}; {\"command\": \"cargo test --workspace\", \
\"cwd\": \"backend\"}.";

#[async_trait]
impl Tool for TaskShellStart {
    fn name(&self) -> &'static str {
        "task_shell_start"
    }

    fn description(&self) -> &'static str {
        START_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line to run in the background."},
                "cwd": {"type": "string", "description": "Workspace-relative directory to start in (default: the session directory)."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let command = command_arg(&args)?;
        let start = super::exec::start_dir(ctx, args.get("cwd"))?;
        if ctx.shell.tasks.running_count() >= MAX_RUNNING_TASKS {
            return Err(Refusal::new(
                ErrorCode::TooLarge,
                format!("{MAX_RUNNING_TASKS} background tasks are already running."),
                "Cancel one with task_shell_cancel, or wait for one to finish, then start again.",
            ));
        }
        let script = format!("exec 2>&1\n{command}\n");
        let scope = scope_for(ctx, &start)?;
        let running = process::spawn(&ctx.sandbox, &scope, &script, &start)
            .map_err(|e| process::start_refused(&e))?;
        let id = ctx.shell.tasks.insert(Task {
            command: command.to_string(),
            running,
            cursor: 0,
            state: State::Running,
            reported_final: false,
            killed: String::new(),
            leftovers: 0,
            failure: None,
        });
        Ok(ToolOutput::new(format!(
            "Started background task {id}. Call task_shell_poll {{\"id\": \"{id}\"}} for its output."
        ))
        .with("id", id)
        .with("status", "running"))
    }
}

/// `task_shell_poll {id, wait_secs?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskShellPoll;

const POLL_DESCRIPTION: &str = "Get the status of a background task (running, exited with a \
code, or cancelled) and the output it produced since the previous poll. Pass wait_secs to wait \
up to that long (max 60) for the task to finish instead of polling in a tight loop. Examples: \
{\"id\": \"task-1\"}; {\"id\": \"task-1\", \"wait_secs\": 30}.";

#[async_trait]
impl Tool for TaskShellPoll {
    fn name(&self) -> &'static str {
        "task_shell_poll"
    }

    fn description(&self) -> &'static str {
        POLL_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id task_shell_start returned."},
                "wait_secs": {"type": "integer", "minimum": 0, "maximum": MAX_POLL_WAIT_SECS, "description": "Seconds to wait for the task to finish (default 0)."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let id = id_arg(&args)?;
        let task = ctx.shell.tasks.get(id).ok_or_else(|| unknown_task(id))?;
        let wait = args
            .get("wait_secs")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_POLL_WAIT_SECS);
        let mut task = task.lock().await;
        if task.state == State::Running {
            // A cancelled poll stops waiting; the task itself keeps running.
            let status = if wait > 0 {
                task.running
                    .wait_or_cancel(Duration::from_secs(wait), &ctx.cancel)
                    .await
                    .ok()
                    .flatten()
            } else {
                task.running.try_status()
            };
            if let Some(status) = status {
                task.running.drain(DRAIN_GRACE).await;
                task.leftovers = task.running.kill_tree().killed.len();
                let (full, _) = process::lock(&task.running.output).text_from(0, true);
                task.failure = task.running.setup_failure(status, &full);
                task.state = match task.failure {
                    Some(_) => State::SandboxFailed,
                    None => State::Exited(process::exit_code(status)),
                };
            }
        }
        if let Some(failure) = &task.failure {
            return Err(failure.refusal().with("id", id));
        }
        Ok(report(ctx, id, &mut task))
    }
}

/// `task_shell_cancel {id}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskShellCancel;

const CANCEL_DESCRIPTION: &str = "Stop a background task: everything it started is killed. \
Returns the output produced since the last poll. Cancelling a finished task just reports its \
final state. Example: {\"id\": \"task-1\"}.";

#[async_trait]
impl Tool for TaskShellCancel {
    fn name(&self) -> &'static str {
        "task_shell_cancel"
    }

    fn description(&self) -> &'static str {
        CANCEL_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id task_shell_start returned."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let id = id_arg(&args)?;
        let task = ctx.shell.tasks.get(id).ok_or_else(|| unknown_task(id))?;
        let mut task = task.lock().await;
        if task.state == State::Running {
            let report = task.running.kill_tree();
            let _ = task.running.wait_for(Duration::from_secs(2)).await;
            task.running.drain(DRAIN_GRACE).await;
            task.killed = report.describe();
            task.state = State::Cancelled;
        }
        Ok(report(ctx, id, &mut task))
    }
}

/// The status and new output of `task`; on the first observation of a final state, spills
/// and probes for drift.
fn report(ctx: &ToolContext, id: &str, task: &mut Task) -> ToolOutput {
    let finished = task.state != State::Running;
    let first_final = finished && !task.reported_final;
    // Polling is never approved by a person: credentials in the output are masked.
    let (capped, reference) = process::read_new(
        &ctx.home,
        &task.running.output,
        &mut task.cursor,
        finished,
        first_final,
    );
    let mut body = capped.text;
    let mut out = ToolOutput::default().with("id", id);
    match task.state {
        State::Running => out = out.with("status", "running"),
        State::Exited(code) => out = out.with("status", "exited").with("exit_code", code),
        State::Cancelled => {
            out = out
                .with("status", "cancelled")
                .with("killed", task.killed.clone())
        }
        State::SandboxFailed => out = out.with("status", "sandbox_failed"),
    }
    if task.leftovers > 0 {
        out = out.with("killed_leftovers", task.leftovers);
    }
    if first_final {
        task.reported_final = true;
        let mut notes = String::new();
        if let State::Exited(code) = task.state {
            let (full, _) = process::lock(&task.running.output).text_from(0, true);
            let blocked = network::blocked_by_policy(
                ctx.sandbox.network_blocked(),
                &task.command,
                &ctx.workspace,
                &full,
            );
            if code != 0 && blocked {
                notes.push_str(network::NETWORK_BLOCKED_NOTE);
                notes.push('\n');
            }
            if code == 0 {
                let drifts = ctx
                    .shell
                    .drift
                    .probe(&ctx.workspace, &drift::tracked_reads(ctx));
                notes.push_str(&drift::reminder_text(&drifts));
            }
        }
        if !notes.is_empty() {
            if !body.is_empty() && !body.ends_with('\n') {
                body.push('\n');
            }
            body.push_str(&notes);
        }
    }
    if capped.omitted > 0 {
        out = out
            .with("truncated", true)
            .with("omitted_bytes", capped.omitted);
    }
    if let Some(r) = reference {
        out = out.with("ref", r);
    }
    out = out.with(
        "duration_ms",
        task.running.started.elapsed().as_millis() as u64,
    );
    out.output = Value::String(body);
    out
}
