//! Where a session runs the user's hooks (the mechanism is [`codesmith_tools::hooks`]).
//!
//! `PreToolUse` runs in dispatch after a call's arguments are checked and before the
//! approval gate: a block answers the call with the hook's reason and nothing runs; a hook
//! can never widen what the gate allows (its `approve` is no objection, not an approval).
//! `PostToolUse` runs after a call, with its result; exit 2 appends the hook's reason to
//! the result the model reads. `UserPromptSubmit` and `SessionStart` run before a task's
//! text reaches the model (context they print joins the task's message; a prompt hook
//! may block the task), and `Stop` when the model ends its turn (a block sends it back to
//! work with the reason, at most [`MAX_STOP_CONTINUATIONS`] times per task). The
//! foreground agent runs all of them; a subagent runs only the tool hooks, so a policy
//! hook holds for every call whoever makes it. A hook's warning reaches the user as a
//! notice.

use std::path::PathBuf;
use std::sync::Arc;

use codesmith_protocol::{Event, EventSink};
use codesmith_tools::hooks::{HookEvent, HookOutcome, Hooks, run_hook};
use codesmith_tools::{ErrorCode, Refusal, ToolOutcome, envelope_json};
use serde_json::{Map, Value, json};

/// How often `Stop` hooks may send the model back to work within one task.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// The session's hooks with what their input names: the session, its transcript, the
/// workspace.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookSite {
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) session_id: String,
    pub(crate) transcript: PathBuf,
    pub(crate) workspace: PathBuf,
}

/// What the hooks of one event said together.
#[derive(Debug, Default)]
pub(crate) struct Said {
    /// The first block's reason and the hook that said it; later hooks do not run.
    pub(crate) block: Option<(String, String)>,
    /// Context lines, in hook order.
    pub(crate) context: Vec<String>,
}

impl HookSite {
    /// Runs the hooks of `event` (for `tool` when it is a tool event) with `fields` added
    /// to the common input, one after another until one blocks.
    pub(crate) async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: Map<String, Value>,
        sink: &mut EventSink<'_>,
    ) -> Said {
        let mut said = Said::default();
        let hooks = self.hooks.matching(event, tool);
        if hooks.is_empty() {
            return said;
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id));
        input.insert("transcript_path".into(), json!(self.transcript));
        input.insert("cwd".into(), json!(self.workspace));
        input.insert("hook_event_name".into(), json!(event.as_str()));
        input.extend(fields);
        let input = Value::Object(input);
        for hook in hooks {
            match run_hook(hook, &input, &self.workspace).await {
                HookOutcome::Continue { context, .. } => said.context.extend(context),
                HookOutcome::Block { reason } => {
                    said.block = Some((reason, hook.label()));
                    break;
                }
                HookOutcome::Warn { message } => sink(Event::Notice { message }),
            }
        }
        said
    }

    /// `PreToolUse`: the refusal that answers the call when a hook blocks it.
    pub(crate) async fn pre_tool_use(
        &self,
        tool: &str,
        args: &Value,
        sink: &mut EventSink<'_>,
    ) -> Option<Refusal> {
        let fields = object(json!({"tool_name": tool, "tool_input": args}));
        let (reason, hook) = self
            .run(HookEvent::PreToolUse, Some(tool), fields, sink)
            .await
            .block?;
        Some(
            Refusal::new(
                ErrorCode::Denied,
                format!(
                    "A PreToolUse hook of the user blocked this call; it was NOT run: {reason}"
                ),
                "Do not send the same call again and do not work around the hook with another \
                 tool: follow its reason, or tell the user what you needed.",
            )
            .with("executed", false)
            .with("hook", hook),
        )
    }

    /// `PostToolUse`: `outcome` with the reason of a hook that blocked appended for the
    /// model (as the result's `hook_feedback`); the call already ran.
    pub(crate) async fn post_tool_use(
        &self,
        tool: &str,
        args: &Value,
        outcome: ToolOutcome,
        sink: &mut EventSink<'_>,
    ) -> ToolOutcome {
        if self
            .hooks
            .matching(HookEvent::PostToolUse, Some(tool))
            .is_empty()
        {
            return outcome;
        }
        let fields = object(json!({
            "tool_name": tool,
            "tool_input": args,
            "tool_response": envelope_json(&outcome),
        }));
        let Some((reason, _)) = self
            .run(HookEvent::PostToolUse, Some(tool), fields, sink)
            .await
            .block
        else {
            return outcome;
        };
        let feedback = format!("A PostToolUse hook of the user says: {reason}");
        match outcome {
            Ok(out) => Ok(out.with("hook_feedback", feedback)),
            Err(refusal) => Err(refusal.with("hook_feedback", feedback)),
        }
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The text block that carries hooks' context into a task's message.
pub(crate) fn context_block(event: HookEvent, context: &[String]) -> Option<String> {
    (!context.is_empty()).then(|| {
        format!(
            "[{} hook context, from the user's own hook]\n{}",
            event.as_str(),
            context.join("\n")
        )
    })
}
