//! The process tree a shell command owns, found and killed however it detached.
//!
//! On Linux a command runs under its own reaper ([`super::reaper`]), a child subreaper:
//! whatever the command starts stays a descendant of the reaper by parent link, whether it
//! moved to another session (`setsid`), process group, or cleared its environment
//! (`env -i`), because an orphan is re-parented to the reaper. The sweep therefore kills
//! the reaper's descendants and leaves the reaper itself, which then reaps and exits.
//!
//! Two more ways to find a command's processes back this up (and are the only ones where
//! there is no reaper): a unique marker in its environment ([`MARKER_ENV`]), which every
//! descendant inherits unless it clears its environment, and the command's process group.
//! [`kill_tree`] walks `/proc` for all of them and sends `SIGKILL` until none is left.
//!
//! CodeSmith itself is a child subreaper too ([`become_child_subreaper`]), so a process
//! whose reaper died is re-parented here rather than to init, and killed members
//! re-parented here are reaped. Only processes found in a command's tree are ever reaped,
//! so the exit statuses of children spawned elsewhere (git, the shell itself) are never
//! stolen.
//!
//! Limits: see [`super::reaper`]; where there is no reaper (not Linux), a descendant that
//! clears its environment and also leaves the command's process group and parent chain
//! cannot be attributed. Linux only: elsewhere only the process group is killed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that marks every process of one command.
pub(crate) const MARKER_ENV: &str = "CODESMITH_COMMAND_ID";

/// Longest [`kill_tree`] keeps sweeping before it reports what survived.
const KILL_DEADLINE: Duration = Duration::from_millis(1_500);

/// Makes this process the child subreaper of everything it starts (Linux
/// `PR_SET_CHILD_SUBREAPER`): processes orphaned inside a command's tree are re-parented
/// here rather than to init, where [`kill_tree`] finds and reaps them. Call it once, early,
/// in the binary. Returns false where the system does not support it.
pub fn become_child_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// A fresh marker value: this process's pid, a counter and the time, so two commands of
/// one process, or of two processes, never share one.
pub(crate) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{n}-{nanos}", std::process::id())
}

/// What [`kill_tree`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct KillReport {
    /// Processes sent `SIGKILL`: pid → command name (from `/proc/PID/comm`).
    pub(crate) killed: BTreeMap<i32, String>,
    /// Processes of the tree still alive when the sweep gave up.
    pub(crate) survivors: BTreeMap<i32, String>,
}

impl KillReport {
    /// "3 processes (bash, setsid, sleep)", or "no process".
    pub(crate) fn describe(&self) -> String {
        if self.killed.is_empty() {
            return "no process".to_string();
        }
        let mut names: Vec<&str> = self.killed.values().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        let n = self.killed.len();
        format!(
            "{n} process{} ({})",
            if n == 1 { "" } else { "es" },
            names.join(", ")
        )
    }
}

/// One process as `/proc/PID/stat` describes it.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    /// Session id.
    session: i32,
    zombie: bool,
    name: String,
    /// Start time in clock ticks after boot (`/proc/PID/stat` field 22).
    start: u64,
}

/// The start time (clock ticks after boot) of `pid`, to pass to [`kill_tree`] as `since`:
/// nothing that started earlier can carry a marker set when `pid` was spawned. 0 when
/// unknown (then every process is checked).
pub(crate) fn start_time(pid: Option<i32>) -> u64 {
    pid.and_then(read_stat).map_or(0, |p| p.start)
}

/// Kills every process of the command marked `marker`. `root` is the command's top process
/// (its process group id) while it has not been reaped; then its group and its
/// descendants by parent link count too. When `reaper` is true the root is the command's
/// reaper, which is spared: it holds what is orphaned during the sweep, and its owner
/// tells it to finish afterwards. Only processes started at `since` or later (see
/// [`start_time`]) are checked for the marker. Sweeps until no live member is left
/// (bounded by [`KILL_DEADLINE`]), reaping the members re-parented to this process. The
/// root itself is never reaped here: its owner waits for it.
///
/// Orphans count too: when something of a command kills its reaper, or makes it stop
/// being a subreaper (a debugger can), what the reaper held is re-parented to this
/// process (a child subreaper), where neither parent link nor group leads back to the
/// command. So children of this process started at `since` or later that are in another
/// session or process group than this process, and are not reapers, are members. A
/// process of a command never becomes such a child while its reaper works (orphans go to
/// the reaper), and CodeSmith starts no process of its own in another session or group
/// except reapers, so nothing else matches.
pub(crate) fn kill_tree(root: Option<i32>, reaper: bool, marker: &str, since: u64) -> KillReport {
    sweep(root, reaper, marker, since, true)
}

/// [`kill_tree`] for a process started without a reaper (a hook): its group, the
/// processes carrying `marker` (`setsid` ones included, wherever they were re-parented)
/// and their descendants; never other children of this process, so processes of the
/// same kind running beside it are left alone.
pub(crate) fn kill_marked(root: Option<i32>, marker: &str, since: u64) -> KillReport {
    sweep(root, false, marker, since, false)
}

fn sweep(root: Option<i32>, reaper: bool, marker: &str, since: u64, orphans: bool) -> KillReport {
    let mut report = KillReport::default();
    let deadline = Instant::now() + KILL_DEADLINE;
    let me = std::process::id() as i32;
    let needle = format!("{MARKER_ENV}={marker}");
    let orphans_of = read_stat(me).filter(|_| orphans);
    loop {
        let members = members(root, needle.as_bytes(), since, orphans_of.as_ref());
        let spared = root.filter(|_| reaper);
        let live: Vec<&Proc> = members
            .iter()
            .filter(|p| !p.zombie && Some(p.pid) != spared)
            .collect();
        for p in &live {
            if signal_kill(p.pid) {
                report.killed.entry(p.pid).or_insert_with(|| p.name.clone());
            }
        }
        let mut reaped_any = false;
        for p in members
            .iter()
            .filter(|p| p.ppid == me && Some(p.pid) != root)
        {
            reaped_any |= reap(p.pid);
        }
        if live.is_empty() && !reaped_any {
            break;
        }
        if Instant::now() >= deadline {
            report.survivors = live.iter().map(|p| (p.pid, p.name.clone())).collect();
            break;
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    report
}

/// The processes of the command: marked ones, and (with a live `root`) its group and
/// descendants by parent link; and the children of `orphans_of` (this process) that a
/// reaper left it (see [`kill_tree`]).
fn members(root: Option<i32>, needle: &[u8], since: u64, orphans_of: Option<&Proc>) -> Vec<Proc> {
    let all = scan();
    let mut chosen: BTreeMap<i32, Proc> = BTreeMap::new();
    let reaper_name = super::reaper::REAPER_NAME.to_str().unwrap_or_default();
    for p in &all {
        let in_group = root.is_some_and(|r| p.pid == r || p.pgrp == r);
        let orphan = orphans_of.is_some_and(|me| {
            p.ppid == me.pid
                && p.start >= since
                && (p.session != me.session || p.pgrp != me.pgrp)
                && p.name != reaper_name
                && !carries_other_marker(p.pid, needle)
        });
        if in_group || orphan || (!p.zombie && p.start >= since && has_marker(p.pid, needle)) {
            chosen.insert(p.pid, p.clone());
        }
    }
    // Descendants by parent link of anything already chosen (a child forked after the
    // marker check, or one that cleared its environment but kept its parent).
    loop {
        let before = chosen.len();
        for p in &all {
            if !chosen.contains_key(&p.pid) && chosen.contains_key(&p.ppid) {
                chosen.insert(p.pid, p.clone());
            }
        }
        if chosen.len() == before {
            break;
        }
    }
    chosen.into_values().collect()
}

#[cfg(target_os = "linux")]
fn scan() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn scan() -> Vec<Proc> {
    Vec::new()
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp …`; the name may hold spaces and
/// parentheses, so the fields are read after the last `)`.
fn read_stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    // Fields 7..=21 lie between the session and the start time.
    let start = fields.nth(15)?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        session,
        zombie: state == "Z" || state == "X",
        name,
        start,
    })
}

fn has_marker(pid: i32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle))
}

/// Whether `pid` carries a marker other than `needle`: a process of another command or
/// of a hook (which sets its own marker and its own process group), never an orphan of
/// this one.
fn carries_other_marker(pid: i32, needle: &[u8]) -> bool {
    let prefix = format!("{MARKER_ENV}=");
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
        env.split(|&b| b == 0)
            .any(|var| var.starts_with(prefix.as_bytes()) && var != needle)
    })
}

fn signal_kill(pid: i32) -> bool {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .is_ok()
}

/// Reaps `pid` if it is a finished child of this process; true when it was reaped.
fn reap(pid: i32) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    matches!(
        waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..))
    )
}

/// Live processes marked `marker` (tests and diagnostics).
#[cfg(test)]
pub(crate) fn marked(marker: &str) -> Vec<i32> {
    let needle = format!("{MARKER_ENV}={marker}");
    scan()
        .into_iter()
        .filter(|p| !p.zombie && has_marker(p.pid, needle.as_bytes()))
        .map(|p| p.pid)
        .collect()
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let me = std::process::id() as i32;
        let p = read_stat(me).unwrap();
        assert_eq!(p.pid, me);
        assert!(!p.zombie);
        assert!(p.ppid > 0);
        assert!(p.start > 0);
        let parent = read_stat(p.ppid).unwrap();
        assert!(parent.start <= p.start, "a parent starts before its child");
    }

    #[test]
    fn a_setsid_double_fork_is_found_by_its_marker_and_killed() {
        let marker = new_marker();
        let status = std::process::Command::new("bash")
            .args([
                "-c",
                "setsid bash -c '(sleep 30 &) ; sleep 30' >/dev/null 2>&1 & disown",
            ])
            .env(MARKER_ENV, &marker)
            .stdin(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        while marked(&marker).len() < 2 && start.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            marked(&marker).len() >= 2,
            "the detached sleeps did not start"
        );
        let report = kill_tree(None, false, &marker, 0);
        assert!(report.killed.len() >= 2, "{report:?}");
        assert!(report.survivors.is_empty(), "{report:?}");
        assert!(marked(&marker).is_empty());
    }
}
