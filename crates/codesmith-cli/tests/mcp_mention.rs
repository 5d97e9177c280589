//! `@SERVER:URI` mentions in the UI (line mode) attach an MCP resource, end to end against a
//! server scripted on the wire (`fixtures/mcp/resource_server.py`) and the scripted model.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{self, Sandbox};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/resource_server.py")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_mention_reaches_the_model_wrapped_and_a_bad_one_is_a_note() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("docs.jsonl");
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.docs]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\nstartup_timeout_secs = 20\n",
            fixture().to_str().unwrap(),
            log.to_str().unwrap(),
        ),
    )
    .unwrap();
    std::fs::write(sb.ws().join("notes.md"), "NOTES-FILE\n").unwrap();
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let ws = sb.ws().to_string_lossy().into_owned();
    let url = model.base_url();
    let flags = [
        "--workspace",
        ws.as_str(),
        "--provider",
        "openai",
        "--base-url",
        url.as_str(),
        "--model",
        "scripted",
    ];
    let task = "summarise @docs:test://doc/1 with @notes.md, @docs:test://img/1, @docs:test://gone and @nosuch:test://x/1";
    let out = common::line_mode(&sb.home(), &flags, &format!("{task}\n/quit\n")).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The person sees what was attached, and for each mention that was not, what to do.
    assert!(
        stdout.contains("attached resource test://doc/1 of MCP server `docs` ("),
        "{stdout}"
    );
    assert!(stdout.contains("attached notes.md (11 bytes)"), "{stdout}");
    assert!(
        stdout.contains("attached resource test://img/1 of MCP server `docs` (")
            && stdout.contains(", 1 image(s))"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not attached: @docs:test://gone: ")
            && stdout.contains("Resource not found: test://gone; check the URI"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not attached: @nosuch:test://x/1: no MCP server `nosuch` is configured")
            && stdout.contains("codesmith mcp list"),
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    // The task ran, once, with the resource read through resources/read.
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 1);
    let reads = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"resources/read\""))
        .count();
    assert_eq!(reads, 3, "one read per resource mention of the server");
    let messages = bodies[0]["messages"].as_array().unwrap();
    let user: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(user.len(), 1, "{:?}", bodies[0]);
    // The image blob is sent as an image (OpenAI's `image_url` part) after the text.
    let parts = user[0]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", user[0]));
    let text = parts
        .iter()
        .find_map(|p| p["text"].as_str())
        .unwrap_or_else(|| panic!("{}", user[0]));
    let image = parts
        .iter()
        .find_map(|p| p["image_url"]["url"].as_str())
        .unwrap_or_else(|| panic!("{}", user[0]));
    assert!(image.starts_with("data:image/png;base64,"), "{image}");
    assert!(text.starts_with(task), "{text}");
    assert!(text.contains("NOTES-FILE"), "{text}");
    // The server's text is inside the one wrapper labelled with the server, its forged
    // closing tag defused and its escape sequence gone.
    let open = text
        .find("<external_content source=\"mcp:docs\">")
        .unwrap_or_else(|| panic!("{text}"));
    let close = text.find("</external_content>").unwrap();
    assert_eq!(text.matches("</external_content>").count(), 2, "{text}");
    let at = text.find("DOC-ONE says hi").unwrap();
    assert!(open < at && at < close, "{text}");
    assert!(text[open..close].contains("<runtime_event>"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        text.contains("[resource test://img/1]\n[image 1: "),
        "{text}"
    );
    // What failed is not attached.
    assert_eq!(text.matches("<external_content").count(), 2, "{text}");
}
