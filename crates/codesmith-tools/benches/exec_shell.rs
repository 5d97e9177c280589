//! `exec_shell` harness overhead: `exec_shell {"command": "true"}` against spawning
//! `bash -c true` directly. Target: under 15 ms of overhead beyond the process.
//!
//! Run: `cargo bench -p codesmith-tools --bench exec_shell`.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use codesmith_tools::shell::ExecShell;
use codesmith_tools::{Tool, ToolContext};
use serde_json::json;

const RUNS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p90(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() * 9 / 10]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(ws.path().canonicalize().unwrap(), home.path().to_path_buf());

    let direct: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let out = std::process::Command::new("bash")
                .args(["-c", "true"])
                .current_dir(ws.path())
                .output()
                .unwrap();
            assert!(out.status.success());
            t.elapsed()
        })
        .collect();

    let harness: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let out = rt
                .block_on(ExecShell.call(&ctx, json!({"command": "true"})))
                .unwrap();
            assert_eq!(out.meta["exit_code"], 0);
            t.elapsed()
        })
        .collect();

    let (dm, hm) = (median(direct.clone()), median(harness.clone()));
    println!("exec_shell `true`, {RUNS} runs each");
    println!(
        "  bash -c true (direct spawn): median {:>8.3} ms  p90 {:>8.3} ms",
        dm.as_secs_f64() * 1e3,
        p90(direct).as_secs_f64() * 1e3
    );
    println!(
        "  exec_shell (harness):        median {:>8.3} ms  p90 {:>8.3} ms",
        hm.as_secs_f64() * 1e3,
        p90(harness).as_secs_f64() * 1e3
    );
    let overhead = hm.saturating_sub(dm);
    println!(
        "  harness overhead (median):   {:>8.3} ms  (target < 15 ms)",
        overhead.as_secs_f64() * 1e3
    );

    // For reference: the same call under the bubblewrap backend, when it works here.
    if let Some(bwrap) = codesmith_tools::sandbox::BwrapBackend::detect() {
        let sandbox = codesmith_tools::sandbox::Sandbox::new(std::sync::Arc::new(bwrap), false);
        let ctx = ToolContext::new(ws.path().canonicalize().unwrap(), home.path().to_path_buf())
            .with_sandbox(sandbox);
        let boxed: Vec<Duration> = (0..RUNS / 4)
            .map(|_| {
                let t = Instant::now();
                rt.block_on(ExecShell.call(&ctx, json!({"command": "true"})))
                    .unwrap();
                t.elapsed()
            })
            .collect();
        println!(
            "  exec_shell under bwrap:      median {:>8.3} ms  p90 {:>8.3} ms",
            median(boxed.clone()).as_secs_f64() * 1e3,
            p90(boxed).as_secs_f64() * 1e3
        );
        // CPU, as the harness pays it: this process plus everything it waited for (the
        // reaper, the command's set-up, bwrap), per call, minus what `bash -c true` costs
        // by itself.
        const CPU_RUNS: u32 = 100;
        let before = cpu_ticks();
        for _ in 0..CPU_RUNS {
            std::process::Command::new("bash")
                .args(["-c", "true"])
                .status()
                .unwrap();
        }
        let bash_only = cpu_ticks() - before;
        let before = cpu_ticks();
        for _ in 0..CPU_RUNS {
            rt.block_on(ExecShell.call(&ctx, json!({"command": "true"})))
                .unwrap();
        }
        let sandboxed = cpu_ticks() - before;
        let per_call = |ticks: f64| ticks * 10.0 / f64::from(CPU_RUNS);
        println!(
            "  CPU per call under bwrap:    {:>8.1} ms  (bash -c true alone {:.1} ms; harness and \
             sandbox set-up {:.1} ms; target <= 25 ms)",
            per_call(sandboxed),
            per_call(bash_only),
            per_call(sandboxed - bash_only)
        );
    } else {
        println!("  (bwrap unavailable: sandboxed figure skipped)");
    }
}

/// User plus system CPU of this process and its waited-for children, in clock ticks
/// (1/100 s), from `/proc/self/stat` (fields 14 to 17, see `proc(5)`).
fn cpu_ticks() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name may hold spaces; fields count from after its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, i.e. index 11.
    fields[11..15]
        .iter()
        .map(|f| f.parse::<f64>().unwrap())
        .sum()
}
