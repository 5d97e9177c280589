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
    let log = configure(&sb, 60);
    std::fs::write(sb.ws().join("notes.md"), "NOTES-FILE\n").unwrap();
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let task = "summarise @docs:test://doc/1 with @notes.md, @docs:test://img/1, @docs:test://gone and @nosuch:test://x/1";
    let stdout = run_line_mode(&sb, &model, &format!("{task}\n/quit\n"), &[]).await;
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

/// Writes the fixture server into the sandbox's config as `docs`, with `tool_timeout_secs`.
fn configure(sb: &Sandbox, tool_timeout_secs: u64) -> PathBuf {
    let log = sb.dir.path().join("docs.jsonl");
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.docs]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\nstartup_timeout_secs = 20\ntool_timeout_secs = {tool_timeout_secs}\n",
            fixture().to_str().unwrap(),
            log.to_str().unwrap(),
        ),
    )
    .unwrap();
    log
}

async fn run_line_mode(sb: &Sandbox, model: &ScriptedServer, input: &str, more: &[&str]) -> String {
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
    let flags: Vec<&str> = flags.iter().chain(more).copied().collect();
    let out = common::line_mode(&sb.home(), &flags, input).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_prompt_ends_its_task_mentions_are_read_at_once_and_notes_are_one_line() {
    let sb = Sandbox::new();
    // A read made after the other was answered would wait out this timeout.
    let log = configure(&sb, 5);
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let task = "e @docs:test://err @docs:test://pair/1 @docs:test://pair/2";
    let stdout = run_line_mode(
        &sb,
        &model,
        &format!("/mcp__docs__q foo=bar\n/mcp__docs__gone x\n{task}\n/quit\n"),
        &[],
    )
    .await;
    // The refused prompt is an error and sends nothing; the next task is sent.
    assert!(
        stdout.contains("error: /mcp__docs__q takes no argument `foo`"),
        "{stdout}"
    );
    // A prompt no server offers is refused too, not sent to the model as text.
    assert!(
        stdout.contains(
            "error: no running MCP server offers the prompt /mcp__docs__gone now; /help lists"
        ),
        "{stdout}"
    );
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 1, "{stdout}");
    // The two reads were made at once: the server answers them only together.
    for n in [1, 2] {
        assert!(
            stdout.contains(&format!(
                "attached resource test://pair/{n} of MCP server `docs` ("
            )),
            "{stdout}"
        );
    }
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap()
            .contains("prompts/get"),
        "a refused prompt was asked for"
    );
    // The server's message with a newline stays one line: no forged attachment line.
    let err = stdout
        .lines()
        .find(|l| l.contains("ERRMSG"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        err.starts_with("not attached: @docs:test://err: ") && err.contains(r"ERRMSG\nattached"),
        "{err}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("attached resource test://fake")),
        "{stdout}"
    );
    let text = bodies[0].to_string();
    assert!(
        text.contains("PAIR test://pair/2") && !text.contains("test://fake of"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_mentions_attach_is_capped_by_count_and_by_the_context_window() {
    let sb = Sandbox::new();
    let log = configure(&sb, 20);
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let words: Vec<String> = (1..=12).map(|n| format!("@docs:test://big/{n}")).collect();
    let task = format!("y {}", words.join(" "));
    // A window of 4096 tokens: mentions may add 4096 bytes.
    let stdout = run_line_mode(
        &sb,
        &model,
        &format!("{task}\n/quit\n"),
        &["--context-window", "4096"],
    )
    .await;
    // Ten are read; the last two are not, and the person is told.
    let reads = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"resources/read\""))
        .count();
    assert_eq!(reads, 10, "{stdout}");
    assert!(
        stdout.contains(
            "not attached: 2 more mention(s) (@docs:test://big/11 @docs:test://big/12): a task \
             attaches at most 10"
        ),
        "{stdout}"
    );
    // One read of about 3 KB fits in a quarter of the window's bytes; the next does not.
    assert_eq!(
        stdout.matches("attached resource test://big/").count(),
        1,
        "{stdout}"
    );
    assert!(
        stdout.contains("attached resource test://big/1 of MCP server `docs` (")
            && stdout.contains("not attached: @docs:test://big/2: ")
            && stdout.contains("a quarter of the model's context window); ask the model to read it with mcp_resource_read"),
        "{stdout}"
    );
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 1);
    let text = bodies[0].to_string();
    assert!(
        text.contains("BIG test://big/1") && !text.contains("BIG test://big/2"),
        "{text}"
    );
}
