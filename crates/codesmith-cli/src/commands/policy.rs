//! `codesmith policy check [--workspace DIR] [--sandboxed] [--approval MODE] 'COMMAND'`: the
//! policy's verdict as one JSON object, in approval mode MODE (default auto-edit), judged as
//! run bare or (`--sandboxed`) under a sandbox with a private `/tmp`.

use crate::args::PolicyCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith policy ...`.
pub(crate) fn run(command: PolicyCommand) -> Exit {
    match command {
        PolicyCommand::Check {
            workspace,
            sandboxed,
            approval,
            command,
        } => {
            let (home, workspace) = match (
                config::home_dir(),
                config::workspace(workspace.workspace.as_deref()),
            ) {
                (Ok(h), Ok(w)) => (h, w),
                (Err(e), _) | (_, Err(e)) => return usage(e),
            };
            let mut warnings = Vec::new();
            let rules = match config::load_rules(&home, &workspace, &mut warnings) {
                Ok(r) => r,
                Err(e) => return usage(e),
            };
            for warning in warnings {
                eprintln!("codesmith: {}", codesmith_policy::terminal_safe(&warning));
            }
            let report = codesmith_policy::check_report(
                &command,
                &workspace.to_string_lossy(),
                &rules,
                sandboxed,
                approval,
            );
            // The report quotes the command and the project's rule reasons.
            println!(
                "{}",
                codesmith_policy::json_terminal_safe(&report.to_string())
            );
            Exit::Ok
        }
    }
}
