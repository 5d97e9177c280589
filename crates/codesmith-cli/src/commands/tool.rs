//! `codesmith tool NAME --workspace DIR 'JSON-ARGS'`: one tool call, one JSON line.
//!
//! Exit 0 when the tool ran, whatever it answered (a refusal is an ordinary
//! outcome); exit 2 on a usage error (no such tool, arguments that are not a
//! JSON object or name a key twice, a bad workspace); 128 + the signal when SIGINT,
//! SIGTERM or SIGHUP cancelled the call. Read-before-write state lives for this one
//! invocation: a file's content as it is when the call runs counts as read (a session
//! and the MCP server keep the read-before-write check). A tool with one
//! required text argument takes its value bare; `--pretty` prints the result for a person.

use std::sync::Arc;

use codesmith_tools::envelope_json;
use serde_json::Value;

use crate::args::ToolArgs;
use crate::exit::{Exit, usage};
use crate::setup;
use crate::shutdown::{self, Shutdown, StopSignal};

/// Runs `codesmith tool`.
pub(crate) async fn run(args: ToolArgs) -> Exit {
    let (registry, ctx, policy) = match setup::one_shot(args.workspace.workspace.as_deref()) {
        Ok(parts) => parts,
        Err(e) => return usage(e),
    };
    if registry.get(&args.name).is_none() {
        return usage(anyhow::anyhow!(unknown_tool(&args.name, &registry.names())));
    }
    let schema = registry
        .get(&args.name)
        .map(|t| t.input_schema())
        .unwrap_or(Value::Null);
    // A bare value is the one required text argument (`read_file README.md`).
    let bare = args
        .args
        .as_deref()
        .filter(|a| !a.trim_start().starts_with('{'))
        .zip(sole_text_argument(&schema));
    // The reader every layer uses for a call's arguments: a key named twice is refused.
    let parsed = match bare {
        Some((value, key)) => Ok(Some(serde_json::json!({ key: value }))),
        None => args
            .args
            .as_deref()
            .map(codesmith_protocol::parse_arguments)
            .transpose(),
    };
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
    // One call has no earlier read: a file's content as it is now is its read (a
    // session, and the MCP server's clients, keep the read-before-write check).
    let mut ctx = ctx.with_cancel(shutdown.token());
    ctx.freshness = Arc::new(codesmith_tools::fs::freshness::FreshnessTracker::one_call());
    let lsp = ctx.lsp.clone();
    let ctx = Arc::new(ctx);
    let done = codesmith_engine::run_one(&registry, ctx, &policy, &args.name, call_args).await;
    // A language server the call started does not outlive it.
    if let Some(lsp) = lsp {
        lsp.shutdown().await;
    }
    if args.pretty {
        print!("{}", pretty(&done.result));
    } else {
        // File names and command output in the envelope may hold C1 or bidi controls,
        // which `serde_json` leaves as they are.
        println!(
            "{}",
            codesmith_policy::json_terminal_safe(&envelope_json(&done.outcome).to_string())
        );
    }
    match shutdown.caught() {
        Some(signal) => shutdown::exit(
            signal,
            "the call was cancelled and what it ran was killed with everything it started",
        ),
        None => Exit::Ok,
    }
}

/// The name of the one required argument of `schema` when it is a string (a path, a
/// command, a pattern): what a bare JSON-ARGS value stands for.
fn sole_text_argument(schema: &Value) -> Option<String> {
    let [key] = schema.get("required")?.as_array()?.as_slice() else {
        return None;
    };
    let key = key.as_str()?;
    (schema["properties"][key]["type"] == "string").then(|| key.to_string())
}

/// `--pretty`: a result as a person reads it, with the renderer every front end uses: a
/// refusal's whole reason and hint, else the text the model reads, an edit's diff, and
/// a success's few words (`exit 0 · 0.1s`). Made safe for the terminal.
fn pretty(result: &codesmith_engine::FinishedResult) -> String {
    let mut lines = Vec::new();
    if result.ok {
        lines.push(codesmith_policy::terminal_safe(&result.text).into_owned());
        lines.extend(crate::render::diff_lines(&result.changes));
        if let Some(summary) = &result.summary {
            lines.push(format!("─ {}", codesmith_policy::terminal_safe(summary)));
        }
    } else {
        lines.extend(crate::render::refusal_lines(
            result.error.as_ref(),
            &result.text,
        ));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The refusal for a name that is not a tool: the closest names first ("did you mean"),
/// then every tool. Nothing is run on a guess.
fn unknown_tool(name: &str, names: &[&str]) -> String {
    use codesmith_engine::repair::names::{NameResolution, resolve_tool_name};
    let guesses = match resolve_tool_name(name, names) {
        NameResolution::Exact(n) | NameResolution::Repaired { to: n, .. } => vec![n],
        NameResolution::Unknown { suggestions } => suggestions,
    };
    let hint = match guesses.as_slice() {
        [] => String::new(),
        [one] => format!(": did you mean {one}?"),
        many => format!(": did you mean one of {}?", many.join(", ")),
    };
    format!(
        "there is no tool named {name:?}{hint} Tools: {} (`codesmith tool --help` describes them)",
        names.join(", ")
    )
}

/// `codesmith tool --help`'s list: every tool with the first sentence of its description.
pub(crate) fn catalogue_help() -> String {
    let registry = codesmith_tools::builtin_registry(Default::default());
    let specs = registry.specs();
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::from("Tools:\n");
    for spec in &specs {
        out.push_str(&format!(
            "  {:<width$}  {}\n",
            spec.name,
            first_sentence(&spec.description)
        ));
    }
    out.push_str("\nExample: codesmith tool read_file --workspace . '{\"path\": \"README.md\"}'");
    out
}

/// Most characters of a tool's line in `codesmith tool --help` after its name.
const SUMMARY_CHARS: usize = 60;

/// The description's first sentence (or its part before a colon), cut at a word to at
/// most [`SUMMARY_CHARS`] characters.
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let end = line.find(". ").map_or(line.len(), |i| i + 1);
    let sentence = line[..end].split(": ").next().unwrap_or_default();
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    let at_word = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", at_word.trim_end_matches([',', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_tool_gets_did_you_mean_and_the_list() {
        let names = ["edit_file", "grep_files", "read_file", "write_file"];
        let msg = unknown_tool("read_fiel", &names);
        assert!(msg.contains("did you mean read_file?"), "{msg}");
        assert!(msg.contains("Tools: edit_file, grep_files"), "{msg}");
        let msg = unknown_tool("ReadFile", &names);
        assert!(msg.contains("did you mean read_file?"), "{msg}");
        let msg = unknown_tool("zzzzzzzzzz", &names);
        assert!(!msg.contains("did you mean"), "{msg}");
    }

    #[test]
    fn the_catalogue_help_has_one_line_per_tool() {
        let help = catalogue_help();
        let registry = codesmith_tools::builtin_registry(Default::default());
        for name in registry.names() {
            let lines: Vec<&str> = help
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
                .collect();
            assert_eq!(lines.len(), 1, "{name}: {help}");
            assert!(lines[0].chars().count() <= 90, "{}", lines[0]);
        }
    }
}
