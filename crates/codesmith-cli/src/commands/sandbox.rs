//! `codesmith sandbox run -- CMD`: run a command in the configured sandbox.
//!
//! When policy requires a sandbox (`[sandbox] required = true` in the user config or
//! tightened by the project's, and the default for this command unless the backend is
//! explicitly `none`) and no isolating backend exists, nothing runs and the message
//! names the two ways out.

use std::ffi::OsString;
use std::process::ExitCode;

use codesmith_tools::sandbox::{RunError, Scope};

use crate::args::SandboxCommand;
use crate::config;
use crate::exit::{Exit, usage};
use crate::setup;

/// Runs `codesmith sandbox ...`; returns the command's own exit code on success.
pub(crate) fn run(command: SandboxCommand) -> Result<ExitCode, Exit> {
    let SandboxCommand::Run {
        workspace,
        allow_network,
        command,
    } = command;
    let settings = config::resolve(config::Flags {
        workspace: workspace.workspace.as_deref(),
        model: &config::NO_MODEL_FLAGS,
        max_turns: None,
    })
    .map_err(usage)?;
    let section = settings.sandbox.clone();
    let sandbox = setup::sandbox(&section)
        .map_err(usage)?
        .with_required(section.required_for_sandbox_run());
    let scope = Scope {
        workspace: settings.workspace.clone(),
        cwd: settings.workspace,
        user_home: std::env::var_os("HOME").map(Into::into),
        codesmith_home: Some(settings.home),
        network: allow_network || section.network.unwrap_or(false),
        extra: sandbox.extra.clone(),
    };
    let argv: Vec<OsString> = command.into_iter().map(OsString::from).collect();
    match codesmith_tools::sandbox::run(&sandbox, &scope, argv) {
        Ok(outcome) => {
            for notice in &outcome.notices {
                eprintln!("codesmith: {}", codesmith_policy::terminal_safe(notice));
            }
            Ok(ExitCode::from(
                u8::try_from(outcome.code.clamp(0, 255)).unwrap_or(1),
            ))
        }
        Err(RunError::EmptyCommand) => Err(usage(anyhow::anyhow!("{}", RunError::EmptyCommand))),
        Err(e) => Err(Exit::failed(anyhow::anyhow!("{e}"))),
    }
}
