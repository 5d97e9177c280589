//! Exit codes: 0 success, 1 the run failed, 2 bad usage or configuration.

use std::process::ExitCode;

use codesmith_policy::terminal_safe;

/// How a command ended.
#[derive(Debug)]
pub(crate) enum Exit {
    /// Success (exit 0).
    Ok,
    /// The run failed (exit 1); the error, if any, is printed.
    Failed(Option<anyhow::Error>),
    /// Bad usage or configuration (exit 2); the message says what to fix.
    Usage(anyhow::Error),
    /// A child's own exit code (`sandbox run`).
    Code(ExitCode),
}

impl Exit {
    /// A failure with a message.
    pub(crate) fn failed(e: anyhow::Error) -> Self {
        Exit::Failed(Some(e))
    }

    /// Prints what needs printing and returns the process exit code.
    pub(crate) fn report(self) -> ExitCode {
        match self {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Failed(None) => ExitCode::from(1),
            // An error may quote a file name, a command or a provider's message.
            Exit::Failed(Some(e)) => {
                eprintln!("codesmith: {}", terminal_safe(&format!("{e:#}")));
                ExitCode::from(1)
            }
            Exit::Usage(e) => {
                eprintln!("codesmith: {}", terminal_safe(&format!("{e:#}")));
                ExitCode::from(2)
            }
            Exit::Code(code) => code,
        }
    }
}

/// A usage error (exit 2).
pub(crate) fn usage(e: anyhow::Error) -> Exit {
    Exit::Usage(e)
}
