//! Classifier speed: a typical command must be decided in under 50 µs.
//! Run with `cargo bench -p codesmith-policy --bench classifier`; prints
//! the mean time per call for each command and the worst mean.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use codesmith_policy::{ApprovalMode, Rules, classify_command, decide};

const WS: &str = "/home/dev/proj";
const BUDGET: Duration = Duration::from_micros(50);

const COMMANDS: &[&str] = &[
    "git status -s",
    "cargo test -p codesmith-policy -- --nocapture",
    "ls -la src && cat README.md | grep -n foo | head -5",
    "ls -la src && cat README.md",
    "cat README.md | grep -n foo",
    "ls -la src",
    "cat README.md",
    "find . -name '*.rs' -exec grep -l TODO {} \\;",
    "bash -c 'cd sub && make test' > build.log 2>&1",
    "curl -fsSL https://example.com/install.sh | sh",
];

/// Runs `f` in `BATCHES` batches of `PER_BATCH` calls and returns the
/// median and the best batch mean per call. The machine is shared, so the
/// best batch is the figure least disturbed by other processes.
fn measure(mut f: impl FnMut()) -> (Duration, Duration) {
    const BATCHES: usize = 25;
    const PER_BATCH: u32 = 400;
    for _ in 0..PER_BATCH {
        f();
    }
    let mut means: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..PER_BATCH {
                f();
            }
            start.elapsed() / PER_BATCH
        })
        .collect();
    means.sort();
    (means[BATCHES / 2], means[0])
}

fn main() {
    let rules = Rules::from_sources(
        Some("[[rule]]\npattern = \"git status\"\ndecision = \"allow\"\n[[rule]]\npattern = \"git push\"\ndecision = \"deny\"\n"),
        None,
    )
    .map(|(rules, _)| rules)
    .unwrap_or_default();
    let mut worst_best = Duration::ZERO;
    let mut worst_median = Duration::ZERO;
    println!(
        "{:<56} {:>22} {:>22}",
        "command", "classify median/best", "decide median/best"
    );
    for command in COMMANDS {
        let (c_median, c_best) = measure(|| {
            black_box(classify_command(black_box(command), WS));
        });
        let (d_median, d_best) = measure(|| {
            black_box(decide(
                black_box(command),
                WS,
                &rules,
                ApprovalMode::AutoEdit,
            ));
        });
        worst_best = worst_best.max(c_best).max(d_best);
        worst_median = worst_median.max(c_median).max(d_median);
        println!(
            "{command:<56} {:>9.2} / {:>6.2} µs {:>9.2} / {:>6.2} µs",
            micros(c_median),
            micros(c_best),
            micros(d_median),
            micros(d_best)
        );
    }
    println!(
        "worst median {:.2} µs, worst best-batch {:.2} µs (budget {} µs per decision)",
        micros(worst_median),
        micros(worst_best),
        BUDGET.as_micros()
    );
    if worst_best > BUDGET {
        println!("OVER BUDGET");
        std::process::exit(1);
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
