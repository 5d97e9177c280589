//! Looking for processes through `/proc` (Linux), for tests that prove nothing outlived
//! its command.

use std::time::{Duration, Instant};

/// Live (not zombie) processes whose command line is exactly `argv`, read from
/// `/proc/PID/cmdline` and `/proc/PID/stat`. Empty where there is no `/proc`.
pub fn live_processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.get(s.rfind(')')? + 1..)?
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
            });
        if cmdline == want && state.is_some_and(|s| s != "Z" && s != "X") {
            found.push(pid);
        }
    }
    found
}

/// Waits until no live process runs `argv`, at most `limit` (polling every 20 ms);
/// returns the processes still running then.
pub fn survivors_after(argv: &[&str], limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let live = live_processes(argv);
        if live.is_empty() || Instant::now() >= deadline {
            return live;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
