//! Resource bounds for sandboxed commands: a process count and a memory ceiling, so a fork
//! flood (`yes | xargs -P0 sh -c 'sleep 99'`) or a runaway allocation cannot take the
//! machine down.
//!
//! Two layers, each used where the host allows it:
//! - a cgroup per harness process (`codesmith-<pid>`, cgroup v1 `pids` and `memory`
//!   controllers, or cgroup v2 with those controllers delegated), which every sandboxed
//!   command's process joins before it executes `bwrap` (see `super::prelude`): `pids.max` = [`CGROUP_MAX_PIDS`] and a memory limit
//!   of half the machine's RAM, shared by all of the session's commands. This is the layer
//!   that holds for root, whose `RLIMIT_NPROC` the kernel does not enforce;
//! - `RLIMIT_NPROC` = [`MAX_PROCESSES`] and no core dumps (`setrlimit(2)`, set in the same
//!   place). Sandboxed commands never run as root (a root harness hands them to an
//!   unprivileged uid), so the kernel enforces the count for them too.
//!
//! Stale cgroups of harness processes that no longer exist are removed when a new one is
//! made.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Most processes a sandboxed command may have at once (`RLIMIT_NPROC` inside the sandbox;
/// enforced for non-root uids). `cargo test` of a large workspace needs well under 200.
pub const MAX_PROCESSES: u64 = 1024;

/// Most processes all of one harness's sandboxed commands may have at once (the cgroup's
/// `pids.max`).
pub const CGROUP_MAX_PIDS: u64 = 4096;

/// Memory floor for the cgroup limit on small machines (bytes).
const MIN_MEMORY: u64 = 2 << 30;

/// The bounds in force for this harness process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bounds {
    /// `cgroup.procs` files every command joins (pids, memory; one file for cgroup v2).
    procs_files: Vec<PathBuf>,
    /// `pids.max` of the cgroup, when a pids controller was set up.
    pub cgroup_pids: Option<u64>,
    /// Memory limit of the cgroup in bytes, when a memory controller was set up.
    pub cgroup_memory: Option<u64>,
}

/// The bounds for this process, set up once (cgroups made on first use).
pub fn bounds() -> &'static Bounds {
    static BOUNDS: OnceLock<Bounds> = OnceLock::new();
    BOUNDS.get_or_init(setup)
}

impl Bounds {
    /// The `cgroup.procs` files a sandboxed command joins before bubblewrap starts (see
    /// `super::prelude`); empty without cgroups.
    pub(crate) fn procs_cstrings(&self) -> Vec<std::ffi::CString> {
        use std::os::unix::ffi::OsStrExt;
        self.procs_files
            .iter()
            .filter_map(|f| std::ffi::CString::new(f.as_os_str().as_bytes()).ok())
            .collect()
    }

    /// One line for reports: what bounds the session's commands.
    pub fn describe(&self) -> String {
        let pids = match self.cgroup_pids {
            Some(n) => format!("cgroup pids.max {n}"),
            None if nix::unistd::geteuid().is_root() => {
                "no process-count bound for root (no writable pids cgroup)".to_string()
            }
            None => format!("RLIMIT_NPROC {MAX_PROCESSES}"),
        };
        let mem = match self.cgroup_memory {
            Some(b) => format!("cgroup memory {} MiB", b >> 20),
            None => "no memory bound (no writable memory cgroup)".to_string(),
        };
        format!("{pids}; {mem}")
    }
}

fn setup() -> Bounds {
    let mut bounds = Bounds::default();
    let name = format!("codesmith-{}", std::process::id());
    let memory = memory_limit();
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let path_of = |controller: &str| -> Option<String> {
        groups.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let ctrls = parts.next()?;
            let path = parts.next()?;
            ctrls
                .split(',')
                .any(|c| c == controller)
                .then(|| path.to_string())
        })
    };
    let v1 = Path::new("/sys/fs/cgroup/pids").is_dir();
    if v1 {
        if let Some(own) = path_of("pids") {
            let base = Path::new("/sys/fs/cgroup/pids").join(own.trim_start_matches('/'));
            if let Some(dir) = make_group(&base, &name, &[("pids.max", CGROUP_MAX_PIDS)]) {
                bounds.procs_files.push(dir.join("cgroup.procs"));
                bounds.cgroup_pids = Some(CGROUP_MAX_PIDS);
            }
        }
        if let Some(own) = path_of("memory") {
            let base = Path::new("/sys/fs/cgroup/memory").join(own.trim_start_matches('/'));
            if let Some(dir) = make_group(&base, &name, &[("memory.limit_in_bytes", memory)]) {
                bounds.procs_files.push(dir.join("cgroup.procs"));
                bounds.cgroup_memory = Some(memory);
            }
        }
    } else if let Some(own) = path_of("") {
        // cgroup v2: works only where pids and memory are delegated to our cgroup's
        // children.
        let base = Path::new("/sys/fs/cgroup").join(own.trim_start_matches('/'));
        if let Some(dir) = make_group(
            &base,
            &name,
            &[("pids.max", CGROUP_MAX_PIDS), ("memory.max", memory)],
        ) {
            bounds.procs_files.push(dir.join("cgroup.procs"));
            bounds.cgroup_pids = Some(CGROUP_MAX_PIDS);
            bounds.cgroup_memory = Some(memory);
        }
    }
    bounds
}

/// Makes (or reuses) `base/name` with `settings` written; `None` (and nothing left behind)
/// when any step fails. Removes stale `codesmith-<pid>` siblings first.
fn make_group(base: &Path, name: &str, settings: &[(&str, u64)]) -> Option<PathBuf> {
    sweep(base);
    let dir = base.join(name);
    if !dir.is_dir() {
        std::fs::create_dir(&dir).ok()?;
    }
    for (file, value) in settings {
        if std::fs::write(dir.join(file), value.to_string()).is_err() {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
    }
    Some(dir)
}

/// Removes empty `codesmith-<pid>` cgroups under `base` whose process is gone.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("codesmith-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            // Fails harmlessly while processes remain in it.
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Half of `MemTotal` from `/proc/meminfo`, at least [`MIN_MEMORY`].
fn memory_limit() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    (total_kib * 1024 / 2).max(MIN_MEMORY)
}
