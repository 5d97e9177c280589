//! `fim_edit` end to end through `codesmith exec --json`: the span between two anchors is
//! replaced behind the same gate as the other writers (the syntax check refuses a change
//! that breaks a Rust file that parsed), with the refusal shapes of `edit_file` for a
//! missing or ambiguous anchor.

#![allow(clippy::unwrap_used)]

use crate::common::Sandbox;
use crate::interactive::{call, exec_json, results};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::json;

const SOURCE: &str = "pub fn area(w: u32, h: u32) -> u32 {\n    w + h\n}\n\npub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    1\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fim_edit_fills_between_anchors_behind_the_syntax_gate() {
    let sb = Sandbox::new();
    let lib = sb.ws().join("lib.rs");
    std::fs::write(&lib, SOURCE).unwrap();
    let server = ScriptedServer::start().await;
    let fim = |id: &str, prefix: &str, suffix: &str, middle: &str| {
        call(
            id,
            "fim_edit",
            json!({"path": "lib.rs", "prefix": prefix, "suffix": suffix, "middle": middle}),
        )
    };
    server
        .push(call("c1", "read_file", json!({"path": "lib.rs"})))
        // Breaks the syntax of a file that parsed: refused, nothing written.
        .push(fim("c2", "h: u32) -> u32 {\n", "\n}", "    w * (h"))
        // An anchor that is not there.
        .push(fim("c3", "fn three() {\n", "\n}", "    3"))
        // An anchor that is in two places.
        .push(fim("c4", "-> u32 {\n    1", "\n}", "\n    // one"))
        // The real fill.
        .push(fim(
            "c5",
            "pub fn area(w: u32, h: u32) -> u32 {\n",
            "\n}",
            "    w * h",
        ))
        .push(Scripted::text("Fixed area."));
    let events = exec_json(&sb, &server, "fix area").await;
    let r = results(&events);
    assert_eq!(r.len(), 5, "{events:?}");
    assert_eq!(r[1]["ok"], false);
    assert_eq!(r[1]["error"]["code"], "PARSE_REJECTED", "{}", r[1]);
    assert_eq!(r[2]["error"]["code"], "NO_MATCH", "{}", r[2]);
    assert!(
        r[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prefix"),
        "{}",
        r[2]
    );
    assert_eq!(r[3]["error"]["code"], "AMBIGUOUS_MATCH", "{}", r[3]);
    assert_eq!(r[4]["ok"], true, "{}", r[4]);
    assert!(!r[4]["changes"].as_array().unwrap().is_empty(), "{}", r[4]);
    let now = std::fs::read_to_string(&lib).unwrap();
    assert_eq!(now, SOURCE.replace("    w + h", "    w * h"));
}
