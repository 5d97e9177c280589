//! Turn snapshot figures: how long a snapshot and a restore take on a
//! synthetic workspace. Run with `cargo bench -p codesmith-engine --bench snapshot`.
//! Sizes can be set with `SNAPSHOT_BENCH_FILES` (default 2000 files of 4 KiB).

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::Instant;

use codesmith_engine::snapshot::{SideRepo, SnapshotSettings};

fn populate(ws: &Path, files: usize) {
    let body = "x".repeat(4096);
    for i in 0..files {
        let dir = ws.join(format!("src/m{:02}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// {i}\n{body}\n")).unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/big.bin"), vec![0u8; 8 << 20]).unwrap();
}

async fn timed<T>(label: &str, f: impl std::future::Future<Output = T>) -> T {
    let start = Instant::now();
    let out = f.await;
    println!(
        "{label:<44} {:>8.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    out
}

fn main() {
    let files: usize = std::env::var("SNAPSHOT_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    populate(&ws, files);
    let home = tmp.path().join("home");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let repo = SideRepo::new(&SnapshotSettings::default(), &home, &ws);
        println!("workspace: {files} files of 4 KiB (+ 8 MiB ignored)");
        timed("first snapshot (creates the side repo)", repo.take("s", 1))
            .await
            .unwrap();
        timed("snapshot, nothing changed", repo.take("s", 2))
            .await
            .unwrap();
        for i in 0..10 {
            std::fs::write(ws.join(format!("src/m{:02}/f{i}.rs", i % 40)), "edited\n").unwrap();
        }
        std::fs::write(ws.join("new.rs"), "new\n").unwrap();
        timed("snapshot after 10 edits and 1 new file", repo.take("s", 3))
            .await
            .unwrap();
        timed("preview of restoring turn 2", repo.preview("s", 2))
            .await
            .unwrap();
        let report = timed(
            "restore turn 2 (10 rewritten, 1 removed)",
            repo.restore("s", 2),
        )
        .await
        .unwrap();
        assert_eq!(report.restored.len(), 10);
        assert_eq!(report.removed, ["new.rs"]);
    });
}
