//! Sanitizer throughput (targets: clean ASCII >= 200 MB/s, mixed
//! Unicode >= 50 MB/s). Run with `cargo bench -p codesmith-tools --bench sanitize`.
//! Prints MB/s (10^6 bytes per second), best of several runs.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::time::Instant;

use codesmith_tools::sanitize::sanitize_text;

const TARGET_BYTES: usize = 16 * 1024 * 1024;

fn repeat_to(sample: &str, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + sample.len());
    while s.len() < bytes {
        s.push_str(sample);
    }
    s
}

fn ascii_text() -> String {
    repeat_to(
        "fn main() {\n    let total: u64 = (1..=10).map(|x| x * x).sum();\n    println!(\"{total}\");\n}\n// A plain ASCII comment line with words, numbers 12345 and symbols <>&;\n",
        TARGET_BYTES,
    )
}

fn mixed_text() -> String {
    repeat_to(
        "Grüße aus München, naïve café. Привет, как дела? 日本語のテキストと漢字。 \
         한국어 문장입니다. Ελληνικά κείμενα. العربية نص. emoji 🎉🚀 and ASCII code x = y + 1;\n",
        TARGET_BYTES,
    )
}

fn dirty_text() -> String {
    repeat_to(
        "Normal text ｗｉｔｈ fullwidth, \u{202E}bidi\u{202C} and \u{200B}zero width, \
         tag\u{E0041}\u{E0042} smuggling, \u{FEFF}bom and \u{E000}private use. Привет 日本語.\n",
        TARGET_BYTES / 4,
    )
}

fn measure(name: &str, text: &str, rounds: usize) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let start = Instant::now();
        let (out, report) = sanitize_text(black_box(text));
        black_box((out.len(), report));
        best = best.min(start.elapsed().as_secs_f64());
    }
    let mbps = text.len() as f64 / best / 1e6;
    println!(
        "sanitize {name:<14} {:>6.1} MB input  best {:>8.3} ms  {:>9.1} MB/s",
        text.len() as f64 / 1e6,
        best * 1e3,
        mbps
    );
    mbps
}

fn main() {
    let ascii = measure("clean-ascii", &ascii_text(), 10);
    let mixed = measure("mixed-unicode", &mixed_text(), 5);
    let dirty = measure("dirty-unicode", &dirty_text(), 5);
    println!(
        "targets: clean ASCII >= 200 MB/s: {}; mixed Unicode >= 50 MB/s: {}; (dirty, no target: {dirty:.1} MB/s)",
        if ascii >= 200.0 { "met" } else { "MISSED" },
        if mixed >= 50.0 { "met" } else { "MISSED" },
    );
}
