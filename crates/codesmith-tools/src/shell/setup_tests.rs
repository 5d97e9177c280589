//! A sandbox that cannot be set up is told apart from the command's own exit status, on
//! the one spawn path every sandboxed command takes.

use std::sync::Arc;
use std::time::Duration;

use super::process;
use crate::sandbox::{BwrapBackend, Sandbox, Scope};

/// A bubblewrap sandbox and a scope over a fresh workspace, or `None` without bwrap.
fn bwrap_scope(dir: &tempfile::TempDir) -> Option<(Sandbox, Scope)> {
    let backend = BwrapBackend::detect()?;
    let ws = dir.path().canonicalize().ok()?;
    let scope = Scope {
        workspace: ws.clone(),
        cwd: ws,
        user_home: None,
        codesmith_home: None,
        network: false,
        extra: Default::default(),
    };
    Some((Sandbox::new(Arc::new(backend), false), scope))
}

/// Runs `script` under `sandbox` in `scope` and returns (exit code, setup failure).
async fn run(
    sandbox: &Sandbox,
    scope: &Scope,
    script: &str,
) -> (i32, Option<crate::sandbox::SetupFailure>) {
    let mut running =
        process::spawn(sandbox, scope, script, &scope.workspace).expect("the spawn itself works");
    let status = running
        .wait_for(Duration::from_secs(15))
        .await
        .expect("bounded: the command ends within 15 s");
    running.drain(Duration::from_millis(300)).await;
    let (text, _) = process::lock(&running.output).text_from(0, true);
    let failure = running.setup_failure(status, &text);
    (process::exit_code(status), failure)
}

#[tokio::test]
async fn a_sandbox_that_fails_to_set_up_is_a_sandbox_failure_not_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let Some((sandbox, mut scope)) = bwrap_scope(&dir) else {
        // No bubblewrap here: nothing to tell apart.
        return;
    };
    // bubblewrap cannot enter a directory that does not exist: it exits 1 before the
    // command runs.
    scope.cwd = scope.workspace.join("gone");
    let (code, failure) = run(&sandbox, &scope, "echo ran").await;
    assert_eq!(code, 1, "bwrap's own status");
    let failure = failure.expect("reported as the sandbox's failure");
    assert!(failure.message.starts_with("bwrap: "), "{failure:?}");
    assert!(failure.message.contains("gone"), "{failure:?}");
    assert!(!failure.transient, "{failure:?}");
    let refusal = failure.refusal();
    assert_eq!(refusal.code, crate::ErrorCode::SandboxFailed);
    assert!(
        refusal.message.contains("did not run"),
        "{}",
        refusal.message
    );
}

#[tokio::test]
async fn the_commands_own_failure_stays_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let Some((sandbox, scope)) = bwrap_scope(&dir) else {
        // No bubblewrap here: nothing to tell apart.
        return;
    };
    // Exit 1 the way bwrap would, with bwrap's words: still the command's own.
    let (code, failure) = run(
        &sandbox,
        &scope,
        "echo 'bwrap: Creating new namespace failed: Resource temporarily unavailable'; exit 1",
    )
    .await;
    assert_eq!((code, failure), (1, None));
    // A command that replaces the shell (no trap, no sentinel) is still the command.
    let (code, failure) = run(&sandbox, &scope, "exec false").await;
    assert_eq!((code, failure), (1, None));
    let (code, failure) = run(&sandbox, &scope, "true").await;
    assert_eq!((code, failure), (0, None));
}
