//! Images reach the model: `exec --image` attaches them to the task, `read_file` on an
//! image returns it, on both dialects, and the session stores each image once beside its
//! file instead of inline.
#![allow(clippy::unwrap_used)]

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{self, Sandbox};

/// A 1x1 grey PNG, as CodeSmith's encoder writes it: every image is decoded and
/// re-encoded before it is sent, and this one re-encodes to the same bytes.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x7e, 0x9b,
    0x55, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x7e, 0x05, 0x0d, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The PNG as the data its providers carry (standard base64).
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADUlEQVR4AQECAP3/AAAAAgABfgUN0gAAAABJRU5ErkJggg==";

async fn exec(sb: &Sandbox, server: &ScriptedServer, dialect: &str, rest: &[&str]) -> Value {
    let ws = sb.ws();
    let url = server.base_url();
    let mut args = vec![
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        dialect,
        "--base-url",
        &url,
        "--model",
        "scripted",
        "--approval",
        "never",
    ];
    args.extend(rest);
    let out = common::codesmith_with_env(
        &sb.home(),
        &args,
        &[("ANTHROPIC_API_KEY", "sk-ant-test-key-for-scripted-server")],
    )
    .await;
    assert!(
        out.status.success(),
        "{dialect}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Value::Array(server.request_bodies())
}

/// Every object in `value` (depth first) whose `type` is `kind`.
fn parts<'a>(value: &'a Value, kind: &str, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some(kind) {
                out.push(value);
            }
            map.values().for_each(|v| parts(v, kind, out));
        }
        Value::Array(items) => items.iter().for_each(|v| parts(v, kind, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_image_sends_an_image_part_in_the_first_request_on_both_dialects() {
    for dialect in ["openai", "anthropic"] {
        let sb = Sandbox::new();
        let image = sb.dir.path().join("shot.png");
        std::fs::write(&image, PNG).unwrap();
        let server = ScriptedServer::start().await;
        server.push(Scripted::text("a grey pixel"));
        let bodies = exec(
            &sb,
            &server,
            dialect,
            &["--image", image.to_str().unwrap(), "what is it?"],
        )
        .await;
        let first = &bodies[0];
        let user = first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap();
        let content = &user["content"];
        if dialect == "openai" {
            assert_eq!(
                content[0],
                serde_json::json!({"type": "text", "text": "what is it?"})
            );
            assert_eq!(
                content[1]["image_url"]["url"],
                format!("data:image/png;base64,{PNG_BASE64}")
            );
        } else {
            assert_eq!(content[0]["text"], "what is it?");
            assert_eq!(content[1]["type"], "image");
            assert_eq!(
                content[1]["source"],
                serde_json::json!({"type": "base64", "media_type": "image/png", "data": PNG_BASE64})
            );
        }
        // The session names the image by its digest and stores its bytes once beside it.
        let id = common::only_session_id(&sb.home());
        let session =
            std::fs::read_to_string(sb.home().join(format!("sessions/{id}.jsonl"))).unwrap();
        assert!(!session.contains(PNG_BASE64), "{session}");
        assert!(session.contains("\"digest\":\"sha256:"), "{session}");
        let stored: Vec<_> = std::fs::read_dir(sb.home().join(format!("sessions/{id}.images")))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        assert_eq!(stored, vec![PNG.to_vec()]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_on_an_image_delivers_it_inside_the_result_or_right_after_it() {
    for dialect in ["anthropic", "openai"] {
        let sb = Sandbox::new();
        std::fs::write(sb.ws().join("x.png"), PNG).unwrap();
        let server = ScriptedServer::start().await;
        server.push(Scripted::tool_call(
            "c1",
            "read_file",
            r#"{"path":"x.png"}"#,
        ));
        server.push(Scripted::text("done"));
        let bodies = exec(&sb, &server, dialect, &["look at x.png"]).await;
        let second = &bodies[1];
        let messages = second["messages"].as_array().unwrap();
        if dialect == "anthropic" {
            let mut results = Vec::new();
            parts(second, "tool_result", &mut results);
            assert_eq!(results.len(), 1);
            let content = &results[0]["content"];
            assert!(
                content[0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("[image \"x.png\": image/png, 1x1 pixels"),
                "{content}"
            );
            assert_eq!(content[1]["type"], "image");
            assert_eq!(content[1]["source"]["data"], PNG_BASE64);
        } else {
            let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
            assert!(
                messages[tool]["content"]
                    .as_str()
                    .unwrap()
                    .contains("x.png")
            );
            let next = &messages[tool + 1];
            assert_eq!(next["role"], "user", "{second}");
            assert!(
                next["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("tool call c1")
            );
            assert_eq!(
                next["content"][1]["image_url"]["url"],
                format!("data:image/png;base64,{PNG_BASE64}")
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_configured_without_images_reads_that_one_was_omitted() {
    let sb = Sandbox::new();
    std::fs::write(sb.home().join("config.toml"), "[openai]\nimages = false\n").unwrap();
    let image = sb.dir.path().join("shot.png");
    std::fs::write(&image, PNG).unwrap();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("ok"));
    let bodies = exec(
        &sb,
        &server,
        "openai",
        &["-i", image.to_str().unwrap(), "what is it?"],
    )
    .await;
    let text = bodies[0].to_string();
    assert!(
        !text.contains(PNG_BASE64) && !text.contains("image_url"),
        "{text}"
    );
    assert!(
        text.contains(
            "[image omitted: image/png, 70 bytes; this model is configured with images = false"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_image_stops_exec_before_any_request() {
    let sb = Sandbox::new();
    let bogus = sb.dir.path().join("notes.png");
    std::fs::write(&bogus, "plain text").unwrap();
    let server = ScriptedServer::start().await;
    let out = common::codesmith(
        &sb.home(),
        &common::exec_args(
            &sb.ws(),
            &server.base_url(),
            "never",
            &["--image", bogus.to_str().unwrap(), "hi"],
        ),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a PNG, JPEG, GIF or WebP image"));
    assert!(server.request_bodies().is_empty());
}
