//! File-tool benchmarks (bench binary, `harness = false`): prints figures against the
//! targets below.
//!
//! - grep_files over a generated 100k-file tree vs `rg` on the same tree (target: ≤ 1.5×);
//! - edit_file on a 50k-line file (target: < 20 ms);
//! - the syntax check on a 20k-line Rust file (target: < 30 ms).
//!
//! Run: `cargo bench -p codesmith-tools --bench tools`. The tree is generated once under
//! the system temp directory and reused. The `rg` comparison is skipped when `rg` is not
//! on PATH.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use codesmith_tools::search::grep_count;
use codesmith_tools::syntax_check::syntax;
use codesmith_tools::{Registry, ToolContext, envelope_json, register_file_tools};
use serde_json::json;

const FILES: usize = 100_000;
const PATTERN: &str = "needle_[0-9]+";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn tree() -> PathBuf {
    let root = std::env::temp_dir().join("codesmith-bench-tree-100k");
    let marker = root.join(".complete");
    if marker.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let t = Instant::now();
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}/s{:02}", i / 1000, (i / 100) % 10));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut body = String::with_capacity(600);
        for l in 0..12 {
            body.push_str(&format!(
                "fn item_{i}_{l}(x: u32) -> u32 {{ x * {l} + {i} }}\n"
            ));
        }
        if i % 97 == 0 {
            body.push_str(&format!("// needle_{i} marks this file\n"));
        }
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
    std::fs::write(&marker, "").unwrap();
    eprintln!(
        "generated {FILES} files in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    root
}

fn bench_grep() {
    let root = tree();
    let expected = FILES.div_ceil(97);
    let _ = grep_count(&root, PATTERN).unwrap();
    let have_rg = Command::new("rg").arg("--version").output().is_ok();
    let rg = |flag: &str| {
        let t = Instant::now();
        let out = Command::new("rg")
            .args([flag, "--no-messages", PATTERN])
            .arg(&root)
            .output()
            .unwrap();
        let el = t.elapsed();
        let text = String::from_utf8_lossy(&out.stdout);
        let total: usize = if flag == "-c" {
            text.lines()
                .filter_map(|l| l.rsplit(':').next()?.parse::<usize>().ok())
                .sum()
        } else {
            text.lines().count()
        };
        assert_eq!(total, expected);
        el
    };
    if have_rg {
        rg("-n");
    }
    // Interleaved runs, so machine load affects both sides alike.
    let (mut ours, mut rg_n, mut rg_c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..7 {
        let t = Instant::now();
        let n = grep_count(&root, PATTERN).unwrap();
        ours.push(t.elapsed());
        assert_eq!(n, expected);
        if have_rg {
            rg_n.push(rg("-n"));
            rg_c.push(rg("-c"));
        }
    }
    let ours = median(ours);
    println!(
        "grep_files, {FILES} files: {:.1} ms (median of 7)",
        ms(ours)
    );
    if !have_rg {
        println!("rg not installed: comparison skipped");
        return;
    }
    let (rg_n, rg_c) = (median(rg_n), median(rg_c));
    println!(
        "rg -n (same output: path, line number, text), same tree: {:.1} ms; ratio {:.2} (target <= 1.5)",
        ms(rg_n),
        ours.as_secs_f64() / rg_n.as_secs_f64()
    );
    println!(
        "rg -c (counts only), same tree: {:.1} ms; ratio {:.2}",
        ms(rg_c),
        ours.as_secs_f64() / rg_c.as_secs_f64()
    );
}

fn bench_edit(rt: &tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let body: String = (0..50_000)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(root.join("big.txt"), &body).unwrap();
    let ctx = ToolContext::new(root.clone(), root.join(".home"));
    let mut reg = Registry::new();
    register_file_tools(&mut reg);
    let read = reg.get("read_file").unwrap();
    let edit = reg.get("edit_file").unwrap();
    rt.block_on(async {
        read.call(&ctx, json!({"path": "big.txt"})).await.unwrap();
        let mut times = Vec::new();
        for k in 0..21 {
            let line = 1_000 + k * 2_000;
            let args = json!({
                "path": "big.txt",
                "search": format!("line {line}: the quick"),
                "replace": format!("line {line}: the slow"),
            });
            let t = Instant::now();
            let out = edit.call(&ctx, args).await;
            times.push(t.elapsed());
            assert_eq!(envelope_json(&out)["ok"], true);
        }
        println!(
            "edit_file, 50k-line file (read, match, atomic write with fsync): {:.2} ms median of 21 \
             (target < 20)",
            ms(median(times))
        );
    });
    let bytes = std::fs::read(root.join("big.txt")).unwrap();
    let mut writes = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        codesmith_tools::fs::atomic::write_atomic(&root.join("copy.txt"), &bytes).unwrap();
        writes.push(t.elapsed());
    }
    println!(
        "  of which the atomic write alone ({} bytes, temp + fsync + rename): {:.2} ms median of 11",
        bytes.len(),
        ms(median(writes))
    );
}

fn rust_source(lines: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.lines().count() < lines {
        s.push_str(&format!(
            "/// Item {i}.\npub fn item_{i}(v: &[u32]) -> u32 {{\n    let mut acc = 0u32;\n    for x in v {{\n        if *x % 2 == 0 {{\n            acc = acc.wrapping_add(*x * {i});\n        }}\n    }}\n    acc\n}}\n\n"
        ));
        i += 1;
    }
    s
}

fn bench_syntax_check() {
    let old = rust_source(20_000);
    let new = old.replacen("acc = 0u32", "acc = 1u32", 1);
    let path = Path::new("src/big.rs");
    let mut check_times = Vec::new();
    let mut parse_times = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        syntax::check_edit(path, "src/big.rs", Some(&old), &new).unwrap();
        check_times.push(t.elapsed());
        let t = Instant::now();
        syntax::check(syntax::Lang::Rust, &new).unwrap();
        parse_times.push(t.elapsed());
    }
    println!(
        "syntax check, {}-line Rust file, one-function edit: {:.2} ms per check (only the touched \
         section is parsed, old and new); full-file parse {:.2} ms; median of 11 (target < 30)",
        new.lines().count(),
        ms(median(check_times)),
        ms(median(parse_times))
    );
}

/// Edits inside one item spanning the whole file. Inside `mod big { … }`, `impl Big { … }`
/// and `trait Big { … }` the body's items are sections of their own, so only the touched
/// item is re-parsed (old and new), as for top-level items. A second figure per container
/// shows the whole-file parse it avoids, and one the rejection of a broken edit, whose
/// letter is built from a full parse.
fn bench_syntax_check_whole_file() {
    let body = rust_source(20_000);
    for (label, wrapped) in [
        ("mod big { … }", format!("mod big {{\n{body}}}\n")),
        (
            "impl Big { … }",
            format!("struct Big;\nimpl Big {{\n{body}}}\n"),
        ),
        (
            "trait Big { … }",
            format!("trait Big {{\n{}}}\n", body.replace("pub fn", "fn")),
        ),
    ] {
        let mut cur = wrapped;
        let path = Path::new("src/big.rs");
        let mut times = Vec::new();
        for k in 0..6 {
            let next = cur.replacen(
                &format!("acc.wrapping_add(*x * {k})"),
                &format!("acc.wrapping_sub(*x * {k})"),
                1,
            );
            assert_ne!(next, cur);
            let t = Instant::now();
            syntax::check_edit(path, "src/big.rs", Some(&cur), &next).unwrap();
            times.push(t.elapsed());
            cur = next;
        }
        let first = times.remove(0);
        let broken = cur.replacen("acc = 0u32;", "acc = (0u32;", 1);
        let t = Instant::now();
        let refusal = syntax::check_edit(path, "src/big.rs", Some(&cur), &broken).unwrap_err();
        let rejected = t.elapsed();
        assert!(
            refusal.message.contains("unclosed `(`"),
            "{}",
            refusal.message
        );
        println!(
            "syntax check, edit inside {label} spanning 20k lines: first {:.2} ms, chained {:.2} ms \
             (median of 5; target < 30); a rejected edit with its letter {:.1} ms",
            ms(first),
            ms(median(times)),
            ms(rejected)
        );
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let want = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if want("syntax") {
        bench_syntax_check();
        bench_syntax_check_whole_file();
    }
    if want("edit") {
        bench_edit(&rt);
    }
    if want("grep") {
        bench_grep();
    }
}
