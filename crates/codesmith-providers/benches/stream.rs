//! Streaming throughput of `complete()` over loopback against the scripted
//! server, per dialect: SSE events decoded and reduced per second.
//!
//! Run with `cargo bench -p codesmith-providers --bench stream`.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use codesmith_protocol::Message;
use codesmith_providers::{
    AnthropicConfig, AnthropicProvider, ChatRequest, CompleteOptions, OpenAiConfig, OpenAiProvider,
    Provider, StreamNotice, complete,
};
use codesmith_testkit::{Scripted, ScriptedServer};

const PIECES: usize = 20_000;
const CHARS_PER_PIECE: usize = 4;

fn request() -> ChatRequest {
    ChatRequest {
        model: "bench".into(),
        system: "bench".into(),
        messages: vec![Message::user_text("go")],
        tools: vec![],
        max_tokens: None,
        temperature: None,
        stop: vec![],
        prompt_cache_key: None,
    }
}

async fn measure(name: &str, provider: &dyn Provider, server: &ScriptedServer) {
    let text: String = "abcé".repeat(PIECES * CHARS_PER_PIECE / 4);
    server.push(
        Scripted::text(text.clone())
            .chunk_chars(CHARS_PER_PIECE)
            .write_bytes(0),
    );
    let mut deltas = 0usize;
    let mut sink = |n: StreamNotice| {
        if matches!(n, StreamNotice::TextDelta(_)) {
            deltas += 1;
        }
    };
    let started = Instant::now();
    let resp = complete(provider, &request(), &CompleteOptions::default(), &mut sink)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(resp.text, text);
    print_rate(name, deltas, elapsed);
}

fn print_rate(name: &str, deltas: usize, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    println!(
        "{name:<10} {deltas} text deltas in {:.1} ms: {:.0} deltas/s",
        secs * 1000.0,
        deltas as f64 / secs
    );
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = ScriptedServer::start().await;
        let openai = OpenAiProvider::new(OpenAiConfig::new(server.base_url(), None)).unwrap();
        let anthropic = AnthropicProvider::new(AnthropicConfig::new(server.url(), None)).unwrap();
        for _ in 0..2 {
            measure("openai", &openai, &server).await;
            measure("anthropic", &anthropic, &server).await;
        }
    });
}
