//! The fail-closed isolation check in front of every sandboxed command: the shell tools and
//! `codesmith sandbox run`.

use std::fmt;

use super::Backend;

/// Refusal to run a command bare when policy requires a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRefusal {
    /// Name of the backend that was selected.
    pub backend: &'static str,
}

impl fmt::Display for SandboxRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refusing to run: policy requires a sandbox, but the selected backend \"{}\" does \
             not isolate commands on this host. Two ways out: install bubblewrap (for example \
             `apt-get install bubblewrap`) so the bwrap backend can run, or set `required = false` \
             under [sandbox] in the user config ($CODESMITH_HOME/config.toml)",
            self.backend
        )
    }
}

impl std::error::Error for SandboxRefusal {}

/// The isolation check behind `codesmith sandbox run -- CMD` (better to refuse
/// than to run bare).
///
/// `Ok(())` when `required` is false (the user opted out explicitly) or the backend really
/// isolates; otherwise a [`SandboxRefusal`] whose message names the two ways out.
pub fn require_isolation(backend: &dyn Backend, required: bool) -> Result<(), SandboxRefusal> {
    if !required || backend.isolates() {
        Ok(())
    } else {
        Err(SandboxRefusal {
            backend: backend.name(),
        })
    }
}

/// Why [`run`] did not produce an exit status.
#[derive(Debug)]
pub enum RunError {
    /// The isolation check refused (see [`require_isolation`]).
    Refused(SandboxRefusal),
    /// No command was given.
    EmptyCommand,
    /// The sandbox could not be set up for this command (see [`Backend::launch`]).
    Setup(std::io::Error),
    /// The (wrapped) program could not be started.
    Spawn(std::io::Error),
    /// bubblewrap started but could not set the sandbox up, so the command did not run (its
    /// own message went to stderr; see [`super::SetupReport`]).
    SetupFailed,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Refused(r) => r.fmt(f),
            RunError::EmptyCommand => write!(f, "no command given: use `sandbox run -- CMD ARGS`"),
            RunError::Setup(e) => write!(f, "could not set up the sandbox: {e}"),
            RunError::Spawn(e) => write!(f, "could not start the sandboxed command: {e}"),
            RunError::SetupFailed => write!(
                f,
                "bubblewrap could not set up the sandbox (its reason is printed above), so the \
                 command did not run; `codesmith doctor` checks the sandbox"
            ),
        }
    }
}

impl std::error::Error for RunError {}

/// What [`run`] did: the command's exit code (128 + signal number when a signal killed
/// it) and what CodeSmith has to tell about the run afterwards (git redirections the
/// command created and that were removed, or could not be); the caller prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The exit code.
    pub code: i32,
    /// Notices for the person, one sentence each.
    pub notices: Vec<String>,
}

/// Runs `argv` under `sandbox` with inherited stdin/stdout/stderr, after the isolation check
/// ([`super::Sandbox::admit`], the same one the shell tools pass), and returns its exit
/// code (128 + signal number when killed by a signal) with the notices of the run. The
/// command gets only the allowlisted environment ([`super::exposure::environment`]).
///
/// This is the body of `codesmith sandbox run -- CMD`.
pub fn run(
    sandbox: &super::Sandbox,
    scope: &super::Scope,
    argv: Vec<std::ffi::OsString>,
) -> Result<RunOutcome, RunError> {
    sandbox.admit().map_err(RunError::Refused)?;
    let backend = sandbox.backend.as_ref();
    if argv.is_empty() {
        return Err(RunError::EmptyCommand);
    }
    let guard = super::GitGuard::before(scope, backend.isolates());
    let launch = backend.launch(argv, scope).map_err(RunError::Setup)?;
    let mut cmd = std::process::Command::new(launch.program());
    let mut setup = launch.configure(&mut cmd).map_err(RunError::Setup)?;
    cmd.current_dir(&scope.cwd);
    let status = cmd.status();
    let notices = guard
        .finish()
        .into_iter()
        .map(|(path, err)| match err {
            None => format!(
                "removed {} that the command created (it would redirect git's configuration and hooks)",
                path.display()
            ),
            Some(e) => format!(
                "could not remove {} that the command created: {e}; delete it before running git here",
                path.display()
            ),
        })
        .collect();
    let status = status.map_err(RunError::Spawn)?;
    if setup.failed(status) {
        return Err(RunError::SetupFailed);
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(RunOutcome {
        code: status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        notices,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{Sandbox, Scope};
    use super::*;

    fn scope() -> Scope {
        Scope {
            workspace: std::env::temp_dir(),
            cwd: std::env::temp_dir(),
            user_home: None,
            codesmith_home: None,
            network: false,
            extra: super::super::Extra::default(),
        }
    }

    #[test]
    fn refuses_to_run_bare_when_a_sandbox_is_required() {
        let sandbox = Sandbox::none().with_required(true);
        let err = run(&sandbox, &scope(), vec!["true".into()]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("install bubblewrap"), "{msg}");
        assert!(msg.contains("required = false"), "{msg}");
    }

    #[test]
    fn explicit_opt_out_runs_unsandboxed() {
        let sandbox = Sandbox::none();
        assert_eq!(
            run(
                &sandbox,
                &scope(),
                vec!["sh".into(), "-c".into(), "exit 7".into()],
            )
            .unwrap(),
            RunOutcome {
                code: 7,
                notices: Vec::new()
            }
        );
        assert!(matches!(
            run(&sandbox, &scope(), vec![]),
            Err(RunError::EmptyCommand)
        ));
    }
}
