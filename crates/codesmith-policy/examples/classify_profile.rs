//! A driver for instruction-count profiling of the classifier:
//! `cargo build --release -p codesmith-policy --example classify_profile`, then
//! `valgrind --tool=callgrind target/release/examples/classify_profile N 'git status -s'`.
//! Decides each command N times (workspace `/home/dev/proj`, no rules, mode `suggest`).
//! Running it with N = 1 and N = 101 and dividing the difference of the two totals by 100
//! gives the instructions one decision costs after the first (which builds the parser).

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let times: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let commands: Vec<String> = args.collect();
    let rules = codesmith_policy::Rules::new();
    for command in &commands {
        for _ in 0..times {
            black_box(codesmith_policy::decide(
                black_box(command),
                "/home/dev/proj",
                &rules,
                codesmith_policy::ApprovalMode::AutoEdit,
            ));
        }
    }
}
