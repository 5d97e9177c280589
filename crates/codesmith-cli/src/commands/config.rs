//! `codesmith config show [--json]`: the effective configuration, one value per line
//! with the layer that set it, like `git config --show-origin`.
//!
//! The values come from the one resolution every other command uses
//! ([`crate::config::resolve`]), so what is shown is what `exec` would run with. API keys
//! and MCP header and environment values are shown as `<redacted>`. Exit 0, or 2 when
//! the configuration does not resolve (the error names what to fix).

use serde_json::json;

use crate::args::ConfigCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith config ...`.
pub(crate) fn run(command: ConfigCommand) -> Exit {
    let ConfigCommand::Show(args) = command;
    let settings = match config::resolve(config::Flags {
        workspace: args.workspace.workspace.as_deref(),
        model: &args.model,
        max_turns: None,
    }) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let shown = config::show(&settings);
    // Values quote the user's and the project's files: shown, never acted on.
    if args.json {
        let value = json!({
            "settings": shown.iter().map(config::Shown::to_json).collect::<Vec<_>>(),
            "warnings": settings.warnings,
        });
        println!(
            "{}",
            codesmith_policy::json_terminal_safe(&value.to_string())
        );
    } else {
        print!(
            "{}",
            codesmith_policy::terminal_safe(&config::to_text(&shown))
        );
        for warning in &settings.warnings {
            eprintln!("codesmith: {}", codesmith_policy::terminal_safe(warning));
        }
    }
    Exit::Ok
}
