//! The overhead of one RLM round: `rlm_exec` code in, printed output back, through the
//! tool (JSON lines over the REPL's pipes, the round's bookkeeping, the output cap) for code
//! whose own Python work is negligible (`x = 1`, and printing 1,000 characters). Run with
//! `cargo bench -p codesmith-engine --bench rlm_round`; prints the median and p95 per
//! sandbox backend available here. Target: under 20 ms beyond Python's own work.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use codesmith_engine::rlm::{self, RlmConfig};
use codesmith_providers::{CompleteOptions, OpenAiConfig, OpenAiProvider};
use codesmith_testkit::ScriptedServer;
use codesmith_tools::sandbox::Sandbox;
use codesmith_tools::{ToolContext, call_tool};
use serde_json::json;

const ROUNDS: usize = 300;

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let server = ScriptedServer::start().await;
        let provider = Arc::new(
            OpenAiProvider::new(OpenAiConfig::new(server.base_url(), Some("sk".into()))).unwrap(),
        );
        let mut sandboxes = vec![("none", Sandbox::none())];
        if let Ok(b) = codesmith_tools::sandbox::backend_from_name("bwrap") {
            sandboxes.push(("bwrap", Sandbox::new(b, false)));
        }
        for (name, sandbox) in sandboxes {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().canonicalize().unwrap();
            let ctx = ToolContext::new(ws.clone(), ws.join(".home")).with_sandbox(sandbox);
            let tools = rlm::tools(
                provider.clone(),
                "bench",
                CompleteOptions::default(),
                RlmConfig::default(),
            );
            let started = Instant::now();
            call_tool(
                tools[0].as_ref(),
                &ctx,
                json!({"task": "bench", "inputs": [{"name": "t", "text": "abc"}]}),
            )
            .await
            .unwrap();
            let open = started.elapsed();
            for (label, code) in [
                ("x = 1", "x = 1"),
                ("print 1,000 chars", "print('y' * 999)"),
            ] {
                let mut times = Vec::with_capacity(ROUNDS);
                for _ in 0..ROUNDS {
                    let t = Instant::now();
                    let out = call_tool(tools[1].as_ref(), &ctx, json!({ "code": code }))
                        .await
                        .unwrap();
                    assert!(out.output.is_string(), "a round answers with its output");
                    times.push(t.elapsed());
                }
                times.sort();
                let at = |q: f64| ms(times[((times.len() - 1) as f64 * q) as usize]);
                println!(
                    "rlm round [{name}] {label}: median {:.2} ms, p95 {:.2} ms, max {:.2} ms over {ROUNDS} rounds (open: {:.0} ms)",
                    at(0.5),
                    at(0.95),
                    at(1.0),
                    ms(open)
                );
            }
        }
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
