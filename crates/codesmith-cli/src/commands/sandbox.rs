//! `codesmith sandbox run -- CMD`: run a command in the configured sandbox;
//! `codesmith sandbox explain`: show what such a command sees.
//!
//! When policy requires a sandbox (`[sandbox] required = true` in the user config or
//! tightened by the project's, and the default for this command unless the backend is
//! explicitly `none`) and no isolating backend exists, nothing runs and the message
//! names the two ways out.

use std::ffi::OsString;
use std::process::ExitCode;

use codesmith_tools::sandbox::{RunError, Sandbox, Scope};

use crate::args::{SandboxCommand, WorkspaceArg};
use crate::config;
use crate::exit::{Exit, usage};
use crate::setup;

/// Runs `codesmith sandbox ...`; returns the command's own exit code on success.
pub(crate) fn run(command: SandboxCommand) -> Result<ExitCode, Exit> {
    match command {
        SandboxCommand::Run {
            workspace,
            allow_network,
            command,
        } => run_command(&workspace, allow_network, command),
        SandboxCommand::Explain {
            workspace,
            allow_network,
            json,
        } => explain(&workspace, allow_network, json),
    }
}

/// The sandbox and scope of the configured sandbox for `workspace`.
fn configured(
    workspace: &WorkspaceArg,
    allow_network: bool,
) -> Result<(Sandbox, Scope, bool), Exit> {
    let settings = config::resolve(config::Flags {
        workspace: workspace.workspace.as_deref(),
        model: &config::NO_MODEL_FLAGS,
        max_turns: None,
    })
    .map_err(usage)?;
    let section = settings.sandbox.clone();
    let required = section.required_for_sandbox_run();
    let sandbox = setup::sandbox(&section).map_err(usage)?;
    let scope = Scope {
        workspace: settings.workspace.clone(),
        cwd: settings.workspace,
        user_home: std::env::var_os("HOME").map(Into::into),
        codesmith_home: Some(settings.home),
        network: allow_network || section.network.unwrap_or(false),
        extra: sandbox.extra.clone(),
    };
    Ok((sandbox, scope, required))
}

fn run_command(
    workspace: &WorkspaceArg,
    allow_network: bool,
    command: Vec<String>,
) -> Result<ExitCode, Exit> {
    let (sandbox, scope, required) = configured(workspace, allow_network)?;
    let sandbox = sandbox.with_required(required);
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

/// `codesmith sandbox explain`: prints [`codesmith_tools::sandbox::explain`].
fn explain(workspace: &WorkspaceArg, allow_network: bool, json: bool) -> Result<ExitCode, Exit> {
    let (sandbox, scope, _) = configured(workspace, allow_network)?;
    let e = codesmith_tools::sandbox::explain(&sandbox, &scope)
        .map_err(|e| Exit::failed(anyhow::anyhow!("could not set up the sandbox: {e}")))?;
    let safe = |p: &std::path::Path| {
        codesmith_policy::terminal_safe(&p.display().to_string()).into_owned()
    };
    if json {
        let paths: Vec<serde_json::Value> = e
            .paths
            .iter()
            .map(|p| {
                serde_json::json!({
                    "path": p.path.display().to_string(),
                    "access": p.access.as_str(),
                    "kind": p.kind,
                })
            })
            .collect();
        let out = serde_json::json!({
            "backend": e.backend,
            "isolates": e.isolates,
            "host_uid": e.host_uid,
            "network": e.network,
            "paths": paths,
            "env": e.env,
            "syscalls_refused": e.syscalls_refused,
            "syscalls_refused_with_arguments": e.syscalls_refused_with_arguments,
        });
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "backend: {}{}",
        e.backend,
        if e.isolates {
            ""
        } else {
            " (does NOT isolate: commands run with your full permissions)"
        }
    );
    println!("host uid of commands: {}", e.host_uid);
    println!(
        "network: {}",
        if e.network {
            "allowed"
        } else {
            "cut (loopback only)"
        }
    );
    println!("paths (later lines cover earlier ones; anything not listed is absent):");
    for p in &e.paths {
        println!("  {:<6} {:<7} {}", p.access.as_str(), p.kind, safe(&p.path));
    }
    println!(
        "environment ({} names; anything else is dropped; add names with [sandbox] env):",
        e.env.len()
    );
    println!("  {}", e.env.join(" "));
    if e.syscalls_refused.is_empty() {
        println!("system calls refused: none (no seccomp filter)");
    } else {
        println!("system calls refused ({}):", e.syscalls_refused.len());
        println!("  {}", e.syscalls_refused.join(" "));
        println!("refused for some arguments:");
        for what in &e.syscalls_refused_with_arguments {
            println!("  {what}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
