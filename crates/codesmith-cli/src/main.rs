//! The `codesmith` binary.

mod answer;
mod args;
mod commands;
mod config;
mod exit;
mod local;
mod progress;
mod render;
mod setup;
mod shutdown;
mod tui;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::args::Cli;

fn main() -> ExitCode {
    // Before anything reads a key: a command run without a sandbox (as another, non-root
    // user) must not read this process's environment or memory through /proc.
    codesmith_tools::sandbox::mark_non_dumpable();
    let mut command = Cli::command();
    // Listing the tools builds the catalogue, so only `codesmith tool ...` pays for it.
    if std::env::args_os().skip(1).any(|a| a == "tool") {
        command =
            command.mut_subcommand("tool", |c| c.after_help(commands::tool::catalogue_help()));
    }
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Orphans of the commands CodeSmith runs are re-parented here, so they can be found,
    // killed and reaped when their command ends (see codesmith_tools::shell).
    codesmith_tools::shell::become_child_subreaper();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codesmith: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let exit = runtime.block_on(commands::run(cli.command, cli.ui));
    // A blocking read of stdin (the MCP transport, line mode) may still be waiting for a
    // line that never comes: it must not hold the exit. Dropping the tasks here kills what
    // their commands left running; a command's reaper covers whatever remains.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    exit.report()
}
