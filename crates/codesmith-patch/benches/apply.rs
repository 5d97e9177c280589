//! Prints how long planning takes on a large file (release build: `cargo bench -p codesmith-patch`).

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use codesmith_patch::plan;

fn time<T>(label: &str, runs: u32, f: impl Fn() -> T) {
    f();
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(f());
    }
    let per = start.elapsed() / runs;
    println!("{label}: {:.3} ms per call", per.as_secs_f64() * 1000.0);
}

fn main() {
    let lines: Vec<String> = (0..50_000)
        .map(|i| format!("    let value_{i} = compute({i});"))
        .collect();
    let file = lines.join("\n") + "\n";
    // 20 hunks, each stated 10 lines off its real position.
    let mut unified = String::from("--- a/big.rs\n+++ b/big.rs\n");
    for k in 0..20 {
        let at = 1_000 + k * 2_400;
        unified.push_str(&format!("@@ -{},7 +{},7 @@\n", at + 1 - 10, at + 1 - 10));
        for line in &lines[at..at + 3] {
            unified.push_str(&format!(" {line}\n"));
        }
        unified.push_str(&format!("-{}\n+    let changed_{k} = 0;\n", lines[at + 3]));
        for line in &lines[at + 4..at + 7] {
            unified.push_str(&format!(" {line}\n"));
        }
    }
    let read = |_: &str| Some(file.clone());
    assert!(plan(&unified, &read).is_ok());
    time("unified, 20 hunks, 50k-line file, offset 10", 20, || {
        plan(&unified, &read)
    });

    let tail = &lines[49_990..49_993];
    let envelope = format!(
        "*** Begin Patch\n*** Update File: big.rs\n@@\n {}\n-{}\n+changed\n {}\n*** End Patch\n",
        tail[0], tail[1], tail[2]
    );
    assert!(plan(&envelope, &read).is_ok());
    time(
        "envelope, 1 hunk near the end of a 50k-line file",
        20,
        || plan(&envelope, &read),
    );

    let failing = "*** Begin Patch\n*** Update File: big.rs\n@@\n a\n-b\n c\n d\n*** End Patch\n";
    assert!(plan(failing, &read).is_err());
    time(
        "failing hunk (all passes + best guess), 50k lines",
        5,
        || plan(failing, &read),
    );
}
