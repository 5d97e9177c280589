//! Throughput of the terminal filters on typical inputs. Run with
//! `cargo bench -p codesmith-policy --bench terminal`. Prints MB/s (10^6 bytes per
//! second), best of several runs.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::time::Instant;

use codesmith_policy::{screen_text, terminal_safe};

const TARGET_BYTES: usize = 8 * 1024 * 1024;

fn repeat_to(sample: &str) -> String {
    let mut s = String::with_capacity(TARGET_BYTES + sample.len());
    while s.len() < TARGET_BYTES {
        s.push_str(sample);
    }
    s
}

fn measure(name: &str, text: &str, f: fn(&str) -> usize) {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        black_box(f(black_box(text)));
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{name:<34} {:>6.1} MB  best {:>8.3} ms  {:>9.1} MB/s",
        text.len() as f64 / 1e6,
        best * 1e3,
        text.len() as f64 / best / 1e6
    );
}

fn main() {
    let plain = repeat_to("   Compiling serde v1.0.229\n    Finished `dev` profile in 4.2s\n");
    let coloured = repeat_to(
        "\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.229\n\x1b[0m\x1b[1m\x1b[33mwarning\x1b[0m: unused\n",
    );
    let progress = repeat_to("\r\x1b[K[=====>      ] 45% 1.2 MB/s eta 0:03");
    let hostile = repeat_to(
        "Done.\x1b]52;c;ZWNobyBwd25lZA==\x07 See \x1b]8;;https://e/\x1b\\docs\x1b]8;;\x1b\\ \u{202e}x\r\n",
    );
    measure("screen_text plain (borrowed)", &plain, |t| {
        screen_text(t).len()
    });
    measure("screen_text coloured build log", &coloured, |t| {
        screen_text(t).len()
    });
    measure("screen_text progress bar", &progress, |t| {
        screen_text(t).len()
    });
    measure("terminal_safe plain (borrowed)", &plain, |t| {
        terminal_safe(t).len()
    });
    measure("terminal_safe hostile", &hostile, |t| {
        terminal_safe(t).len()
    });
}
