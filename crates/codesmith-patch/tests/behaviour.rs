//! Behaviour of the public API: parsing both syntaxes, fuzz, offsets, line endings, file
//! operations, failure messages and rollback.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::fs;

use codesmith_patch::{
    FileChange, MatchLevel, ParseErrorKind, PatchError, PatchFormat, apply_to_dir, parse, plan,
};

fn files(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run(patch: &str, fs: &HashMap<String, String>) -> Result<Vec<FileChange>, PatchError> {
    plan(patch, &|p: &str| fs.get(p).cloned())
}

fn updated(patch: &str, path: &str, content: &str) -> String {
    let fs = files(&[(path, content)]);
    match run(patch, &fs).unwrap().remove(0) {
        FileChange::Update { new_content, .. } => new_content,
        other => panic!("not an update: {other:?}"),
    }
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---------------------------------------------------------------- fuzz and offsets

#[test]
fn unified_hunk_with_wrong_line_number_is_found_within_the_window() {
    let old = numbered(100);
    // The header claims line 10; the text is at line 40 (30 lines off, inside the window).
    let patch = "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n line 39\n-line 40\n+LINE 40\n line 41\n";
    let fs = files(&[("f", &old)]);
    let changes = run(patch, &fs).unwrap();
    let FileChange::Update {
        new_content, hunks, ..
    } = &changes[0]
    else {
        panic!()
    };
    assert!(new_content.contains("line 39\nLINE 40\nline 41\n"));
    assert_eq!(hunks[0].line, 39);
    assert_eq!(hunks[0].offset, Some(29));
    assert_eq!(hunks[0].level, MatchLevel::Exact);
}

#[test]
fn offset_found_by_one_hunk_steers_the_next() {
    // `dup` appears at lines 21 and 71. Hunk 2 states line 41: alone it would pick 21 (20 away)
    // over 71 (30 away), but hunk 1 matched 30 lines later than stated, so 41 + 30 = 71 wins.
    let mut lines: Vec<String> = (1..=100).map(|i| format!("line {i}")).collect();
    lines[20] = "dup".into();
    lines[70] = "dup".into();
    let old = lines.join("\n") + "\n";
    let patch = "--- a/f\n+++ b/f\n\
        @@ -5,1 +5,1 @@\n-line 35\n+LINE 35\n\
        @@ -41,1 +41,1 @@\n-dup\n+DUP\n";
    let new = updated(patch, "f", &old);
    let new_lines: Vec<&str> = new.lines().collect();
    assert_eq!(new_lines[34], "LINE 35");
    assert_eq!(new_lines[20], "dup");
    assert_eq!(new_lines[70], "DUP");
}

#[test]
fn beyond_the_window_only_a_unique_match_is_taken() {
    let old = numbered(200);
    let patch = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-line 150\n+X\n";
    assert!(updated(patch, "f", &old).contains("\nX\n"));
    let dup = format!("{}dup\n{}dup\n", numbered(100), numbered(100));
    let patch = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-dup\n+X\n";
    let err = run(patch, &files(&[("f", &dup)])).unwrap_err();
    let PatchError::HunkFailed(f) = err else {
        panic!("{err:?}")
    };
    assert!(f.hint.contains("occur 2 times"), "{}", f.hint);
}

#[test]
fn envelope_hunks_search_forward_from_the_previous_one() {
    let old = "a\nx\nb\nx\nc\n";
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n b\n-x\n+Y\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "a\nx\nb\nY\nc\n");
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n-x\n+1\n@@\n-x\n+2\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "a\n1\nb\n2\nc\n");
}

#[test]
fn anchors_pick_the_right_occurrence() {
    let old = "fn one() {\n    body();\n}\nfn two() {\n    body();\n}\n";
    let patch = "*** Begin Patch\n*** Update File: f.rs\n@@ fn two() {\n-    body();\n+    other();\n*** End Patch";
    assert_eq!(
        updated(patch, "f.rs", old),
        "fn one() {\n    body();\n}\nfn two() {\n    other();\n}\n"
    );
    // Stacked anchors narrow step by step.
    let old = "impl A {\n fn f() {\n  x\n }\n}\nimpl B {\n fn f() {\n  x\n }\n}\n";
    let patch = "*** Begin Patch\n*** Update File: f.rs\n@@ impl B {\n@@ fn f() {\n-  x\n+  y\n*** End Patch";
    assert!(updated(patch, "f.rs", old).ends_with("impl B {\n fn f() {\n  y\n }\n}\n"));
}

#[test]
fn pure_addition_goes_after_the_anchor_or_at_the_end() {
    let old = "a\nb\nc\n";
    let patch = "*** Begin Patch\n*** Update File: f\n@@ a\n+new\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "a\nnew\nb\nc\n");
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n+new\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "a\nb\nc\nnew\n");
    let patch = "--- a/f\n+++ b/f\n@@ -1,0 +2,1 @@\n+new\n";
    assert_eq!(updated(patch, "f", old), "a\nnew\nb\nc\n");
}

#[test]
fn whitespace_passes_match_but_keep_the_files_context_bytes() {
    let old = "def f():  \n\treturn 1\n";
    let patch = "*** Begin Patch\n*** Update File: f.py\n@@\n def f():\n-    return 1\n+\treturn 2\n*** End Patch";
    let fs = files(&[("f.py", old)]);
    let FileChange::Update {
        new_content, hunks, ..
    } = run(patch, &fs).unwrap().remove(0)
    else {
        panic!()
    };
    // The context line keeps its trailing spaces: only the removed line was replaced.
    assert_eq!(new_content, "def f():  \n\treturn 2\n");
    assert_eq!(hunks[0].level, MatchLevel::Whitespace);
}

#[test]
fn trailing_blank_context_is_dropped_when_it_does_not_match() {
    let old = "a\nb";
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+c\n\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "a\nc\n");
}

// ---------------------------------------------------------------- line endings, encodings

#[test]
fn crlf_files_stay_crlf() {
    let old = "one\r\ntwo\r\nthree\r\n";
    let patch =
        "*** Begin Patch\n*** Update File: f\n@@\n one\n-two\n+2\n+2b\n three\n*** End Patch\n";
    assert_eq!(updated(patch, "f", old), "one\r\n2\r\n2b\r\nthree\r\n");
    // A patch delivered with CRLF itself behaves the same.
    let crlf_patch = patch.replace('\n', "\r\n");
    assert_eq!(
        updated(&crlf_patch, "f", old),
        "one\r\n2\r\n2b\r\nthree\r\n"
    );
    // Unified diff into a CRLF file without a final newline: the tail stays unterminated.
    let old = "a\r\nb\r\nc";
    let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n";
    assert_eq!(updated(patch, "f", old), "a\r\nB\r\nc");
}

#[test]
fn missing_final_newline_is_kept_unless_the_last_line_changes() {
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n-a\n+A\n*** End Patch";
    assert_eq!(updated(patch, "f", "a\nb"), "A\nb");
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n*** End Patch";
    assert_eq!(updated(patch, "f", "a\nb"), "a\nB\n");
}

#[test]
fn no_newline_markers_in_unified_diffs() {
    let add_marker =
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\\ No newline at end of file\n";
    assert_eq!(updated(add_marker, "f", "a\nb\n"), "a\nB");
    let drop_marker =
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
    assert_eq!(updated(drop_marker, "f", "a\nb"), "a\nb\n");
    let create =
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+x\n\\ No newline at end of file\n";
    assert_eq!(
        run(create, &files(&[])).unwrap(),
        vec![FileChange::Add {
            path: "new.txt".into(),
            content: "x".into()
        }]
    );
}

#[test]
fn byte_order_mark_is_kept_and_ignored_for_matching() {
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n-first\n+1st\n*** End Patch";
    assert_eq!(
        updated(patch, "f", "\u{feff}first\nsecond\n"),
        "\u{feff}1st\nsecond\n"
    );
}

#[test]
fn cjk_and_emoji_lines_match_and_change() {
    let old = "标题\n你好，世界 🌍\n结束\n";
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n 标题\n-你好，世界 🌍\n+再见，世界 🚀\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "标题\n再见，世界 🚀\n结束\n");
}

#[test]
fn curly_quotes_in_the_patch_still_find_straight_quotes() {
    let old = "say(\"hi\")\nnext\n";
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n-say(“hi”)\n+say(\"bye\")\n*** End Patch";
    assert_eq!(updated(patch, "f", old), "say(\"bye\")\nnext\n");
}

// ---------------------------------------------------------------- file operations

#[test]
fn unified_creation_deletion_and_several_files() {
    let patch = "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..e69de29\n\
        --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\
        diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n\
        --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
        --- a/keep.txt\n+++ b/keep.txt\n@@ -1 +1 @@\n-k\n+K\n";
    let fs = files(&[("old.txt", "bye\n"), ("keep.txt", "k\n")]);
    let changes = run(patch, &fs).unwrap();
    assert_eq!(changes.len(), 3);
    assert_eq!(
        changes[0],
        FileChange::Add {
            path: "new.txt".into(),
            content: "hello\nworld\n".into()
        }
    );
    assert_eq!(
        changes[1],
        FileChange::Delete {
            path: "old.txt".into()
        }
    );
    assert!(matches!(&changes[2], FileChange::Update { new_content, .. } if new_content == "K\n"));
}

#[test]
fn moves_in_both_syntaxes() {
    let fs = files(&[("a/x.txt", "1\n")]);
    let env = "*** Begin Patch\n*** Update File: a/x.txt\n*** Move to: b/y.txt\n@@\n-1\n+2\n*** End Patch";
    let FileChange::Update {
        move_to,
        new_content,
        ..
    } = run(env, &fs).unwrap().remove(0)
    else {
        panic!()
    };
    assert_eq!(
        (move_to.as_deref(), new_content.as_str()),
        (Some("b/y.txt"), "2\n")
    );
    let git = "diff --git a/a/x.txt b/b/y.txt\nsimilarity index 100%\nrename from a/x.txt\nrename to b/y.txt\n";
    let FileChange::Update {
        move_to,
        new_content,
        ..
    } = run(git, &fs).unwrap().remove(0)
    else {
        panic!()
    };
    assert_eq!(
        (move_to.as_deref(), new_content.as_str()),
        (Some("b/y.txt"), "1\n")
    );
}

#[test]
fn later_sections_see_earlier_ones() {
    let patch = "*** Begin Patch\n*** Add File: n.txt\n+one\n*** Update File: n.txt\n@@\n-one\n+two\n*** End Patch";
    let changes = run(patch, &files(&[])).unwrap();
    assert!(
        matches!(&changes[1], FileChange::Update { new_content, .. } if new_content == "two\n")
    );
    let patch =
        "*** Begin Patch\n*** Delete File: a\n*** Update File: a\n@@\n-x\n+y\n*** End Patch";
    let err = run(patch, &files(&[("a", "x\n")])).unwrap_err();
    assert!(matches!(
        err,
        PatchError::NotFound {
            action: "updated",
            ..
        }
    ));
}

#[test]
fn unsafe_paths_are_refused() {
    for path in ["/etc/passwd", "../x", "a/../../x", "C:\\x", "."] {
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch");
        let err = run(&patch, &files(&[])).unwrap_err();
        assert!(
            matches!(err, PatchError::InvalidPath { .. }),
            "{path}: {err:?}"
        );
    }
    assert!(
        run(
            "*** Begin Patch\n*** Add File: a/../b\n+x\n*** End Patch",
            &files(&[])
        )
        .is_ok()
    );
}

// ---------------------------------------------------------------- wrappers and parsing

#[test]
fn heredoc_and_fence_wrappers_are_stripped() {
    let inner = "*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End Patch";
    for wrapped in [
        format!("apply_patch <<'EOF'\n{inner}\nEOF\n"),
        format!("  \ncat <<EOF | apply_patch\n{inner}\nEOF"),
        format!("```\n{inner}\n```"),
        format!("\n\n   {inner}   \n\n"),
    ] {
        assert_eq!(updated(&wrapped, "f", "a\n"), "b\n", "{wrapped}");
    }
    let diff = "apply_patch <<\"PATCH\"\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\nPATCH\n";
    assert_eq!(parse(diff).unwrap().format, PatchFormat::Unified);
    assert_eq!(updated(diff, "f", "a\n"), "b\n");
}

#[test]
fn miscounted_unified_hunks_keep_their_lines() {
    // Header says 1 line on each side; the body has more.
    let patch = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n a\n-b\n+B\n c\n";
    assert_eq!(updated(patch, "f", "a\nb\nc\n"), "a\nB\nc\n");
}

#[test]
fn envelope_accepts_unified_style_numbers_after_at_signs() {
    let patch = "*** Begin Patch\n*** Update File: f\n@@ -2,1 +2,1 @@\n-x\n+y\n*** End Patch";
    assert_eq!(updated(patch, "f", "x\nx\n"), "x\ny\n");
}

#[test]
fn parse_errors_carry_line_and_hint() {
    let cases: &[(&str, ParseErrorKind, usize)] = &[
        ("", ParseErrorKind::Empty, 1),
        ("hello there", ParseErrorKind::NotAPatch, 1),
        (
            "*** Begin Patch\n*** Update File: f\n@@\n-a",
            ParseErrorKind::MissingEnd,
            4,
        ),
        (
            "*** Begin Patch\n*** Update File: f\n@@\n-a\nbogus\n*** End Patch",
            ParseErrorKind::BadHunkLine,
            5,
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: f\n*** End Patch",
            ParseErrorKind::UnknownHeader,
            2,
        ),
        (
            "*** Begin Patch\n*** Add File: f\nno plus\n*** End Patch",
            ParseErrorKind::BadAddLine,
            3,
        ),
        (
            "*** Begin Patch\n*** Update File:   \n*** End Patch",
            ParseErrorKind::MissingPath,
            2,
        ),
        (
            "*** Begin Patch\n*** Update File: f\n@@\n*** End Patch",
            ParseErrorKind::EmptyHunk,
            3,
        ),
        (
            "--- a/f\n+++ b/f\n@@ -x,1 +1 @@\n-a\n",
            ParseErrorKind::BadHunkHeader,
            3,
        ),
    ];
    for (text, kind, line) in cases {
        let err = parse(text).unwrap_err();
        assert_eq!((err.kind, err.line), (*kind, *line), "{text:?}: {err}");
        assert!(!err.hint.is_empty());
    }
    // Line numbers count the wrapper lines too.
    let err =
        parse("apply_patch <<'EOF'\n*** Begin Patch\n*** Nope\n*** End Patch\nEOF").unwrap_err();
    assert_eq!(err.line, 3);
}

// ---------------------------------------------------------------- failure messages

#[test]
fn failing_hunk_shows_expected_and_actual_lines() {
    let old = numbered(30);
    let patch = "*** Begin Patch\n*** Update File: src/f.txt\n@@\n line 10\n line 11\n-line twelve\n line 13\n line 14\n+x\n*** End Patch";
    let err = run(patch, &files(&[("src/f.txt", &old)])).unwrap_err();
    let PatchError::HunkFailed(f) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(f.path, "src/f.txt");
    assert_eq!(f.hunk, 1);
    assert_eq!(f.patch_line, 3);
    assert_eq!(f.expected, ["line 10", "line 11", "line twelve", "line 13"]);
    assert_eq!(f.best_guess_line, 10);
    let numbers: Vec<usize> = f.actual.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (8..=15).collect::<Vec<_>>());
    assert_eq!(f.actual[2], (10, "line 10".to_string()));
    assert!(f.hint.contains("around line 10"), "{}", f.hint);
    let text = err.to_string();
    assert!(text.contains("hunk 1 of src/f.txt"), "{text}");
    assert!(text.contains("    10│ line 10"), "{text}");
    assert!(text.ends_with("    15│ line 15"), "{text}");
}

#[test]
fn failing_anchor_is_named() {
    let patch = "*** Begin Patch\n*** Update File: f\n@@ fn missing()\n-a\n+b\n*** End Patch";
    let PatchError::HunkFailed(f) = run(patch, &files(&[("f", "a\n")])).unwrap_err() else {
        panic!()
    };
    assert_eq!(f.missing_anchor.as_deref(), Some("fn missing()"));
    assert_eq!(f.expected, ["fn missing()"]);
}

#[test]
fn out_of_order_hunks_get_a_specific_hint() {
    let patch = "*** Begin Patch\n*** Update File: f\n@@\n-c\n+C\n@@\n-a\n+A\n*** End Patch";
    let PatchError::HunkFailed(f) = run(patch, &files(&[("f", "a\nb\nc\n")])).unwrap_err() else {
        panic!()
    };
    assert_eq!(f.hunk, 2);
    assert!(f.hint.contains("order"), "{}", f.hint);
}

// ---------------------------------------------------------------- directory, rollback

#[test]
fn apply_to_dir_writes_everything() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "1\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+2\n*** Add File: deep/new/b.txt\n+b\n*** End Patch";
    let summary = apply_to_dir(dir.path(), patch).unwrap();
    assert_eq!(summary.created_dirs, ["deep", "deep/new"]);
    assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "2\n");
    assert_eq!(
        fs::read_to_string(dir.path().join("deep/new/b.txt")).unwrap(),
        "b\n"
    );
}

#[test]
fn failed_write_rolls_back_earlier_files_in_reverse_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.txt"), "1\n").unwrap();
    fs::write(root.join("gone.txt"), "bye\n").unwrap();
    // `blocker` is a file, so creating `blocker/c.txt` fails after three writes succeeded.
    fs::write(root.join("blocker"), "").unwrap();
    let patch = "*** Begin Patch\n\
        *** Update File: a.txt\n@@\n-1\n+2\n\
        *** Add File: newdir/b.txt\n+b\n\
        *** Delete File: gone.txt\n\
        *** Add File: blocker/c.txt\n+c\n\
        *** End Patch";
    let err = apply_to_dir(root, patch).unwrap_err();
    let codesmith_patch::ApplyError::Io {
        path,
        rollback_complete,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(path, "blocker/c.txt");
    assert!(rollback_complete);
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "1\n");
    assert_eq!(fs::read_to_string(root.join("gone.txt")).unwrap(), "bye\n");
    assert!(!root.join("newdir").exists());
    let mut names: Vec<String> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "blocker", "gone.txt"]);
}

#[test]
fn hunk_failure_in_a_later_file_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "1\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+2\n*** Update File: a.txt\n@@\n-nope\n+x\n*** End Patch";
    assert!(apply_to_dir(dir.path(), patch).is_err());
    assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "1\n");
}

#[test]
fn anchor_repeated_as_first_context_line_still_matches() {
    let old = "def a():\n    pass\ndef b():\n    pass\n";
    let patch = "*** Begin Patch\n*** Update File: f.py\n@@ def b():\n def b():\n-    pass\n+    return 1\n*** End Patch";
    assert_eq!(
        updated(patch, "f.py", old),
        "def a():\n    pass\ndef b():\n    return 1\n"
    );
}

#[test]
fn arbitrary_input_never_panics() {
    // A small deterministic generator over the tokens patches are made of.
    const TOKENS: &[&str] = &[
        "*** Begin Patch",
        "*** End Patch",
        "*** Update File: f",
        "*** Add File: g",
        "*** Delete File: f",
        "*** Move to: h",
        "*** End of File",
        "@@",
        "@@ a",
        "@@ -1,2 +1,2 @@",
        "@@ -0,0 +1 @@",
        "@@ -99999999999999999999,1 +1 @@",
        "--- a/f",
        "+++ b/f",
        "--- /dev/null",
        "+++ /dev/null",
        "\\ No newline at end of file",
        " a",
        "-a",
        "+a",
        " b",
        "-b",
        "+é漢🚀",
        "",
        "   ",
        "EOF",
        "apply_patch <<'EOF'",
        "```",
        "diff --git a/f b/h",
        "rename from f",
        "rename to h",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let fs = files(&[("f", "a\nb\na\r\nb"), ("h", "")]);
    for _ in 0..20_000 {
        let n = (next() % 12) as usize;
        let text: Vec<&str> = (0..n)
            .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
            .collect();
        let text = text.join(if next() % 5 == 0 { "\r\n" } else { "\n" });
        let _ = run(&text, &fs);
    }
}

#[test]
fn envelope_tolerates_blank_lines_and_bare_double_at_headers() {
    let patch = "*** Begin Patch\n*** Update File: f\n\n@@ @@\n-a\n+b\n*** End Patch";
    assert_eq!(updated(patch, "f", "a\n"), "b\n");
}

#[test]
fn git_mode_lines_are_parsed() {
    let diff = "diff --git a/run.sh b/run.sh\nnew file mode 100755\nindex 0000000..e69de29\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo hi\ndiff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\ndiff --git a/x.sh b/bin/y.sh\nold mode 100755\nnew mode 100644\nsimilarity index 100%\nrename from x.sh\nrename to bin/y.sh\n";
    let patch = codesmith_patch::parse(diff).unwrap();
    assert_eq!(
        patch.modes,
        vec![
            codesmith_patch::ModeChange {
                path: "run.sh".into(),
                executable: true
            },
            codesmith_patch::ModeChange {
                path: "tool.sh".into(),
                executable: true
            },
            codesmith_patch::ModeChange {
                path: "bin/y.sh".into(),
                executable: false
            },
        ]
    );
    assert_eq!(patch.ops.len(), 2, "{:?}", patch.ops);
    assert!(patch.paths().contains(&"tool.sh"));
    // A mode change alone is a patch.
    let only =
        codesmith_patch::parse("diff --git a/t.sh b/t.sh\nold mode 100644\nnew mode 100755\n")
            .unwrap();
    assert!(only.ops.is_empty());
    assert_eq!(only.modes.len(), 1);
    // A symlink mode is refused, not ignored.
    let err = codesmith_patch::parse("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n").unwrap_err();
    assert!(err.to_string().contains("120000"), "{err}");
}
