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
async fn raw_bodies_are_sent_byte_for_byte() {
    let server = ScriptedServer::start().await;
    let body = "data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
    server.push(Scripted::raw(body).write_bytes(5));
    let response = post(&server, "/v1/messages", "{}").await;
    assert!(response.starts_with("HTTP/1.1 200"));
    assert!(response.contains("text/event-stream"));
    assert!(response.ends_with(&format!("\r\n\r\n{body}")), "{response}");
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

#[tokio::test]
async fn pacing_spaces_the_events() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("abcd").chunk_chars(1).pace_ms(60));
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let body = "{}";
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let start = std::time::Instant::now();
    // When each complete SSE event arrived (the head ends in "\r\n\r\n", not "\n\n").
    let mut arrivals = Vec::new();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read_all = async {
        loop {
            let n = stream.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            let events = String::from_utf8_lossy(&buf).matches("\n\n").count();
            while arrivals.len() < events {
                arrivals.push(start.elapsed());
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), read_all)
        .await
        .expect("a paced turn of 8 events at 60 ms finishes well within 3 s");
    let text = String::from_utf8(buf).unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
    // role, a, b, c, d, finish, usage, [DONE]: 8 events, 7 gaps.
    assert_eq!(arrivals.len(), 8, "{text}");
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap.as_millis() >= 45,
            "events only {gap:?} apart: {arrivals:?}"
        );
    }
    assert!(arrivals[7] - arrivals[0] >= std::time::Duration::from_millis(7 * 55));
}

#[test]
fn pacing_is_clamped() {
    let paced = Scripted::text("x").pace_ms(u64::MAX);
    assert_eq!(
        paced,
        Scripted::text("x").pace_ms(codesmith_testkit::MAX_PACE_MS)
    );
}
