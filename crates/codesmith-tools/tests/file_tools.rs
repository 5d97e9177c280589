//! Behaviour of the file tools, asserted on the serialized envelope the model reads.
#![allow(clippy::unwrap_used, missing_docs)]

use std::fs;

use codesmith_tools::{Registry, ToolContext, envelope_json, register_file_tools};
use serde_json::{Value, json};

use crate::common;
use common::{Ws, ws};

fn ok(v: &Value) -> String {
    assert_eq!(v["ok"], true, "{v}");
    v["output"].as_str().unwrap().to_string()
}

/// Asserts a refusal envelope: code, message also inside details, a hint; returns the message.
fn refused(v: &Value, code: &str) -> String {
    assert_eq!(v["ok"], false, "{v}");
    let e = &v["error"];
    assert_eq!(e["code"], code, "{v}");
    assert!(!e["hint"].as_str().unwrap().is_empty());
    assert_eq!(e["details"]["message"], e["message"], "{v}");
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["error", "ok"]
    );
    e["message"].as_str().unwrap().to_string()
}

// ---------- read_file ----------

#[tokio::test]
async fn small_file_comes_back_verbatim_with_digest() {
    let w = ws();
    w.put("a.txt", "héllo 世界 🦀\nline2\n");
    let v = w.read("a.txt").await;
    assert_eq!(ok(&v), "héllo 世界 🦀\nline2\n");
    assert_eq!(v["meta"]["total_lines"], 2);
    assert_eq!(v["meta"]["sha256"].as_str().unwrap().len(), 64);
}

#[tokio::test]
async fn large_file_is_numbered_and_says_how_to_continue() {
    let w = ws();
    let body: String = (1..=450).map(|i| format!("line {i}\n")).collect();
    w.put("big.txt", &body);
    let v = w.read("big.txt").await;
    let out = ok(&v);
    assert!(out.starts_with("     1│ line 1\n     2│ line 2"), "{out}");
    assert!(out.contains("   200│ line 200"));
    assert!(!out.contains("line 201\n"));
    assert!(out.ends_with(
        "To continue, call read_file with path=\"big.txt\" start_line=201 max_lines=200]"
    ));
    assert_eq!(v["meta"]["truncated"], true);
    let v = w
        .call(
            "read_file",
            json!({"path": "big.txt", "start_line": 401, "max_lines": 500}),
        )
        .await;
    let out = ok(&v);
    assert!(out.starts_with("   401│ line 401"));
    assert!(out.ends_with("   450│ line 450"));
    assert_eq!(v["meta"]["truncated"], false);
    // Past the end: a sentinel, not an error.
    let v = w
        .call("read_file", json!({"path": "big.txt", "start_line": 900}))
        .await;
    let out = ok(&v);
    assert!(out.starts_with("[NO CONTENT]"));
    assert!(out.contains("450 lines"));
}

#[tokio::test]
async fn caps_are_500_lines_and_16_kb() {
    let w = ws();
    let body: String = (1..=2000).map(|i| format!("{i}\n")).collect();
    w.put("n.txt", &body);
    let v = w
        .call("read_file", json!({"path": "n.txt", "max_lines": 5000}))
        .await;
    assert_eq!(v["meta"]["end_line"], 500);
    let wide: String = (1..=300)
        .map(|i| format!("{i} {}\n", "x".repeat(100)))
        .collect();
    w.put("wide.txt", &wide);
    let v = w
        .call("read_file", json!({"path": "wide.txt", "max_lines": 300}))
        .await;
    let out = ok(&v);
    let visible = out.split("\n[Showing").next().unwrap();
    assert!(visible.len() <= 16 * 1024, "{}", visible.len());
    let end = v["meta"]["end_line"].as_u64().unwrap();
    assert!(end < 300);
    assert!(out.contains(&format!("start_line={} max_lines=300", end + 1)));
    // One line too long to show whole: cut with a note, and the page is not the whole file.
    w.put("one.txt", format!("{}\n", "é".repeat(100_000)));
    let v = w.call("read_file", json!({"path": "one.txt"})).await;
    let out = ok(&v);
    assert!(out.contains("[line cut at"), "{out}");
    // The command for the rest starts at the byte after the last one shown.
    let shown = out.matches('é').count();
    assert!(
        out.contains(&format!(
            "sed -n '1p' 'one.txt' | tail -c +{}`",
            shown * 2 + 1
        )),
        "{out}"
    );
    assert_eq!(v["meta"]["truncated"], true, "{v}");
    assert_eq!(v["meta"]["end_line"], 1, "{v}");
}

#[tokio::test]
async fn read_refusals() {
    let w = ws();
    refused(
        &w.call("read_file", json!({"path": "nope.txt"})).await,
        "NOT_FOUND",
    );
    refused(
        &w.call("read_file", json!({"path": "../x"})).await,
        "OUTSIDE_WORKSPACE",
    );
    refused(
        &w.call("read_file", json!({"file": "x"})).await,
        "INVALID_ARGUMENTS",
    );
    w.put(
        "bin.dat",
        [0x7fu8, b'E', b'L', b'F', 0x02, 0x01, 0x00, 0x00],
    );
    let m = refused(
        &w.call("read_file", json!({"path": "bin.dat"})).await,
        "INVALID_ARGUMENTS",
    );
    assert!(m.contains("is not text: 8 bytes, ELF executable"), "{m}");
    let f = fs::File::create(w.root.join("huge.log")).unwrap();
    f.set_len(11 * 1024 * 1024).unwrap();
    refused(
        &w.call("read_file", json!({"path": "huge.log"})).await,
        "TOO_LARGE",
    );
}

/// An image file is held to the one image cap (50 MB) with the one image sentence, as
/// `exec --image` is, not to the text tools' 10 MB; a text file keeps the text cap.
#[tokio::test]
async fn an_image_is_held_to_the_image_cap_not_the_text_cap() {
    let w = ws();
    let png = |name: &str, len: u64| {
        let path = w.root.join(name);
        fs::write(&path, b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR").unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap();
        path
    };
    let fat = png("fat.png", 3 * 1024 * 1024 * 1024);
    let m = refused(
        &w.call("read_file", json!({"path": "fat.png"})).await,
        "TOO_LARGE",
    );
    let attached = codesmith_tools::image::attach(&fat)
        .unwrap_err()
        .to_string();
    assert_eq!(
        m,
        format!(
            "{}.",
            codesmith_tools::image::too_large("\"fat.png\"", 3 * 1024 * 1024 * 1024)
        )
    );
    assert!(m.contains("52428800 bytes an image may be"), "{m}");
    assert!(!m.contains("text"), "{m}");
    assert!(
        attached.ends_with("52428800 bytes an image may be"),
        "{attached}"
    );
    // Between the two caps an image is read as an image (this session's model reads
    // none, so its type and size come back), not refused as too large a text.
    png("mid.png", 12 * 1024 * 1024);
    let out = ok(&w.call("read_file", json!({"path": "mid.png"})).await);
    assert!(
        out.contains("is an image (image/png, 12582912 bytes)"),
        "{out}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_escapes_are_refused_for_read_and_write() {
    let w = ws();
    let outside = w.root.parent().unwrap().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(&outside, w.root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), w.root.join("s.txt")).unwrap();
    refused(
        &w.call("read_file", json!({"path": "s.txt"})).await,
        "OUTSIDE_WORKSPACE",
    );
    refused(
        &w.call("read_file", json!({"path": "out/secret.txt"})).await,
        "OUTSIDE_WORKSPACE",
    );
    let v = w
        .call("write_file", json!({"path": "out/new.txt", "content": "x"}))
        .await;
    refused(&v, "OUTSIDE_WORKSPACE");
    assert!(!outside.join("new.txt").exists());
    let v = w
        .call(
            "edit_file",
            json!({"path": "s.txt", "search": "secret", "replace": "x"}),
        )
        .await;
    refused(&v, "OUTSIDE_WORKSPACE");
    assert_eq!(
        fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "secret"
    );
}

/// A workspace removed (or never there) is `NOT_FOUND` naming the workspace directory
/// and saying the user must bring it back, for every file and search tool: whether the
/// session had opened it before it went or not.
#[tokio::test]
async fn a_vanished_workspace_is_not_found_naming_it_for_every_tool() {
    let calls = [
        ("read_file", json!({"path": "a.txt"})),
        ("write_file", json!({"path": "b.txt", "content": "x"})),
        ("grep_files", json!({"pattern": "x"})),
        ("file_search", json!({"pattern": "*.txt"})),
        ("list_dir", json!({})),
        ("list_dir", json!({"path": "src"})),
    ];
    for opened_first in [false, true] {
        let w = ws();
        w.put("a.txt", "x\n");
        if opened_first {
            w.read("a.txt").await;
        }
        fs::remove_dir_all(&w.root).unwrap();
        for (tool, args) in &calls {
            let v = w.call(tool, args.clone()).await;
            let m = refused(&v, "NOT_FOUND");
            assert_eq!(
                m,
                format!(
                    "The workspace directory \"{}\" does not exist any more: it was removed \
                     or renamed while the session ran.",
                    w.root.display()
                ),
                "{tool} (opened first: {opened_first})"
            );
            assert_eq!(v["error"]["details"]["workspace"], true, "{v}");
            assert_eq!(v["error"]["details"]["os_error"], "not_found", "{v}");
            assert!(
                v["error"]["hint"]
                    .as_str()
                    .unwrap()
                    .contains("tell the user"),
                "{v}"
            );
        }
        assert!(!w.root.exists(), "nothing recreated the workspace");
    }
}

// ---------- write_file ----------

#[tokio::test]
async fn write_creates_parents_and_names_them() {
    let w = ws();
    let v = w
        .call(
            "write_file",
            json!({"path": "packags/core/src/lib.rs", "content": "pub fn a() {}\n"}),
        )
        .await;
    let out = ok(&v);
    assert!(out.contains("packags/"), "{out}");
    assert_eq!(
        v["meta"]["created_directories"],
        json!(["packags", "packags/core", "packags/core/src"])
    );
    assert_eq!(w.get("packags/core/src/lib.rs"), "pub fn a() {}\n");
}

#[tokio::test]
async fn overwrite_needs_a_read() {
    let w = ws();
    w.put("a.txt", "old\n");
    let v = w
        .call("write_file", json!({"path": "a.txt", "content": "new\n"}))
        .await;
    refused(&v, "ALREADY_EXISTS");
    let v = w
        .call(
            "write_file",
            json!({"path": "a.txt", "content": "new\n", "overwrite": true}),
        )
        .await;
    refused(&v, "NOT_READ");
    assert_eq!(w.get("a.txt"), "old\n");
    w.read("a.txt").await;
    let v = w
        .call(
            "write_file",
            json!({"path": "a.txt", "content": "new\n", "overwrite": true}),
        )
        .await;
    ok(&v);
    assert_eq!(w.get("a.txt"), "new\n");
    // Changed behind our back: stale.
    std::thread::sleep(std::time::Duration::from_millis(20));
    w.put("a.txt", "changed elsewhere\n");
    let v = w
        .call(
            "write_file",
            json!({"path": "a.txt", "content": "x\n", "overwrite": true}),
        )
        .await;
    refused(&v, "STALE_READ");
    // force_fresh is only for the one-shot command.
    let v = w
        .call(
            "write_file",
            json!({"path": "a.txt", "content": "x\n", "force_fresh": true}),
        )
        .await;
    refused(&v, "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn one_shot_context_accepts_force_fresh() {
    let w = ws();
    w.put("a.txt", "old\n");
    let ctx = ToolContext::one_shot(w.root.clone(), w.root.join("h"));
    let t = w.reg.get("write_file").unwrap();
    let args = json!({"path": "a.txt", "content": "new\n", "force_fresh": true});
    ok(&envelope_json(&t.call(&ctx, args).await));
    let t = w.reg.get("edit_file").unwrap();
    let args = json!({"path": "a.txt", "search": "new", "replace": "newer", "force_fresh": true});
    ok(&envelope_json(&t.call(&ctx, args).await));
    assert_eq!(w.get("a.txt"), "newer\n");
    // Without it, the refusal says how to get through in one-shot mode.
    let args = json!({"path": "a.txt", "search": "newer", "replace": "x"});
    let fresh_ctx = ToolContext::one_shot(w.root.clone(), w.root.join("h"));
    let v = envelope_json(&t.call(&fresh_ctx, args).await);
    refused(&v, "NOT_READ");
    assert!(v["error"]["hint"].as_str().unwrap().contains("force_fresh"));
}

#[tokio::test]
async fn write_under_a_file_is_refused_clearly() {
    let w = ws();
    w.put("a.txt", "x");
    let v = w
        .call("write_file", json!({"path": "a.txt/b.txt", "content": "y"}))
        .await;
    assert!(refused(&v, "INVALID_ARGUMENTS").contains("is a file"));
}

#[cfg(unix)]
#[tokio::test]
async fn writing_through_an_inside_symlink_keeps_the_link() {
    let w = ws();
    w.put("real.txt", "one\n");
    std::os::unix::fs::symlink(w.root.join("real.txt"), w.root.join("alias.txt")).unwrap();
    w.read("alias.txt").await;
    let v = w
        .call(
            "edit_file",
            json!({"path": "alias.txt", "search": "one", "replace": "two"}),
        )
        .await;
    assert!(ok(&v).contains("\"alias.txt\""));
    assert!(
        fs::symlink_metadata(w.root.join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(w.get("real.txt"), "two\n");
}

#[tokio::test]
async fn crlf_pages_show_no_carriage_returns() {
    let w = ws();
    let body: String = (1..=300).map(|i| format!("l{i}\r\n")).collect();
    w.put("w.txt", &body);
    let v = w
        .call("read_file", json!({"path": "w.txt", "max_lines": 2}))
        .await;
    assert!(ok(&v).starts_with("     1│ l1\n     2│ l2\n["), "{v}");
}

#[tokio::test]
async fn write_keeps_crlf_and_bom() {
    let w = ws();
    w.put("w.txt", "\u{feff}a\r\nb\r\n");
    w.read("w.txt").await;
    ok(&w
        .call(
            "write_file",
            json!({"path": "w.txt", "content": "x\ny\nz\n"}),
        )
        .await);
    assert_eq!(w.get("w.txt"), "\u{feff}x\r\ny\r\nz\r\n");
}

// ---------- edit_file ----------

async fn edit(w: &Ws, args: Value) -> Value {
    w.call("edit_file", args).await
}

#[tokio::test]
async fn edit_exact_and_digest_chain() {
    let w = ws();
    w.put("a.txt", "alpha\nbeta\ngamma\n");
    let r = w.read("a.txt").await;
    let sha = r["meta"]["sha256"].as_str().unwrap().to_string();
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "beta", "replace": "BETA", "sha256": sha}),
    )
    .await;
    let out = ok(&v);
    assert!(out.contains("line 2"), "{out}");
    assert_eq!(v["meta"]["match"], "exact");
    let new_sha = v["meta"]["sha256"].as_str().unwrap().to_string();
    assert_ne!(new_sha, sha);
    assert_eq!(w.get("a.txt"), "alpha\nBETA\ngamma\n");
    // Chain with the returned digest.
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "gamma", "replace": "G", "sha256": new_sha}),
    )
    .await;
    ok(&v);
    // An old digest is stale.
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "alpha", "replace": "A", "sha256": sha}),
    )
    .await;
    refused(&v, "STALE_READ");
    assert!(v["error"]["details"]["actual_sha256"].is_string());
    // A 12-digit prefix is a digest too: the current one passes, an old one is stale.
    let current = w.read("a.txt").await["meta"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "alpha", "replace": "A", "sha256": &sha[..12]}),
    )
    .await;
    refused(&v, "STALE_READ");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "alpha", "replace": "A", "sha256": &current[..12]}),
    )
    .await;
    ok(&v);
    // Shorter than 12 hex digits is no proof of freshness.
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "A", "replace": "a", "sha256": &current[..6]}),
    )
    .await;
    let hint = refused(&v, "INVALID_ARGUMENTS");
    assert!(!hint.is_empty());
}

#[tokio::test]
async fn edit_requires_fresh_read() {
    let w = ws();
    w.put("a.txt", "one\n");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "one", "replace": "two"}),
    )
    .await;
    refused(&v, "NOT_READ");
    w.read("a.txt").await;
    std::thread::sleep(std::time::Duration::from_millis(20));
    w.put("a.txt", "one!\n");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "one", "replace": "two"}),
    )
    .await;
    refused(&v, "STALE_READ");
    // A correct sha256 stands in for a read.
    let sha = codesmith_tools::fs::text::sha256_hex(b"one!\n");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "one", "replace": "two", "sha256": sha}),
    )
    .await;
    ok(&v);
    let v = edit(&w, json!({"path": "zz.txt", "search": "a", "replace": "b"})).await;
    refused(&v, "NOT_FOUND");
}

#[tokio::test]
async fn ambiguity_and_its_two_ways_out() {
    let w = ws();
    w.put("a.txt", "x = 1\ny = 2\nx = 1\nx = 1\n");
    w.read("a.txt").await;
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "x = 1", "replace": "x = 9"}),
    )
    .await;
    let m = refused(&v, "AMBIGUOUS_MATCH");
    assert!(m.contains("matched 3 locations"), "{m}");
    assert!(m.contains("replace_all=true"));
    assert!(m.contains("occurrence=N (1..=3)"));
    assert_eq!(v["error"]["details"]["matches"], 3);
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "x = 1", "replace": "x = 2", "occurrence": 2}),
    )
    .await;
    ok(&v);
    assert_eq!(w.get("a.txt"), "x = 1\ny = 2\nx = 2\nx = 1\n");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "x = 1", "replace": "x = 0", "replace_all": true}),
    )
    .await;
    assert_eq!(v["meta"]["replacements"], 2);
    assert_eq!(w.get("a.txt"), "x = 0\ny = 2\nx = 2\nx = 0\n");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "x = 0", "replace": "q", "occurrence": 5}),
    )
    .await;
    refused(&v, "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn argument_rules() {
    let w = ws();
    w.put("a.txt", "x\n");
    w.read("a.txt").await;
    let v = edit(&w, json!({"path": "a.txt", "search": "x", "replace": "x"})).await;
    assert!(refused(&v, "INVALID_ARGUMENTS").contains("identical"));
    let v = edit(&w, json!({"path": "a.txt", "search": "x", "replace": "y", "replace_all": true, "occurrence": 1})).await;
    assert!(refused(&v, "INVALID_ARGUMENTS").contains("cannot be used together"));
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "x", "replace": "y", "occurrence": 0}),
    )
    .await;
    refused(&v, "INVALID_ARGUMENTS");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search_start": "x", "replace": "y"}),
    )
    .await;
    assert!(refused(&v, "INVALID_ARGUMENTS").contains("together"));
    let v = edit(&w, json!({"path": "a.txt", "search": "x", "search_start": "x", "search_end": "x", "replace": "y"})).await;
    refused(&v, "INVALID_ARGUMENTS");
    let v = edit(
        &w,
        json!({"path": "a.txt", "search": "nothing like it", "replace": "y"}),
    )
    .await;
    refused(&v, "NO_MATCH");
    assert!(v["error"]["hint"].as_str().unwrap().contains("read_file"));
    // A near miss names the closest line.
    w.put("b.txt", "fn main() {\n    let total = compute(1, 2);\n}\n");
    w.read("b.txt").await;
    let args = json!({"path": "b.txt", "search": "let totl = compute(1, 2);", "replace": "y"});
    let v = edit(&w, args).await;
    refused(&v, "NO_MATCH");
    assert_eq!(v["error"]["details"]["closest_line"], 2, "{v}");
    assert!(v["error"]["hint"].as_str().unwrap().contains("line 2"));
}

#[tokio::test]
async fn cjk_and_emoji_are_never_split() {
    let w = ws();
    w.put(
        "c.txt",
        "日本語のテキスト🦀🦀\n中文「引号」\n日本語のテキスト🦀🦀\n",
    );
    w.read("c.txt").await;
    let v = edit(
        &w,
        json!({"path": "c.txt", "search": "🦀🦀\n中文", "replace": "🐍\n中文"}),
    )
    .await;
    ok(&v);
    assert_eq!(
        w.get("c.txt"),
        "日本語のテキスト🐍\n中文「引号」\n日本語のテキスト🦀🦀\n"
    );
    // Fallback scanning over multi-byte text.
    let v = edit(
        &w,
        json!({"path": "c.txt", "search": "    中文「引号」", "replace": "中文"}),
    )
    .await;
    assert_eq!(v["meta"]["match"], "leading_whitespace", "{v}");
    assert_eq!(
        w.get("c.txt"),
        "日本語のテキスト🐍\n中文\n日本語のテキスト🦀🦀\n"
    );
}

#[tokio::test]
async fn crlf_stays_crlf() {
    let w = ws();
    w.put("win.txt", "one\r\ntwo\r\nthree\r\n");
    w.read("win.txt").await;
    let v = edit(
        &w,
        json!({"path": "win.txt", "search": "one\ntwo\n", "replace": "uno\ndos\nextra\n"}),
    )
    .await;
    ok(&v);
    assert_eq!(w.get("win.txt"), "uno\r\ndos\r\nextra\r\nthree\r\n");
}

#[tokio::test]
async fn bom_is_kept_by_edits() {
    let w = ws();
    w.put("b.txt", "\u{feff}hello\n");
    w.read("b.txt").await;
    ok(&edit(
        &w,
        json!({"path": "b.txt", "search": "hello", "replace": "bye"}),
    )
    .await);
    assert_eq!(w.get("b.txt"), "\u{feff}bye\n");
}

#[tokio::test]
async fn tabs_vs_spaces_fallback_keeps_the_rest_of_the_file() {
    let w = ws();
    w.put("t.go", "func a() {\n\tx := 1\n\ty := 2\n}\n");
    w.read("t.go").await;
    let v = edit(&w, json!({"path": "t.go", "search": "    x := 1\n    y := 2", "replace": "\tx := 10\n\ty := 20"})).await;
    assert!(ok(&v).contains("leading whitespace"));
    assert_eq!(v["meta"]["match"], "leading_whitespace");
    assert_eq!(w.get("t.go"), "func a() {\n\tx := 10\n\ty := 20\n}\n");
    // Spaces in both search and replace: the replacement takes the file's tabs.
    let v = edit(
        &w,
        json!({"path": "t.go", "search": "    x := 10\n    y := 20", "replace": "    x := 11\n    if x > 0 {\n        y := 21\n    }"}),
    )
    .await;
    assert_eq!(v["meta"]["match"], "leading_whitespace", "{v}");
    assert_eq!(
        w.get("t.go"),
        "func a() {\n\tx := 11\n\tif x > 0 {\n\t\ty := 21\n\t}\n}\n"
    );
}

#[tokio::test]
async fn curly_quotes_match_straight_quotes() {
    let w = ws();
    w.put("q.py", "print(\"it's -- done\")\nother()\n");
    w.read("q.py").await;
    let v = edit(
        &w,
        json!({"path": "q.py", "search": "print(“it’s — done”)", "replace": "print(\"ok\")"}),
    )
    .await;
    assert_eq!(v["meta"]["match"], "punctuation", "{v}");
    assert!(ok(&v).contains("typographic"));
    assert_eq!(w.get("q.py"), "print(\"ok\")\nother()\n");
}

#[tokio::test]
async fn copied_line_number_prefixes_are_stripped() {
    let w = ws();
    w.put("n.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    w.read("n.rs").await;
    // This tool's own format, in search and replace.
    let v = edit(&w, json!({"path": "n.rs", "search": "     2│ fn b() {}\n     3│ fn c() {}", "replace": "     2│ fn b2() {}\n     3│ fn c2() {}"})).await;
    assert_eq!(v["meta"]["match"], "line_numbers", "{v}");
    assert_eq!(w.get("n.rs"), "fn a() {}\nfn b2() {}\nfn c2() {}\n");
    // cat -n.
    let v = edit(
        &w,
        json!({"path": "n.rs", "search": "     1\tfn a() {}", "replace": "fn a1() {}"}),
    )
    .await;
    ok(&v);
    // grep -n, single line, right line number.
    let v = edit(
        &w,
        json!({"path": "n.rs", "search": "3:fn c2() {}", "replace": "fn c3() {}"}),
    )
    .await;
    ok(&v);
    assert_eq!(w.get("n.rs"), "fn a1() {}\nfn b2() {}\nfn c3() {}\n");
    // Single line whose number points elsewhere: refused.
    let v = edit(
        &w,
        json!({"path": "n.rs", "search": "1:fn b2() {}", "replace": "x"}),
    )
    .await;
    refused(&v, "NO_MATCH");
    // Not strictly increasing: refused.
    let v = edit(
        &w,
        json!({"path": "n.rs", "search": "     3│ fn b2() {}\n     2│ fn c3() {}", "replace": "x"}),
    )
    .await;
    refused(&v, "NO_MATCH");
}

#[tokio::test]
async fn anchor_mode_replaces_a_block() {
    let w = ws();
    w.put(
        "a.rs",
        "fn keep() {}\n\nfn old() {\n    let a = 1;\n    let b = 2;\n}\n\nfn tail() {}\n",
    );
    w.read("a.rs").await;
    let v = edit(&w, json!({"path": "a.rs", "search_start": "fn old() {", "search_end": "}", "replace": "fn new() {}\n"})).await;
    ok(&v);
    assert_eq!(
        w.get("a.rs"),
        "fn keep() {}\n\nfn new() {}\n\nfn tail() {}\n"
    );
    let v = edit(
        &w,
        json!({"path": "a.rs", "search_start": "fn", "search_end": "}", "replace": "x"}),
    )
    .await;
    let m = refused(&v, "AMBIGUOUS_MATCH");
    assert!(m.contains("1..=3"), "{m}");
    let v = edit(
        &w,
        json!({"path": "a.rs", "search_start": "fn zzz", "search_end": "}", "replace": "x"}),
    )
    .await;
    refused(&v, "NO_MATCH");
}

#[tokio::test]
async fn syntax_check_refuses_regressions_only() {
    let w = ws();
    w.put("src/lib.rs", "fn a() {\n    let x = 1;\n}\n");
    w.read("src/lib.rs").await;
    let v = edit(
        &w,
        json!({"path": "src/lib.rs", "search": "let x = 1;\n}", "replace": "let x = 1;\n"}),
    )
    .await;
    let m = refused(&v, "PARSE_REJECTED");
    assert!(
        m.contains("valid Rust") && m.contains("NOT modified"),
        "{m}"
    );
    assert_eq!(v["error"]["details"]["language"], "Rust");
    assert_eq!(w.get("src/lib.rs"), "fn a() {\n    let x = 1;\n}\n");
    // An empty Rust file is valid.
    ok(&w
        .call("write_file", json!({"path": "src/lib.rs", "content": ""}))
        .await);
    // Already broken: a worse write still passes.
    w.put("broken.rs", "fn (\n");
    w.read("broken.rs").await;
    ok(&edit(
        &w,
        json!({"path": "broken.rs", "search": "fn (", "replace": "fn ((("}),
    )
    .await);
    // New broken file: passes.
    ok(&w
        .call("write_file", json!({"path": "new.json", "content": "{"}))
        .await);
    // JSON regression.
    w.put("c.json", "{\"a\": 1}\n");
    w.read("c.json").await;
    let v = edit(
        &w,
        json!({"path": "c.json", "search": "1}", "replace": "1,,}"}),
    )
    .await;
    let m = refused(&v, "PARSE_REJECTED");
    assert!(m.contains("valid JSON"));
    assert!(!m.contains(" at line "), "{m}");
    // TOML regression; Cargo.lock exempt.
    w.put("Cargo.toml", "[package]\nname = \"x\"\n");
    w.read("Cargo.toml").await;
    let v = edit(
        &w,
        json!({"path": "Cargo.toml", "search": "\"x\"", "replace": "\"x"}),
    )
    .await;
    refused(&v, "PARSE_REJECTED");
    w.put("Cargo.lock", "version = 3\n");
    w.read("Cargo.lock").await;
    ok(&edit(
        &w,
        json!({"path": "Cargo.lock", "search": "3", "replace": "[[["}),
    )
    .await);
}

#[tokio::test]
async fn rustfmt_normalises_clean_files_and_says_so() {
    if std::process::Command::new("rustfmt")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .is_err()
    {
        return;
    }
    let w = ws();
    w.put("f.rs", "fn a() {}\n");
    w.read("f.rs").await;
    let v = edit(
        &w,
        json!({"path": "f.rs", "search": "fn a() {}", "replace": "fn a()   {  let x=1; }"}),
    )
    .await;
    assert!(ok(&v).contains("rustfmt"), "{v}");
    assert_eq!(v["meta"]["formatted"], true);
    assert_eq!(w.get("f.rs"), "fn a() {\n    let x = 1;\n}\n");
    // A messy file keeps the layout it was given.
    w.put("m.rs", "fn   b( ) { }\n");
    w.read("m.rs").await;
    ok(&edit(
        &w,
        json!({"path": "m.rs", "search": "b( )", "replace": "c( )"}),
    )
    .await);
    assert_eq!(w.get("m.rs"), "fn   c( ) { }\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_both_survive() {
    let w = ws();
    let body: String = (0..200).map(|i| format!("value_{i} = {i}\n")).collect();
    w.put("c.txt", &body);
    w.read("c.txt").await;
    let mut handles = Vec::new();
    for i in 0..20 {
        let ctx = w.ctx.clone();
        let tool = w.reg.get("edit_file").unwrap();
        handles.push(tokio::spawn(async move {
            let args = json!({"path": "c.txt", "search": format!("value_{i} = {i}\n"), "replace": format!("value_{i} = edited\n")});
            envelope_json(&tool.call(&ctx, args).await)
        }));
    }
    for h in handles {
        ok(&h.await.unwrap());
    }
    let now = w.get("c.txt");
    for i in 0..20 {
        assert!(
            now.contains(&format!("value_{i} = edited\n")),
            "edit {i} lost"
        );
    }
}

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[tokio::test]
async fn a_file_with_nul_bytes_is_binary_even_when_valid_utf8() {
    let w = ws();
    // A tar archive of one text file: valid UTF-8, full of NUL bytes.
    let mut tar = vec![0u8; 512];
    tar[..9].copy_from_slice(b"notes.txt");
    tar[257..262].copy_from_slice(b"ustar");
    tar.extend_from_slice(b"needle in a text file\n");
    tar.resize(2048, 0);
    assert!(std::str::from_utf8(&tar).is_ok());
    w.put("notes.tar", &tar);
    let v = w.call("read_file", json!({"path": "notes.tar"})).await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("2048 bytes, tar archive"), "{m}");
    assert!(!m.contains("needle"), "{m}");
    let hint = v["error"]["hint"].as_str().unwrap();
    assert!(
        hint.contains("xxd notes.tar") && hint.contains("file notes.tar"),
        "{hint}"
    );
    assert_eq!(v["error"]["details"]["reason"], "binary");
    let v = edit(
        &w,
        json!({"path": "notes.tar", "search": "needle", "replace": "pin", "force_fresh": true}),
    )
    .await;
    refused(&v, "INVALID_ARGUMENTS");
    assert_eq!(fs::read(w.root.join("notes.tar")).unwrap(), tar);
    let v = w.call("grep_files", json!({"pattern": "needle"})).await;
    let out = ok(&v);
    assert!(out.starts_with("notes.tar: binary file matches"), "{out}");
    assert!(!out.contains("in a text file"), "{out}");
    assert_eq!(v["meta"]["binary_files_with_matches"], 1);
}

#[tokio::test]
async fn utf16_without_a_bom_is_read_and_edited_in_utf16() {
    let w = ws();
    let text = "[section]\r\nname=Zoë\r\nvalue=1\r\n";
    w.put("settings.ini", utf16le(text));
    let v = w.call("read_file", json!({"path": "settings.ini"})).await;
    let out = ok(&v);
    assert!(
        out.starts_with("[Decoded from UTF-16LE; edits are written back in UTF-16LE"),
        "{out}"
    );
    assert!(out.ends_with(text), "{out}");
    assert_eq!(v["meta"]["encoding"], "UTF-16LE");
    let v = edit(
        &w,
        json!({"path": "settings.ini", "search": "value=1", "replace": "value=2 ✓"}),
    )
    .await;
    ok(&v);
    let expected = utf16le(&text.replace("value=1", "value=2 ✓"));
    assert_eq!(fs::read(w.root.join("settings.ini")).unwrap(), expected);
}

#[tokio::test]
async fn utf16_and_utf32_with_a_bom_keep_encoding_and_bom() {
    let w = ws();
    let text = "alpha\nbeta\n";
    let be16: Vec<u8> = [0xFE, 0xFF]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
        .collect();
    let le32: Vec<u8> = [0xFF, 0xFE, 0, 0]
        .into_iter()
        .chain(text.chars().flat_map(|c| u32::from(c).to_le_bytes()))
        .collect();
    for (name, bytes, enc) in [("a16.txt", be16, "UTF-16BE"), ("a32.txt", le32, "UTF-32LE")] {
        w.put(name, &bytes);
        let v = w.call("read_file", json!({"path": name})).await;
        let out = ok(&v);
        assert!(
            out.starts_with(&format!("[Decoded from {enc} with a BOM")),
            "{out}"
        );
        let v = edit(
            &w,
            json!({"path": name, "search": "beta", "replace": "gamma"}),
        )
        .await;
        ok(&v);
        let after = fs::read(w.root.join(name)).unwrap();
        let v = w.call("read_file", json!({"path": name})).await;
        assert!(ok(&v).ends_with("alpha\ngamma\n"), "{v}");
        assert_eq!(&after[..2], &bytes[..2], "{name}: BOM kept");
        assert_eq!(
            after.len(),
            bytes.len() + (bytes.len() - if enc == "UTF-16BE" { 2 } else { 4 }) / text.len(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn latin1_is_read_with_a_note_and_only_ascii_edits_are_written() {
    let w = ws();
    let bytes = b"name = caf\xe9\nprice = 3\n".to_vec();
    w.put("menu.txt", &bytes);
    let v = w.call("read_file", json!({"path": "menu.txt"})).await;
    let out = ok(&v);
    assert!(out.contains("decoded as Windows-1252 (Latin-1)"), "{out}");
    assert!(out.contains("the first `é` on line 1"), "{out}");
    assert!(out.ends_with("name = café\nprice = 3\n"), "{out}");
    // An ASCII edit keeps every other byte exactly.
    ok(&edit(
        &w,
        json!({"path": "menu.txt", "search": "price = 3", "replace": "price = 4"}),
    )
    .await);
    assert_eq!(
        fs::read(w.root.join("menu.txt")).unwrap(),
        b"name = caf\xe9\nprice = 4\n"
    );
    // A non-ASCII addition would re-encode: refused, nothing written.
    w.call("read_file", json!({"path": "menu.txt"})).await;
    let v = edit(
        &w,
        json!({"path": "menu.txt", "search": "price = 4", "replace": "price = 4 €"}),
    )
    .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(
        m.contains("Windows-1252") && m.contains("`€`") && m.contains("NOT modified"),
        "{m}"
    );
    assert!(
        v["error"]["hint"].as_str().unwrap().contains("iconv"),
        "{v}"
    );
    assert_eq!(
        fs::read(w.root.join("menu.txt")).unwrap(),
        b"name = caf\xe9\nprice = 4\n"
    );
}

#[tokio::test]
async fn text_tools_never_write_what_read_file_would_call_binary() {
    let w = ws();
    // write_file with a NUL: refused, nothing created.
    let v = w
        .call(
            "write_file",
            json!({"path": "n.txt", "content": "abc\u{0}def"}),
        )
        .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(
        m.contains("NUL character (U+0000)") && m.contains("line 1, column 4"),
        "{m}"
    );
    assert_eq!(v["error"]["details"]["reason"], "binary_content");
    assert!(
        v["error"]["hint"].as_str().unwrap().contains("exec_shell"),
        "{v}"
    );
    assert!(!w.root.join("n.txt").exists());
    // An edit inserting U+0000: refused, the file unchanged.
    w.put("e.txt", "one\ntwo\n");
    w.read("e.txt").await;
    let v = edit(
        &w,
        json!({"path": "e.txt", "search": "two", "replace": "t\u{0}o"}),
    )
    .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("line 2, column 2"), "{m}");
    assert_eq!(w.get("e.txt"), "one\ntwo\n");
    // An apply_patch Add File line with a NUL: refused, nothing created.
    let v = w
        .call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: p.txt\n+ok\n+a\u{0}b\n*** End Patch\n"}),
        )
        .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("NUL character") && m.contains("line 2"), "{m}");
    assert!(!w.root.join("p.txt").exists());
    // Other controls are text in UTF-8 and are written (read_file reads them back).
    ok(&w
        .call(
            "write_file",
            json!({"path": "c.txt", "content": "bell\u{7}\n"}),
        )
        .await);
    w.read("c.txt").await;
    // In a file read as Windows-1252, controls that would make it binary are refused;
    // a few stay text.
    w.put("l.txt", b"caf\xe9\n".repeat(20));
    w.read("l.txt").await;
    let v = edit(
        &w,
        json!({"path": "l.txt", "search": "caf\u{e9}\ncaf", "replace": "\u{1}\u{2}\u{3}\u{1}\u{2}\u{3}", "occurrence": 1}),
    )
    .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("U+0001") && m.contains("Windows-1252"), "{m}");
    assert_eq!(
        fs::read(w.root.join("l.txt")).unwrap(),
        b"caf\xe9\n".repeat(20)
    );
    // A BOM-less UTF-16 file whose new text no longer shows the encoding's zero bytes.
    w.put("u.txt", utf16le("ab\n"));
    w.read("u.txt").await;
    let v = w
        .call(
            "write_file",
            json!({"path": "u.txt", "content": "\u{4e2d}\u{6587}\u{4e2d}\u{6587}", "overwrite": true}),
        )
        .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("UTF-16LE") && m.contains("recognisable"), "{m}");
    assert_eq!(fs::read(w.root.join("u.txt")).unwrap(), utf16le("ab\n"));
}

// ---------- search tools ----------

#[tokio::test]
async fn grep_decodes_what_read_file_decodes_with_decoded_line_numbers() {
    let w = ws();
    let text = "first line\nsecond café needle\n";
    let utf32le: Vec<u8> = text
        .chars()
        .flat_map(|c| u32::from(c).to_le_bytes())
        .collect();
    let utf32be_bom: Vec<u8> = [0u8, 0, 0xFE, 0xFF]
        .into_iter()
        .chain(text.chars().flat_map(|c| u32::from(c).to_be_bytes()))
        .collect();
    let utf16be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    w.put("a32le.txt", &utf32le);
    w.put("b32be.txt", &utf32be_bom);
    w.put("c16be.txt", &utf16be);
    w.put("d16le.txt", utf16le(text));
    w.put("e1252.txt", b"first line\nsecond caf\xe9 needle\n");
    w.put("f8.txt", text);
    let v = w
        .call("grep_files", json!({"pattern": "café needle"}))
        .await;
    let out = ok(&v);
    for (name, enc) in [
        ("a32le.txt", "UTF-32LE"),
        ("b32be.txt", "UTF-32BE"),
        ("c16be.txt", "UTF-16BE"),
        ("d16le.txt", "UTF-16LE"),
        ("e1252.txt", "Windows-1252"),
    ] {
        assert!(
            out.contains(&format!("{name}:2: second café needle")),
            "{out}"
        );
        assert!(out.contains(&format!("{name} ({enc})")), "{out}");
        assert_eq!(v["meta"]["decoded"][name], enc, "{v}");
        // read_file shows the same line under the same number.
        let r = w.call("read_file", json!({"path": name})).await;
        assert!(ok(&r).contains("second café needle"), "{r}");
    }
    assert!(out.contains("f8.txt:2: second café needle"), "{out}");
    assert!(v["meta"]["decoded"].get("f8.txt").is_none(), "{v}");
    assert_eq!(v["meta"]["total_matches"], 6, "{out}");
    assert_eq!(v["meta"]["binary_files_with_matches"], 0, "{out}");
}

#[tokio::test]
async fn grep_counts_matches_and_lines_separately() {
    let w = ws();
    w.put("a.txt", "needle needle needle\nhay\nneedle\n");
    let v = w.call("grep_files", json!({"pattern": "needle"})).await;
    ok(&v);
    assert_eq!(v["meta"]["total_matches"], 4, "{v}");
    assert_eq!(v["meta"]["matching_lines"], 2, "{v}");
    assert_eq!(v["meta"]["truncated"], false, "{v}");
    let v = w
        .call("grep_files", json!({"pattern": "needle", "max_results": 1}))
        .await;
    let out = ok(&v);
    assert!(
        out.contains("[4 matches on 2 lines in 1 file; showing the first 1 lines."),
        "{out}"
    );
    assert_eq!(v["meta"]["truncated"], true, "{v}");
}

#[tokio::test]
async fn grep_counts_then_truncates_and_skips() {
    let w = ws();
    for i in 0..30 {
        w.put(&format!("src/f{i:02}.rs"), "needle one\nhay\nneedle two\n");
    }
    w.put("node_modules/x.js", "needle\n");
    w.put("target/debug/x.rs", "needle\n");
    w.put("app.min.js", "needle\n");
    w.put(".gitignore", "ignored/\n");
    w.put("ignored/x.txt", "needle\n");
    w.put("bin.dat", b"needle\x00\x01\x02");
    let v = w.call("grep_files", json!({"pattern": "needle"})).await;
    let out = ok(&v);
    // 60 lines, and the binary file counted once without its bytes.
    assert_eq!(v["meta"]["total_matches"], 61, "{out}");
    assert_eq!(v["meta"]["shown"], 61);
    assert_eq!(v["meta"]["truncated"], false);
    assert!(out.starts_with("bin.dat: binary file matches"), "{out}");
    assert!(
        out.contains("\nsrc/f00.rs:1: needle one\nsrc/f00.rs:3: needle two"),
        "{out}"
    );
    let (hits, note) = out.split_once("\n[Not searched: ").unwrap();
    for skipped in ["node_modules", "target", "min.js", "ignored"] {
        assert!(!hits.contains(skipped), "{skipped}: {out}");
        assert!(note.contains(skipped), "{skipped}: {note}");
    }
    assert!(!out.contains('\u{0}'), "{out}");
    assert_eq!(v["meta"]["skipped"]["excluded_dir"], 2, "{v}");
    assert_eq!(v["meta"]["skipped"]["minified"], 1, "{v}");
    assert_eq!(v["meta"]["skipped"]["ignored"], 1, "{v}");
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "NEEDLE", "case_insensitive": true, "max_results": 5}),
        )
        .await;
    assert_eq!(v["meta"]["total_matches"], 61);
    assert_eq!(v["meta"]["shown"], 5);
    assert_eq!(v["meta"]["truncated"], true);
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "needle", "max_results": 1000}),
        )
        .await;
    assert_eq!(v["meta"]["shown"], 61);
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "two", "path": "src", "glob": "f0*.rs"}),
        )
        .await;
    assert_eq!(v["meta"]["total_matches"], 10);
    refused(
        &w.call("grep_files", json!({"pattern": "(unclosed"})).await,
        "INVALID_ARGUMENTS",
    );
    refused(
        &w.call("grep_files", json!({"pattern": "x", "path": "nowhere"}))
            .await,
        "NOT_FOUND",
    );
    refused(
        &w.call("grep_files", json!({"pattern": "x", "path": "/etc"}))
            .await,
        "OUTSIDE_WORKSPACE",
    );
}

#[tokio::test]
async fn grep_skips_files_over_10_mb() {
    let w = ws();
    w.put("small.log", "needle\n");
    let big = "needle\n".repeat(11 * 1024 * 1024 / 7 + 1);
    w.put("big.log", big);
    let v = w.call("grep_files", json!({"pattern": "needle"})).await;
    assert_eq!(v["meta"]["total_matches"], 1, "{v}");
    assert_eq!(
        ok(&v),
        "small.log:1: needle\n[Not searched: 1 file over 10 MB (big.log). Pass include_ignored: \
         true to search them.]"
    );
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "needle", "include_ignored": true, "max_results": 2}),
        )
        .await;
    assert_eq!(v["meta"]["files_with_matches"], 2, "{v}");
}

/// A minified bundle: 165 KB on one line, the match near the end.
fn minified_bundle() -> String {
    let mut s = "var a=function(){return 1};".repeat(6_000);
    s.push_str("var apiKey=\"sk-live\";");
    s.push_str(&"b();".repeat(200));
    s.push('\n');
    s
}

#[tokio::test]
async fn a_match_on_a_long_line_is_shown_in_a_window_with_its_column() {
    let w = ws();
    let bundle = minified_bundle();
    assert!(bundle.len() > 160_000);
    w.put("web/bundle.js", &bundle);
    let v = w.call("grep_files", json!({"pattern": "apiKey"})).await;
    let out = ok(&v);
    let column = bundle.find("apiKey").unwrap() + 1;
    let prefix = format!("web/bundle.js:1:{column}: …");
    assert!(out.starts_with(&prefix), "{}", &out[..out.len().min(400)]);
    assert!(out.contains("var apiKey=\"sk-live\";b();"), "{out}");
    assert!(out.ends_with('…'), "{out}");
    let shown = out.strip_prefix(&prefix).unwrap();
    let n = shown.chars().count();
    assert!((200..=215).contains(&n), "{n}: {shown}");
    // A short line stays whole and has no column.
    w.put("short.js", "let apiKey = 1;\n");
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "apiKey", "path": "short.js"}),
        )
        .await;
    assert_eq!(ok(&v), "short.js:1: let apiKey = 1;");
}

#[tokio::test]
async fn skipped_files_are_named_by_rule_and_an_explicit_glob_finds_them() {
    let w = ws();
    w.put("web/app.min.js", "var apiKey=1;\n");
    w.put("web/vendor.min.js", "var apiKey=2;\n");
    w.put("web/app.js", "let apiKey = 3;\n");
    w.put(".gitignore", "dist-local/\n*.log\n");
    w.put("dist-local/out.js", "apiKey\n");
    w.put("debug.log", "apiKey\n");
    w.put("node_modules/pkg/index.js", "apiKey\n");
    let v = w.call("grep_files", json!({"pattern": "apiKey"})).await;
    let out = ok(&v);
    assert!(out.starts_with("web/app.js:1: let apiKey = 3;\n"), "{out}");
    assert!(
        out.contains(
            "2 files skipped as minified (`*.min.js`) (web/app.min.js, web/vendor.min.js)"
        ),
        "{out}"
    );
    assert!(
        out.contains("2 paths ignored by .gitignore/.ignore (debug.log, dist-local/)"),
        "{out}"
    );
    assert!(out.contains("1 directory excluded by name"), "{out}");
    assert!(out.contains("Pass include_ignored: true"), "{out}");
    // An explicit glob is an explicit request.
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "apiKey", "glob": "*.min.js"}),
        )
        .await;
    let out = ok(&v);
    assert!(
        out.starts_with("web/app.min.js:1: var apiKey=1;\nweb/vendor.min.js:1: var apiKey=2;"),
        "{out}"
    );
    assert!(!out.contains("minified"), "{out}");
    let v = w
        .call("file_search", json!({"pattern": "**/*.min.js"}))
        .await;
    assert!(
        ok(&v).starts_with("web/app.min.js\nweb/vendor.min.js\n[Not searched: 1 path ignored"),
        "{v}"
    );
    // file_search names what it left out that the pattern would have matched.
    let v = w.call("file_search", json!({"pattern": "*.js"})).await;
    let out = ok(&v);
    assert!(out.starts_with("web/app.js\n[Not searched: "), "{out}");
    assert!(out.contains("2 files skipped as minified"), "{out}");
    assert!(out.contains("dist-local/"), "{out}");
    assert!(out.contains("web/app.min.js"), "{out}");
    // include_ignored: everything but .git.
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "apiKey", "include_ignored": true}),
        )
        .await;
    assert_eq!(v["meta"]["files_with_matches"], 6, "{v}");
    assert!(!ok(&v).contains("Not searched"));
    let v = w
        .call(
            "file_search",
            json!({"pattern": "*.js", "include_ignored": true}),
        )
        .await;
    assert_eq!(v["meta"]["total_matches"], 5, "{v}");
}

#[tokio::test]
async fn a_clean_search_says_nothing_about_skipping() {
    let w = ws();
    w.put("a.txt", "x\n");
    let v = w.call("grep_files", json!({"pattern": "x"})).await;
    assert_eq!(ok(&v), "a.txt:1: x");
    assert!(v["meta"].get("skipped").is_none(), "{v}");
}

#[tokio::test]
async fn grep_default_cap_is_100() {
    let w = ws();
    let body: String = (0..250).map(|i| format!("hit {i}\n")).collect();
    w.put("many.txt", &body);
    let v = w.call("grep_files", json!({"pattern": "hit"})).await;
    assert_eq!(v["meta"]["total_matches"], 250);
    assert_eq!(v["meta"]["shown"], 100);
    assert!(ok(&v).contains("250 matches on 250 lines"));
}

#[tokio::test]
async fn file_search_clamps_and_counts() {
    let w = ws();
    for i in 0..250 {
        w.put(&format!("d/f{i:03}.rs"), "");
    }
    w.put("d/readme.md", "");
    w.put("node_modules/pkg/index.rs", "");
    let v = w.call("file_search", json!({"pattern": "*.rs"})).await;
    assert_eq!(v["meta"]["total_matches"], 250);
    assert_eq!(v["meta"]["shown"], 20);
    assert!(ok(&v).starts_with("d/f000.rs\nd/f001.rs"));
    let v = w
        .call("file_search", json!({"pattern": "*.rs", "max_results": 0}))
        .await;
    assert_eq!(v["meta"]["shown"], 1);
    let v = w
        .call(
            "file_search",
            json!({"pattern": "*.rs", "max_results": 999}),
        )
        .await;
    assert_eq!(v["meta"]["shown"], 200);
    let v = w.call("file_search", json!({"pattern": "d/*.md"})).await;
    assert_eq!(
        ok(&v),
        "d/readme.md\n[Not searched: 1 directory excluded by name (node_modules). Pass \
         include_ignored: true to search them.]"
    );
    refused(
        &w.call("file_search", json!({"pattern": "[bad"})).await,
        "INVALID_ARGUMENTS",
    );
}

#[tokio::test]
async fn list_dir_with_depth() {
    let w = ws();
    w.put("src/main.rs", "");
    w.put("src/a/b.rs", "");
    w.put("README.md", "");
    w.put("node_modules/x/y.js", "");
    let v = w.call("list_dir", json!({})).await;
    assert_eq!(ok(&v), "README.md\nnode_modules/ (not listed)\nsrc/");
    let v = w.call("list_dir", json!({"path": "src", "depth": 2})).await;
    assert_eq!(ok(&v), "a/\na/b.rs\nmain.rs");
    refused(
        &w.call("list_dir", json!({"path": "README.md"})).await,
        "INVALID_ARGUMENTS",
    );
    // Links and pipes say what they are.
    std::os::unix::fs::symlink(".", w.root.join("src/loop")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        w.root.join("src/pipe"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let v = w.call("list_dir", json!({"path": "src"})).await;
    assert_eq!(
        ok(&v),
        "a/\nloop -> . (symlink)\nmain.rs\npipe (named pipe)"
    );
}

// ---------- catalogue ----------

#[test]
fn catalogue_is_sorted_stable_and_teaches() {
    let mut reg = Registry::new();
    register_file_tools(&mut reg);
    let specs = reg.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let again = serde_json::to_string(&reg.specs()).unwrap();
    assert_eq!(serde_json::to_string(&specs).unwrap(), again);
    let instead = [
        ("read_file", "cat"),
        ("write_file", "heredoc"),
        ("edit_file", "sed -i"),
        ("grep_files", "grep -r"),
        ("file_search", "find"),
        ("list_dir", "ls"),
    ];
    for (name, word) in instead {
        let s = specs.iter().find(|s| s.name == name).unwrap();
        assert!(s.description.contains(word), "{name} should mention {word}");
        assert!(
            s.description.contains("Examples: {"),
            "{name} needs examples"
        );
    }
}

#[test]
fn every_code_serializes_in_the_envelope() {
    use codesmith_tools::{ErrorCode, Refusal};
    let codes = [
        (ErrorCode::NotFound, "NOT_FOUND"),
        (ErrorCode::AlreadyExists, "ALREADY_EXISTS"),
        (ErrorCode::NoMatch, "NO_MATCH"),
        (ErrorCode::AmbiguousMatch, "AMBIGUOUS_MATCH"),
        (ErrorCode::OutsideWorkspace, "OUTSIDE_WORKSPACE"),
        (ErrorCode::StaleRead, "STALE_READ"),
        (ErrorCode::NotRead, "NOT_READ"),
        (ErrorCode::ParseRejected, "PARSE_REJECTED"),
        (ErrorCode::PatchFailed, "PATCH_FAILED"),
        (ErrorCode::InvalidArguments, "INVALID_ARGUMENTS"),
        (ErrorCode::TooLarge, "TOO_LARGE"),
        (ErrorCode::Denied, "DENIED"),
        (ErrorCode::Timeout, "TIMEOUT"),
        (ErrorCode::Internal, "INTERNAL"),
    ];
    for (code, name) in codes {
        let v = envelope_json(&Err(Refusal::new(code, "m", "h").with("n", 1)));
        assert_eq!(
            v,
            json!({"ok": false, "error": {"code": name, "message": "m", "hint": "h", "details": {"n": 1, "message": "m"}}})
        );
    }
}

#[tokio::test]
async fn utf8_with_a_stray_byte_reads_as_utf8_is_searchable_and_is_not_rewritten() {
    let w = ws();
    let bytes = b"h\xc3\xa9llo w\xc3\xb6rld\nbad \xff byte\nmore \xc3\xbc\n".to_vec();
    w.put("notes.txt", &bytes);
    let out = ok(&w.read("notes.txt").await);
    assert!(
        out.contains("1 malformed byte sequence") && out.contains("line 2"),
        "{out}"
    );
    assert!(
        out.ends_with("héllo wörld\nbad \u{fffd} byte\nmore ü\n"),
        "{out}"
    );
    let g = ok(&w.call("grep_files", json!({"pattern": "wörld"})).await);
    assert!(g.contains("notes.txt:1: héllo wörld"), "{g}");
    // Writing the text back would turn the stray byte into U+FFFD: refused.
    let v = edit(
        &w,
        json!({"path": "notes.txt", "search": "more ü", "replace": "more ä"}),
    )
    .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("NOT modified"), "{m}");
    assert_eq!(fs::read(w.root.join("notes.txt")).unwrap(), bytes);
}

#[tokio::test]
async fn grep_in_a_fifo_is_refused_not_reported_empty() {
    let w = ws();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        w.root.join("pipe"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let v = w
        .call("grep_files", json!({"pattern": "x", "path": "pipe"}))
        .await;
    let m = refused(&v, "INVALID_ARGUMENTS");
    assert!(m.contains("not a regular file"), "{m}");
}

#[tokio::test]
async fn cr_only_files_stay_cr_only() {
    let w = ws();
    w.put("mac.txt", "one\rtwo\rthree\r");
    w.read("mac.txt").await;
    ok(&edit(
        &w,
        json!({"path": "mac.txt", "search": "one\ntwo", "replace": "1\n2\n2b"}),
    )
    .await);
    assert_eq!(w.get("mac.txt"), "1\r2\r2b\rthree\r");
}

/// A private key is found by what `read_file` and `grep_files` show, wherever it lies in
/// the file: after the first 64 KiB, in a UTF-16 file, inside a JSON string (a service
/// account key under the name the cloud console gives it), and in a log too large to
/// decode that only `include_ignored` searches.
#[tokio::test]
async fn a_private_key_anywhere_in_a_file_is_masked_and_withheld() {
    const BODY: &str = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";
    let key =
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n-----END OPENSSH PRIVATE KEY-----\n");
    let w = ws();
    w.put(
        "late.txt",
        format!("{}{key}", ("y".repeat(99) + "\n").repeat(700)),
    );
    let utf16: Vec<u8> = std::iter::once(0xFEFFu16)
        .chain(key.encode_utf16())
        .flat_map(u16::to_le_bytes)
        .collect();
    w.put("wide.txt", utf16);
    w.put(
        "my-project-1234-abcdef.json",
        serde_json::to_string_pretty(&json!({"type": "service_account", "private_key": key}))
            .unwrap(),
    );
    for path in ["late.txt", "wide.txt", "my-project-1234-abcdef.json"] {
        let v = w
            .call(
                "read_file",
                json!({"path": path, "start_line": 1, "max_lines": 500}),
            )
            .await;
        let whole = v.to_string();
        assert_eq!(v["meta"]["masked"], "a private key", "{path}: {whole:.300}");
        assert!(!whole.contains(BODY), "{path}: {whole}");
        let v = w
            .call(
                "read_file",
                json!({"path": path, "start_line": 700, "max_lines": 10}),
            )
            .await;
        assert!(!v.to_string().contains(BODY), "{path}: {v}");
    }
    w.put(
        "huge.log",
        format!("{}{key}", ("z".repeat(99) + "\n").repeat(110_000)),
    );
    let v = w
        .call(
            "grep_files",
            json!({"pattern": "b3Bl", "include_ignored": true}),
        )
        .await;
    assert!(!v.to_string().contains(BODY), "{v}");
    assert_eq!(v["meta"]["skipped"]["secret"], 4, "{v}");
}
