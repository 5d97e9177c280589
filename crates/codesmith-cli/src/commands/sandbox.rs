//! `codesmith sandbox run -- CMD`: run a command in the configured sandbox.
//!
//! When policy requires a sandbox (`[sandbox] required = true`, the default
//! for this command unless the backend is explicitly `none`) and no isolating
//! backend exists, nothing runs and the message names the two ways out.

use std::ffi::OsString;
use std::process::ExitCode;

use codesmith_tools::sandbox::{RunError, Scope};

use crate::args::SandboxCommand;
use crate::config;
use crate::exit::{Exit, usage};
use crate::setup;

/// Runs `codesmith sandbox ...`; returns the command's own exit code on success.
pub fn run(command: SandboxCommand) -> Result<ExitCode, Exit> {
    let SandboxCommand::Run {
        workspace,
        allow_network,
        command,
    } = command;
    let home = config::home_dir().map_err(usage)?;
    let workspace = config::workspace(workspace.workspace.as_deref()).map_err(usage)?;
    let file = config::read_user_config(&home).map_err(usage)?;
    let section = file.sandbox.clone().unwrap_or_default();
    let sandbox = setup::sandbox(&section)
        .map_err(usage)?
        .with_required(section.required_for_sandbox_run());
    let scope = Scope {
        workspace: workspace.clone(),
        cwd: workspace,
        user_home: std::env::var_os("HOME").map(Into::into),
        codesmith_home: Some(home),
        network: allow_network || section.network.unwrap_or(false),
    };
    let argv: Vec<OsString> = command.into_iter().map(OsString::from).collect();
    match codesmith_tools::sandbox::run(&sandbox, &scope, argv) {
        Ok(code) => Ok(ExitCode::from(
            u8::try_from(code.clamp(0, 255)).unwrap_or(1),
        )),
        Err(RunError::EmptyCommand) => Err(usage(anyhow::anyhow!("{}", RunError::EmptyCommand))),
        Err(e) => Err(Exit::failed(anyhow::anyhow!("{e}"))),
    }
}
