//! A self-test that runs a probe script under a backend and reports what really holds on
//! this machine, item by item (what `codesmith doctor` shows).

use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Backend, Scope, limits};

/// One item of the self-test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfTest {
    /// Stable id (`caps`, `userns`, `git_readonly`, `masks`, `host_sockets`, `bounds`).
    pub id: &'static str,
    /// True when the item holds.
    pub holds: bool,
    /// What was observed, in one line.
    pub detail: String,
}

const PROBE: &str = r#"
echo "capeff=$(grep '^CapEff' /proc/self/status | cut -f2)"
echo "uid=$(id -u)"
if ! command -v unshare >/dev/null; then echo userns=unknown; elif unshare -U true 2>/dev/null; then echo userns=possible; else echo userns=blocked; fi
if ( : >> .git/config ) 2>/dev/null; then echo git_config=writable; else echo git_config=readonly; fi
if ( : > .git/hooks/pre-commit ) 2>/dev/null; then echo git_hooks=writable; else echo git_hooks=readonly; fi
if ( : > .git/index.probe ) 2>/dev/null; then echo git_index=writable; else echo git_index=readonly; fi
if cat "$CODESMITH_PROBE_HOME/.ssh/id_probe" 2>/dev/null | grep -q PROBE-SECRET; then echo masks=open; else echo masks=held; fi
echo "run_entries=$(ls -A /run 2>/dev/null | wc -l)"
echo "nproc=$(ulimit -u)"
echo "cgroup=$(grep -c codesmith- /proc/self/cgroup)"
"#;

/// Runs the probe under `backend` in a throw-away workspace that is also the fake `$HOME`
/// (holding a planted `.git/` and `~/.ssh` key), bounded to 10 s. Returns one
/// [`SelfTest`] per item, or an error line when the probe could not run at all.
///
/// # Errors
/// A one-line reason when no temporary directory could be made or the probe did not run.
pub fn self_test(backend: &dyn Backend) -> Result<Vec<SelfTest>, String> {
    let dir = tempfile::Builder::new()
        .prefix("codesmith-selftest")
        .tempdir_in(std::env::temp_dir())
        .map_err(|e| format!("no temporary directory: {e}"))?;
    let ws = dir
        .path()
        .canonicalize()
        .map_err(|e| format!("temporary directory: {e}"))?;
    for d in [".git/hooks", ".ssh"] {
        std::fs::create_dir_all(ws.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::write(ws.join(".git/config"), "[core]\n").map_err(|e| e.to_string())?;
    std::fs::write(ws.join(".ssh/id_probe"), "PROBE-SECRET\n").map_err(|e| e.to_string())?;
    let scope = Scope {
        workspace: ws.clone(),
        cwd: ws.clone(),
        user_home: Some(ws.clone()),
        codesmith_home: None,
        network: false,
        extra: super::Extra::default(),
    };
    // A probe that printed nothing did not run (a busy machine can fail a namespace or a
    // fork for a moment); it says nothing about isolation, so it is run once more before
    // the self-test reports it, with what it wrote on stderr and how it ended.
    let text = match run_probe(backend, &scope, &ws)? {
        Probe::Printed(text) => text,
        Probe::Nothing(_) => match run_probe(backend, &scope, &ws)? {
            Probe::Printed(text) => text,
            Probe::Nothing(why) => return Err(format!("the probe printed nothing usable: {why}")),
        },
    };
    let get = |k: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let capeff = get("capeff");
    let caps_zero = capeff.chars().all(|c| c == '0');
    let uid = get("uid");
    let userns = get("userns");
    let bounds = limits::bounds();
    let nproc = get("nproc");
    let in_cgroup = get("cgroup") != "0";
    Ok(vec![
        SelfTest {
            id: "caps",
            holds: caps_zero,
            detail: format!("effective capabilities inside: {capeff}"),
        },
        SelfTest {
            id: "userns",
            holds: uid != "0" && userns == "blocked",
            detail: format!(
                "uid inside {uid}; a further user namespace: {}",
                match userns.as_str() {
                    "blocked" => "refused",
                    "possible" => "possible",
                    _ => "not tested (no `unshare` program)",
                }
            ),
        },
        SelfTest {
            id: "git_readonly",
            holds: get("git_config") == "readonly"
                && get("git_hooks") == "readonly"
                && get("git_index") == "writable",
            detail: format!(
                ".git/config {}, .git/hooks {}, rest of .git {}",
                get("git_config"),
                get("git_hooks"),
                get("git_index")
            ),
        },
        SelfTest {
            id: "masks",
            holds: get("masks") == "held",
            detail: format!(
                "a planted ~/.ssh key with the workspace as $HOME: {}",
                if get("masks") == "held" {
                    "hidden"
                } else {
                    "READABLE"
                }
            ),
        },
        SelfTest {
            id: "host_sockets",
            holds: get("run_entries") == "0",
            detail: format!(
                "/run inside has {} entries (host /run, /var/run and /tmp are not mounted)",
                get("run_entries")
            ),
        },
        SelfTest {
            id: "bounds",
            holds: in_cgroup || (uid != "0" && nproc != "unlimited"),
            detail: format!(
                "{}; RLIMIT_NPROC inside {nproc}{}",
                bounds.describe(),
                if in_cgroup { "" } else { "; not in a cgroup" }
            ),
        },
    ])
}

/// What one run of the probe gave.
enum Probe {
    /// Its standard output, holding the `capeff=` line.
    Printed(String),
    /// It printed no `capeff=` line: how it ended and the start of its stderr.
    Nothing(String),
}

/// Runs the probe once under `backend`, bounded to 10 s.
fn run_probe(backend: &dyn Backend, scope: &Scope, ws: &std::path::Path) -> Result<Probe, String> {
    let launch = backend
        .launch(vec!["bash".into(), "-c".into(), PROBE.into()], scope)
        .map_err(|e| format!("the sandbox could not be set up: {e}"))?;
    let mut cmd = Command::new(launch.program());
    // A failed set-up prints bubblewrap's reason on stderr and no `capeff=` line: the
    // probe reports it as `Nothing` with that stderr.
    let _setup = launch
        .configure(&mut cmd)
        .map_err(|e| format!("the sandbox could not be set up: {e}"))?;
    let mut child = cmd
        .current_dir(ws)
        .env("CODESMITH_PROBE_HOME", ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the probe did not start: {e}"))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the probe did not finish within 10 s".to_string());
            }
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("the probe's output: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.lines().any(|l| {
        l.strip_prefix("capeff=")
            .is_some_and(|v| !v.trim().is_empty())
    }) {
        return Ok(Probe::Printed(text));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = codesmith_policy::visible_line(stderr.trim(), 300);
    Ok(Probe::Nothing(format!(
        "it ended with {} and wrote {:?} on stderr",
        out.status, stderr
    )))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A backend whose first `fail` runs die before the probe prints anything.
    #[derive(Debug)]
    struct Flaky {
        fail: u32,
        runs: AtomicU32,
    }

    impl Backend for Flaky {
        fn name(&self) -> &'static str {
            "flaky"
        }

        fn isolates(&self) -> bool {
            false
        }

        fn launch(
            &self,
            argv: Vec<OsString>,
            _scope: &Scope,
        ) -> std::io::Result<super::super::Launch> {
            let argv = if self.runs.fetch_add(1, Ordering::SeqCst) < self.fail {
                ["sh", "-c", "echo 'bwrap: no namespace' >&2; exit 3"]
                    .map(OsString::from)
                    .to_vec()
            } else {
                argv
            };
            Ok(super::super::Launch::plain(
                argv,
                std::env::vars_os().collect(),
            ))
        }
    }

    #[test]
    fn a_probe_that_did_not_run_is_tried_once_more_then_explained() {
        let once = Flaky {
            fail: 1,
            runs: AtomicU32::new(0),
        };
        let items = self_test(&once).expect("the second run prints");
        assert!(items.iter().any(|i| i.id == "caps"), "{items:?}");
        assert_eq!(once.runs.load(Ordering::SeqCst), 2);

        let always = Flaky {
            fail: u32::MAX,
            runs: AtomicU32::new(0),
        };
        let err = self_test(&always).expect_err("no run prints");
        assert!(err.contains("exit status: 3"), "{err}");
        assert!(err.contains("bwrap: no namespace"), "{err}");
        assert_eq!(always.runs.load(Ordering::SeqCst), 2);
    }
}
