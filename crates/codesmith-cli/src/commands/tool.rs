//! `codesmith tool NAME --workspace DIR 'JSON-ARGS'`: one tool call, one JSON line.
//!
//! Exit 0 when the tool ran, whatever it answered (a refusal is an ordinary
//! outcome); exit 2 on a usage error (no such tool, arguments that are not a
//! JSON object, a bad workspace). Read-before-write state lives for this one
//! invocation, so the writing tools accept `"force_fresh": true` here.

use std::sync::Arc;

use codesmith_tools::{ToolContext, envelope_json};
use serde_json::Value;

use crate::args::ToolArgs;
use crate::config;
use crate::exit::{Exit, usage};
use crate::setup;

/// Runs `codesmith tool`.
pub async fn run(args: ToolArgs) -> Exit {
    let (home, workspace) = match (
        config::home_dir(),
        config::workspace(args.workspace.workspace.as_deref()),
    ) {
        (Ok(h), Ok(w)) => (h, w),
        (Err(e), _) | (_, Err(e)) => return usage(e),
    };
    let file = match config::read_user_config(&home) {
        Ok(f) => f,
        Err(e) => return usage(e),
    };
    let mut warnings = Vec::new();
    let registry = setup::registry(&file, &mut warnings);
    if registry.get(&args.name).is_none() {
        return usage(anyhow::anyhow!(
            "there is no tool named {:?}; tools: {}",
            args.name,
            registry.names().join(", ")
        ));
    }
    let call_args: Value = match args.args.as_deref().map(serde_json::from_str).transpose() {
        Ok(v) => v.unwrap_or_else(|| Value::Object(Default::default())),
        Err(e) => {
            return usage(anyhow::anyhow!(
                "JSON-ARGS is not valid JSON ({e}); pass an object like '{{\"path\": \"README.md\"}}'"
            ));
        }
    };
    if !call_args.is_object() {
        return usage(anyhow::anyhow!(
            "JSON-ARGS must be a JSON object, like '{{\"path\": \"README.md\"}}'"
        ));
    }
    let rules = match config::load_rules(&home, &workspace, &mut warnings) {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    let sandbox = match setup::sandbox(&file.sandbox.clone().unwrap_or_default()) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    for warning in warnings {
        eprintln!("codesmith: {warning}");
    }
    let ctx = Arc::new(ToolContext::one_shot(workspace, home).with_sandbox(sandbox));
    let outcome = codesmith_engine::run_one(&registry, ctx, &rules, &args.name, call_args).await;
    println!("{}", envelope_json(&outcome));
    Exit::Ok
}
