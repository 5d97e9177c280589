//! `codesmith tool NAME --workspace DIR 'JSON-ARGS'`: one tool call, one JSON line.
//!
//! Exit 0 when the tool ran, whatever it answered (a refusal is an ordinary
//! outcome); exit 2 on a usage error (no such tool, arguments that are not a
//! JSON object or name a key twice, a bad workspace); 128 + the signal when SIGINT,
//! SIGTERM or SIGHUP cancelled the call. Read-before-write state lives for this one
//! invocation, so the writing tools accept `"force_fresh": true` here.

use std::sync::Arc;

use codesmith_tools::envelope_json;
use serde_json::Value;

use crate::args::ToolArgs;
use crate::exit::{Exit, usage};
use crate::setup;
use crate::shutdown::{self, Shutdown, StopSignal};

/// Runs `codesmith tool`.
pub async fn run(args: ToolArgs) -> Exit {
    let (registry, ctx, rules) = match setup::one_shot(args.workspace.workspace.as_deref()) {
        Ok(parts) => parts,
        Err(e) => return usage(e),
    };
    if registry.get(&args.name).is_none() {
        return usage(anyhow::anyhow!(
            "there is no tool named {:?}; tools: {}",
            args.name,
            registry.names().join(", ")
        ));
    }
    // The reader every layer uses for a call's arguments: a key named twice is refused.
    let parsed = args
        .args
        .as_deref()
        .map(codesmith_protocol::parse_arguments)
        .transpose();
    let call_args: Value = match parsed {
        Ok(v) => v.unwrap_or_else(|| Value::Object(Default::default())),
        Err(e) => {
            return usage(anyhow::anyhow!(
                "JSON-ARGS is not valid JSON ({e}); pass an object like '{{\"path\": \"README.md\"}}' with each key once"
            ));
        }
    };
    if !call_args.is_object() {
        return usage(anyhow::anyhow!(
            "JSON-ARGS must be a JSON object, like '{{\"path\": \"README.md\"}}'"
        ));
    }
    // A stop signal cancels the call (crate::shutdown): a running command is killed with
    // everything it started, the CANCELLED envelope is printed, and the exit status is
    // 128 + the signal.
    let shutdown = match Shutdown::listen(StopSignal::ALL) {
        Ok(s) => s,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot listen for signals: {e}")),
    };
    let ctx = Arc::new(ctx.with_cancel(shutdown.token()));
    let outcome = codesmith_engine::run_one(&registry, ctx, &rules, &args.name, call_args).await;
    // File names and command output in the envelope may hold C1 or bidi controls,
    // which `serde_json` leaves as they are.
    println!(
        "{}",
        codesmith_policy::json_terminal_safe(&envelope_json(&outcome).to_string())
    );
    match shutdown.caught() {
        Some(signal) => shutdown::exit(
            signal,
            "the call was cancelled and what it ran was killed with everything it started",
        ),
        None => Exit::Ok,
    }
}
