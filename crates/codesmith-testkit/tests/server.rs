//! The scripted server over a raw socket: recording, dialects, faults.

#![allow(clippy::unwrap_used)]

use codesmith_testkit::{Fault, Scripted, ScriptedServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one POST and returns the whole response text (the server closes).
async fn post(server: &ScriptedServer, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-test: yes\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn records_requests_and_plays_both_dialects() {
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("hi there"))
        .push(Scripted::text("yo"));
    let openai = post(&server, "/v1/chat/completions", r#"{"model":"m"}"#).await;
    assert!(openai.starts_with("HTTP/1.1 200"));
    assert!(openai.contains("text/event-stream"));
    assert!(openai.contains(r#""content":"hi "#));
    assert!(openai.ends_with("data: [DONE]\n\n"));
    let anthropic = post(&server, "/v1/messages", "not json").await;
    assert!(anthropic.contains("event: message_start"));
    assert!(anthropic.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body, json!({"model": "m"}));
    assert_eq!(requests[0].header("X-Test"), Some("yes"));
    assert_eq!(requests[1].body, json!("not json"));
    assert_eq!(server.remaining(), 0);
}

#[tokio::test]
async fn faults_and_exhaustion_are_visible() {
    let server = ScriptedServer::start().await;
    server.push(Fault::status(429).retry_after(3));
    server.push(Scripted::text("abcdef").drop_after(1));
    let limited = post(&server, "/v1/chat/completions", "{}").await;
    assert!(limited.starts_with("HTTP/1.1 429"));
    assert!(limited.contains("retry-after: 3\r\n"));
    let dropped = post(&server, "/v1/chat/completions", "{}").await;
    assert!(dropped.contains(r#""content":"abc""#));
    assert!(!dropped.contains("def"));
    assert!(!dropped.contains("[DONE]"));
    let exhausted = post(&server, "/v1/chat/completions", "{}").await;
    assert!(exhausted.starts_with("HTTP/1.1 500"));
    assert!(exhausted.contains("script exhausted"));
    let unknown = post(&server, "/v2/other", "{}").await;
    assert!(unknown.starts_with("HTTP/1.1 404"));
}
