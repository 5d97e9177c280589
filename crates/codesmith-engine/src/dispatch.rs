//! Dispatch: from the model's tool calls to tool results.
//!
//! Each call passes, in order: the truncation gate → argument repair → name
//! repair → the loop guard → the user's `PreToolUse` hooks → approval → execution →
//! `PostToolUse` hooks → sanitizing and wrapping.
//! A call that needed a repair has a `[repaired]` line in its result naming
//! each slip, so the model corrects it instead of repeating it.
//! Consecutive calls of read-only tools that support parallel use, and shell
//! commands the exec policy judges read-only, run together; a call that may
//! write runs alone, after the calls before it and before the calls after it.
//! Each call's approval is settled when it is planned, in call order, before
//! its batch starts. Results always come back in the order of the calls, and
//! one failing call affects only its own result.

use std::sync::Arc;

use codesmith_protocol::{
    ArgumentsError, ArgumentsErrorKind, Event, EventSink, StopReason, ToolCall, ToolResult,
    parse_arguments,
};
use codesmith_tools::{Capability, ErrorCode, Refusal, Tool, ToolOutcome};
use serde_json::Value;

use crate::finish::finish_outcome;

use crate::approval::GateDecision;
use crate::guard::GuardVerdict;
use crate::repair::args::{RepairPolicy, repair_arguments};
use crate::repair::names::{NameResolution, resolve_tool_name};
use crate::runtime::Runtime;

/// A call ready to run: resolved tool and parsed arguments.
struct Prepared {
    call: ToolCall,
    tool: Arc<dyn Tool>,
    args: Value,
    /// The repairs its name or arguments needed, as told to the model (see [`repaired_line`]).
    repaired: Option<String>,
    /// The gate's word that it may run beside the batch's other concurrent calls.
    concurrent: bool,
    /// A person approved it (see [`GateDecision::Run`]).
    approved: bool,
    /// It runs with the network open in its sandbox (see [`GateDecision::Run`]).
    network: bool,
}

/// A call after planning: either ready to run or already answered.
enum Planned {
    Run(Prepared),
    Answered {
        call: ToolCall,
        name: String,
        outcome: ToolOutcome,
        counts: bool,
        repaired: Option<String>,
    },
}

/// Runs every call of one assistant message and returns the results in call order.
pub(crate) async fn dispatch_calls(
    rt: &mut Runtime,
    calls: Vec<(ToolCall, Option<Value>)>,
    stop: &StopReason,
    sink: &mut EventSink<'_>,
) -> Vec<ToolResult> {
    let mut results = Vec::with_capacity(calls.len());
    let mut batch: Vec<Prepared> = Vec::new();
    if let Some(host) = &rt.delegation {
        host.new_response();
    }
    for (call, parsed) in calls {
        if rt.ctx.cancel.is_cancelled() {
            // Interrupted: the rest is answered without planning (no approval is asked).
            flush(rt, &mut batch, &mut results, sink).await;
            let name = call.name.clone();
            sink(Event::ToolCall {
                id: call.id.clone(),
                name: name.clone(),
                arguments: arguments_for_log(&call.arguments),
            });
            let outcome = Err(codesmith_tools::cancelled(&name, None));
            let done = Finishing {
                call: &call,
                name: &name,
                label: None,
                counts: false,
                repaired: None,
            };
            results.push(finish(rt, done, outcome, sink));
            continue;
        }
        match plan(rt, call, parsed, stop, sink).await {
            Planned::Run(p) if p.concurrent => batch.push(p),
            Planned::Run(p) => {
                flush(rt, &mut batch, &mut results, sink).await;
                if writes(&p) {
                    rt.snapshots.before_write(&rt.ctx, sink).await;
                }
                rt.verify.observe(&p.call, p.tool.name(), &p.args, &rt.ctx);
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let (outcome, child) = forwarding(execute(rt, &p, tx), &mut rx, sink).await;
                let outcome = rt
                    .hooks
                    .post_tool_use(p.tool.name(), &p.args, outcome, sink)
                    .await;
                if may_change_unannounced(&p) {
                    rt.guard.after_command(&rt.ctx.workspace);
                }
                rt.delegated.extend(child);
                rt.verify.ran(&p.call.id, &outcome);
                results.push(finish_prepared(rt, &p, outcome, sink));
            }
            Planned::Answered {
                call,
                name,
                outcome,
                counts,
                repaired,
            } => {
                flush(rt, &mut batch, &mut results, sink).await;
                let done = Finishing {
                    call: &call,
                    name: &name,
                    label: None,
                    counts,
                    repaired: repaired.as_deref(),
                };
                results.push(finish(rt, done, outcome, sink));
            }
        }
    }
    flush(rt, &mut batch, &mut results, sink).await;
    results
}

/// Calls that may change the workspace: the task's snapshot is taken before the first
/// (before a `general` or `review` subagent starts, too: the parent's snapshot covers
/// what its child changes).
fn writes(p: &Prepared) -> bool {
    if let Some(kind) = crate::subagent::requested_type(p.tool.as_ref(), &p.args) {
        return !kind.read_only();
    }
    matches!(
        p.tool.capability(),
        Capability::WritesFiles | Capability::ExecutesCode
    )
}

/// Calls that may change the workspace without naming what they changed (a command, a
/// writing subagent): the loop guard fingerprints the workspace after them.
fn may_change_unannounced(p: &Prepared) -> bool {
    writes(p) && p.tool.capability() != Capability::WritesFiles
}

/// Runs one prepared call: an `agent` call starts a subagent (its events go to `tx`),
/// any other call runs through [`codesmith_tools::call_tool`].
async fn execute(
    rt: &Runtime,
    p: &Prepared,
    tx: crate::subagent::EventTx,
) -> (ToolOutcome, Option<crate::subagent::Delegated>) {
    if p.tool.name() == crate::subagent::AGENT_TOOL {
        return crate::subagent::run(rt, &p.call, &p.args, &tx).await;
    }
    // A read-only call started while the response streamed: its result, once it passed
    // every gate here with the same arguments.
    if !p.approved
        && let Some(outcome) = rt.early.take(&p.call.id, &p.args, &rt.ctx.freshness).await
    {
        return (outcome.map(|out| out.with("started_early", true)), None);
    }
    let ctx = if p.approved && p.network {
        rt.ctx.approved_by_person().with_network()
    } else if p.approved {
        rt.ctx.approved_by_person()
    } else if rt.mode == codesmith_policy::ApprovalMode::Auto {
        rt.ctx.keeping_run_later()
    } else {
        rt.ctx.as_ref().clone()
    };
    // A running command's latest output reaches the front end as it comes.
    let id = p.call.id.clone();
    let live = codesmith_tools::LiveOutput::new(move |lines| {
        let _ = tx.send(Event::ToolOutput {
            id: id.clone(),
            lines,
        });
    });
    let ctx = ctx.with_live_output(live);
    let outcome = codesmith_tools::call_tool(p.tool.as_ref(), &ctx, p.args.clone()).await;
    (outcome, None)
}

/// Awaits `work` while passing the events it sends through `rx` on to `sink`, as they
/// come; every event sent before `work` ended is delivered before this returns.
async fn forwarding<T>(
    work: impl std::future::Future<Output = T>,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
    sink: &mut EventSink<'_>,
) -> T {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            biased;
            Some(event) = rx.recv() => sink(event),
            out = &mut work => {
                while let Ok(event) = rx.try_recv() {
                    sink(event);
                }
                return out;
            }
        }
    }
}

/// Runs the pending parallel batch concurrently and appends its results in order.
async fn flush(
    rt: &mut Runtime,
    batch: &mut Vec<Prepared>,
    results: &mut Vec<ToolResult>,
    sink: &mut EventSink<'_>,
) {
    if batch.is_empty() {
        return;
    }
    for p in batch.iter() {
        rt.verify.observe(&p.call, p.tool.name(), &p.args, &rt.ctx);
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let shared: &Runtime = rt;
    let outcomes = forwarding(
        futures::future::join_all(batch.iter().map(|p| execute(shared, p, tx.clone()))),
        &mut rx,
        sink,
    )
    .await;
    drop(tx);
    for (p, (outcome, child)) in batch.drain(..).zip(outcomes) {
        let outcome = rt
            .hooks
            .post_tool_use(p.tool.name(), &p.args, outcome, sink)
            .await;
        rt.delegated.extend(child);
        rt.verify.ran(&p.call.id, &outcome);
        results.push(finish_prepared(rt, &p, outcome, sink));
    }
}

/// [`finish`] for a call that ran: network-origin tools get their label, and so does a
/// subagent's answer written after reading network content.
fn finish_prepared(
    rt: &mut Runtime,
    p: &Prepared,
    outcome: ToolOutcome,
    sink: &mut EventSink<'_>,
) -> ToolResult {
    let label = p
        .tool
        .external_label(&p.args)
        .or_else(|| crate::subagent::external_label(p.tool.name(), &outcome));
    if let Ok(out) = &outcome {
        rt.guard
            .after_poll(p.tool.name(), &p.args, &out.output.to_string());
    }
    let done = Finishing {
        call: &p.call,
        name: p.tool.name(),
        label,
        counts: true,
        repaired: p.repaired.as_deref(),
    };
    finish(rt, done, outcome, sink)
}

/// The planning pipeline for one call. Every call gets a `tool_call` event
/// (with the resolved name when there is one) before its result.
async fn plan(
    rt: &mut Runtime,
    call: ToolCall,
    parsed: Option<Value>,
    stop: &StopReason,
    sink: &mut EventSink<'_>,
) -> Planned {
    match check(rt, &call, parsed, stop) {
        Ok((tool, args, repaired)) => {
            sink(Event::ToolCall {
                id: call.id.clone(),
                name: tool.name().to_string(),
                arguments: args.clone(),
            });
            let refused = if let GuardVerdict::Blocked(why) =
                rt.guard.check(tool.name(), &args, &rt.ctx.workspace)
            {
                Some(Refusal::new(
                    ErrorCode::Denied,
                    why,
                    "Change approach: do not send this call again.",
                ))
            } else {
                // The user's PreToolUse hooks stand in front of the approval gate: a block
                // answers the call and nothing runs (see crate::hooks).
                rt.hooks.pre_tool_use(tool.name(), &args, sink).await
            };
            if let Some(refusal) = refused {
                let name = tool.name().to_string();
                return Planned::Answered {
                    call,
                    name,
                    outcome: Err(refusal),
                    counts: true,
                    repaired,
                };
            }
            match rt.gate(&call.id, tool.as_ref(), &args, sink).await {
                GateDecision::Run {
                    concurrent,
                    approved,
                    network,
                } => Planned::Run(Prepared {
                    call,
                    tool,
                    args,
                    repaired,
                    concurrent,
                    approved,
                    network,
                }),
                GateDecision::Refuse(refusal) => {
                    let name = tool.name().to_string();
                    Planned::Answered {
                        call,
                        name,
                        outcome: Err(refusal),
                        counts: true,
                        repaired,
                    }
                }
            }
        }
        Err((refusal, counts)) => {
            let raw = arguments_for_log(&call.arguments);
            sink(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: raw,
            });
            let name = call.name.clone();
            Planned::Answered {
                call,
                name,
                outcome: Err(refusal),
                counts,
                repaired: None,
            }
        }
    }
}

/// A call that passed [`check`]: its tool, its arguments and the repair line, if any.
type Checked = (Arc<dyn Tool>, Value, Option<String>);

/// The gates before the loop guard: truncation, interruption, argument
/// repair, name repair and the argument shape. A call that passes comes with
/// the line that tells the model what was repaired, if anything was; an error
/// carries the refusal and whether it counts as a failed call for the loop guard.
fn check(
    rt: &Runtime,
    call: &ToolCall,
    parsed: Option<Value>,
    stop: &StopReason,
) -> Result<Checked, (Refusal, bool)> {
    if parsed.is_none() && stop.is_truncation() {
        return Err(match parse_arguments(&call.arguments) {
            Err(e) if e.kind == ArgumentsErrorKind::DuplicateKey => {
                (arguments_refusal(&call.name, &e, stop), true)
            }
            _ => (truncated_refusal(stop, None), false),
        });
    }
    if *stop == StopReason::Interrupted {
        return Err((interrupted_refusal(), false));
    }
    if let Some(host) = &rt.delegation
        && let Some(role) = host.role
        && host.withheld.contains(&call.name.as_str())
    {
        return Err((
            crate::subagent::withheld(role, host.depth, &call.name, host.custom.as_deref()),
            true,
        ));
    }
    let names = rt.tools.names();
    let mut repairs = Vec::new();
    let tool = match resolve_tool_name(&call.name, &names) {
        NameResolution::Exact(n) => rt.tools.get(&n),
        NameResolution::Repaired { from, to, how } => {
            repairs.push(how.disclosure(&from, &to));
            rt.tools.get(&to)
        }
        NameResolution::Unknown { suggestions } => {
            return Err((unknown_tool(&call.name, &suggestions, &names), true));
        }
    };
    let tool = tool.ok_or_else(|| (Refusal::internal(), true))?;
    if rt.tools.is_dormant(tool.name()) {
        return Err((dormant_tool(tool.name()), true));
    }
    let args = match parsed {
        Some(v) => v,
        None => match repair_arguments(&call.arguments, RepairPolicy::RepairAllowed) {
            Ok((v, rungs)) => {
                repairs.extend(rungs.iter().map(|r| r.disclosure().to_string()));
                v
            }
            Err(e) => {
                let counts = e.kind != ArgumentsErrorKind::Unfinished;
                return Err((arguments_refusal(tool.name(), &e, stop), counts));
            }
        },
    };
    if !args.is_object() {
        return Err((not_an_object(tool.name(), &args), true));
    }
    Ok((tool, args, repaired_line(&repairs)))
}

/// The one line a result carries when its call needed repairs (`disclosures` from
/// [`crate::repair::names::NameRepair::disclosure`] and
/// [`crate::repair::args::Rung::disclosure`]), so the model learns its slip instead
/// of repeating it: `[repaired] …; repaired — … .`. `None` when nothing was repaired.
pub(crate) fn repaired_line(disclosures: &[String]) -> Option<String> {
    (!disclosures.is_empty()).then(|| format!("[repaired] {}.", disclosures.join(". ")))
}

/// A call's raw argument text as the event log shows it: the value when the
/// strict reader accepts it, else the text exactly as sent.
fn arguments_for_log(raw: &str) -> Value {
    parse_arguments(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// Arguments the repair ladder could not read: unfinished text is answered
/// like a cut-off call (it is one, whatever the stop reason says); a key named
/// twice is ambiguous; anything else is told to the model as what the parser
/// found and where, never handed over as `{}` whose "missing field" errors
/// would hide the real fault.
fn arguments_refusal(tool: &str, fault: &ArgumentsError, stop: &StopReason) -> Refusal {
    match fault.kind {
        ArgumentsErrorKind::Unfinished => truncated_refusal(stop, Some(&fault.message)),
        ArgumentsErrorKind::DuplicateKey => Refusal::new(
            ErrorCode::InvalidArguments,
            format!(
                "The arguments of `{tool}` are ambiguous: {}. The call was NOT run, since either value may \
                 be the one you meant.",
                fault.message
            ),
            "Send the call again with each key given once.",
        )
        .with("executed", false),
        ArgumentsErrorKind::Invalid => Refusal::new(
            ErrorCode::InvalidArguments,
            format!(
                "The arguments of `{tool}` are not valid JSON: {}. The call was not run.",
                fault.message
            ),
            "Send the call again with the arguments as one valid JSON object (quote every key and string, \
             separate members with commas).",
        )
        .with("executed", false),
    }
}

/// What kind of JSON value `v` is, for an error that must not echo the value itself.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a call that was cut off (or may have been) should do next.
const RESEND_WHOLE: &str = "Send the complete call again. If its arguments are long (a big file or patch), split \
                            the work into several smaller calls.";

/// The truncation gate's answer: the call's arguments were cut off and it was
/// not run. `unfinished` is the parser's finding when the text itself shows
/// the cut (it ends inside a string, object or array) although the stop
/// reason does not say so; `None` when the response hit the output limit.
fn truncated_refusal(stop: &StopReason, unfinished: Option<&str>) -> Refusal {
    let reason = serde_json::to_value(stop)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "max_tokens".into());
    let what = match unfinished {
        None => format!(
            "This call was NOT executed: your response hit the output limit (stop reason: {reason}) while its \
             arguments were being written, so they are incomplete."
        ),
        Some(fault) => format!(
            "This call was NOT executed: its arguments end before their JSON does ({fault}; stop reason: \
             {reason}), so they were cut off and are incomplete."
        ),
    };
    Refusal::new(ErrorCode::InvalidArguments, what, RESEND_WHOLE)
        .with("stop_reason", reason)
        .with("truncated", true)
        .with("executed", false)
}

/// A call from a response whose stream broke off before its terminal signal:
/// its arguments may be incomplete, so it is never executed.
fn interrupted_refusal() -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        "This call was NOT executed: the response stream was cut off before it finished, so the call may be \
         incomplete.",
        RESEND_WHOLE,
    )
    .with("stop_reason", "interrupted")
    .with("executed", false)
}

/// A deferred tool called before `tool_search` loaded it: the model has not seen its schema.
fn dormant_tool(name: &str) -> Refusal {
    let search = codesmith_tools::deferred::TOOL_SEARCH;
    Refusal::new(
        ErrorCode::NotFound,
        format!("`{name}` is not loaded yet: it was NOT run, and its schema has not been sent to you."),
        format!(
            "Call {search} first, e.g. {{\"query\": \"{name}\", \"limit\": 1}}; it loads the tool, then call \
             `{name}` with the arguments its schema asks for."
        ),
    )
    .with("tool_search", search)
    .with("executed", false)
}

/// The refusal of arguments that parsed but are not a JSON object, in every front end.
pub(crate) fn not_an_object(tool: &str, args: &Value) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!(
            "The arguments of `{tool}` must be a JSON object; got {}.",
            kind_of(args)
        ),
        "Send the arguments as an object, as in the examples of the tool description.",
    )
}

/// The refusal of a name that is no registered tool, in every front end: the closest
/// names first (`suggestions`, "did you mean"), then every registered tool. Nothing is run
/// on a guess.
pub(crate) fn unknown_tool(name: &str, suggestions: &[String], registered: &[&str]) -> Refusal {
    let hint = if suggestions.is_empty() {
        format!(
            "Use one of the registered tools: {}.",
            registered.join(", ")
        )
    } else {
        format!(
            "Did you mean {}? Registered tools: {}.",
            suggestions.join(" or "),
            registered.join(", ")
        )
    };
    Refusal::new(
        ErrorCode::NotFound,
        format!("There is no tool named `{name}`."),
        hint,
    )
    .with("did_you_mean", suggestions.to_vec())
}

/// What [`finish`] needs of a call besides its outcome.
struct Finishing<'a> {
    call: &'a ToolCall,
    /// The tool's name (resolved when it was).
    name: &'a str,
    /// The tool's `<external_content>` label, if any.
    label: Option<String>,
    /// Whether the call counts for the loop guard.
    counts: bool,
    /// The line naming the repairs the call needed (see [`repaired_line`]).
    repaired: Option<&'a str>,
}

/// Finishes a call's result for the session (see [`crate::finish`]): then the line
/// naming what was repaired, the loop guard's warning when failures pile up, and the
/// result event.
fn finish(
    rt: &mut Runtime,
    f: Finishing<'_>,
    outcome: ToolOutcome,
    sink: &mut EventSink<'_>,
) -> ToolResult {
    let Finishing {
        call,
        name,
        label,
        counts,
        repaired,
    } = f;
    let args = serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::Null);
    let mut done = finish_outcome(outcome, &args, label, false);
    if let Some(line) = repaired {
        done.text.push('\n');
        done.text.push_str(line);
    }
    if !done.changes.is_empty() {
        rt.guard.edited(
            done.changes
                .iter()
                .flat_map(|c| std::iter::once(c.path.as_str()).chain(c.moved_to.as_deref())),
        );
    }
    if counts && let Some(warning) = rt.guard.record(done.ok) {
        done.text.push_str("\n\n");
        done.text.push_str(&warning);
    }
    let event = done.event(&call.id, name);
    rt.shown.extend(crate::replay::shown_note(&event));
    sink(event);
    ToolResult {
        call_id: call.id.clone(),
        content: done.text,
        is_error: !done.ok,
    }
}
