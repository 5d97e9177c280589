//! Cost and latency: the provider's prompt cache is hit on long sessions, and
//! read-only shell calls of one batch run concurrently.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;

use codesmith_providers::{AnthropicConfig, AnthropicProvider};
use codesmith_testkit::{Scripted, ScriptedServer};

struct Rig {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
        std::fs::write(
            ws.join("src/lib.rs"),
            "pub fn answer() -> u32 {\n    42\n}\n",
        )
        .unwrap();
        for i in 0..40 {
            std::fs::write(ws.join(format!("n{i}.txt")), format!("note {i}\n")).unwrap();
            std::fs::create_dir_all(ws.join(format!("d{i}"))).unwrap();
        }
        let home = dir.path().join("home");
        Rig {
            _dir: dir,
            ws,
            home,
            server: ScriptedServer::start().await,
        }
    }
}

impl Rig {
    /// An engine talking to the rig's server in the Anthropic dialect as
    /// `claude-sonnet-4-5`, with the system prompt a real session sends.
    fn anthropic_engine(
        &self,
        max_turns: u32,
        context: codesmith_engine::ContextBudget,
    ) -> codesmith_engine::Engine {
        let provider =
            AnthropicProvider::new(AnthropicConfig::new(self.server.url(), None)).unwrap();
        let setup = common::Setup {
            max_turns,
            system_prompt: codesmith_engine::system_prompt(&codesmith_engine::PromptInputs {
                workspace: &self.ws,
                project_instructions: None,
                memory: None,
                skills: None,
                style: codesmith_engine::PromptStyle::Full,
            }),
            context,
            ..common::Setup::default()
        };
        common::engine_with(
            Arc::new(provider),
            "claude-sonnet-4-5",
            &self.ws,
            &self.home,
            setup,
        )
    }
}

/// One scripted model turn of the cache session: a call (or a batch of calls) of the
/// everyday tools.
fn session_turn(i: usize) -> Scripted {
    let id = format!("c{i}");
    let args = match i % 5 {
        0 => ("read_file", format!(r#"{{"path": "n{i}.txt"}}"#)),
        1 => ("grep_files", format!(r#"{{"pattern": "note {i}"}}"#)),
        2 => ("list_dir", format!(r#"{{"path": "d{i}"}}"#)),
        3 => ("file_search", format!(r#"{{"pattern": "n{i}*"}}"#)),
        _ => ("exec_shell", format!(r#"{{"command": "echo step {i}"}}"#)),
    };
    Scripted::tool_call(id, args.0, args.1)
}

#[tokio::test]
async fn a_long_session_is_served_from_the_anthropic_prompt_cache() {
    let rig = Rig::new().await;
    rig.server.enable_prompt_cache(1024);
    for i in 0..29 {
        if i == 14 {
            // A long batch: 10 calls add 20 blocks, past the API's lookback from the new tail.
            let mut batch = Scripted::default();
            for j in 0..10 {
                batch = batch.with_tool_call(
                    format!("b{j}"),
                    "read_file",
                    format!(r#"{{"path": "n{j}.txt", "max_lines": 5}}"#),
                );
            }
            rig.server.push(batch);
        } else {
            rig.server.push(session_turn(i));
        }
    }
    rig.server.push(Scripted::text("done"));
    let mut engine = rig.anthropic_engine(40, codesmith_engine::ContextBudget::default());
    let mut events = Vec::new();
    let outcome = engine
        .run_task("tour the project", &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(outcome.turns, 30, "{outcome:?}");
    let usage = rig.server.cache_usage();
    assert_eq!(usage.len(), 30);
    let (mut read, mut total) = (0u64, 0u64);
    let mut worst = 1.0f64;
    for n in 1..usage.len() {
        // Each request reads the whole previous request from the cache, even after the batch.
        assert_eq!(
            usage[n].cache_read_input_tokens,
            usage[n - 1].total(),
            "request {}",
            n + 1
        );
    }
    for (n, u) in usage.iter().enumerate().skip(2) {
        let ratio = u.cache_read_input_tokens as f64 / u.total() as f64;
        assert!(
            ratio >= 0.9,
            "request {}: only {:.1} % read from the cache: {u:?}",
            n + 1,
            ratio * 100.0
        );
        worst = worst.min(ratio);
        read += u.cache_read_input_tokens;
        total += u.total();
    }
    println!(
        "prompt cache, requests 3-30: {:.1} % of {total} input tokens read from the cache (worst request {:.1} %)",
        read as f64 * 100.0 / total as f64,
        worst * 100.0
    );
    // What the provider reported reaches the task's usage: reads and writes apart.
    let reported_reads: u64 = usage.iter().map(|u| u.cache_read_input_tokens).sum();
    let reported_writes: u64 = usage.iter().map(|u| u.cache_creation_input_tokens).sum();
    assert_eq!(outcome.usage.cached_input_tokens, reported_reads);
    assert_eq!(outcome.usage.cache_write_input_tokens, reported_writes);
    assert_eq!(
        outcome.usage.input_tokens,
        usage.iter().map(|u| u.total()).sum::<u64>()
    );
}

/// Three requests of one task against an OpenAI-compatible server, the key switched `on`.
async fn openai_session_bodies(on: bool) -> (Vec<serde_json::Value>, String) {
    let rig = Rig::new().await;
    rig.server
        .push(session_turn(0))
        .push(session_turn(1))
        .push(Scripted::text("done"));
    let mut config =
        codesmith_providers::OpenAiConfig::new(rig.server.base_url(), Some("sk-test".into()));
    config.prompt_cache_key = on;
    let provider = codesmith_providers::OpenAiProvider::new(config).unwrap();
    let mut engine = common::engine_with(
        Arc::new(provider),
        "gpt-4.1",
        &rig.ws,
        &rig.home,
        common::Setup::default(),
    );
    engine.run_task("look around", &mut |_| {}).await.unwrap();
    let id = engine.session().id().to_string();
    (rig.server.request_bodies(), id)
}

#[tokio::test]
async fn every_openai_request_of_a_session_carries_the_same_prompt_cache_key() {
    let (bodies, id) = openai_session_bodies(true).await;
    assert_eq!(bodies.len(), 3);
    let keys: Vec<&serde_json::Value> = bodies.iter().map(|b| &b["prompt_cache_key"]).collect();
    assert!(keys[0].as_str().unwrap().contains(&id), "{keys:?}");
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    let (bodies, _) = openai_session_bodies(false).await;
    assert_eq!(bodies.len(), 3);
    assert!(bodies.iter().all(|b| b.get("prompt_cache_key").is_none()));
}

#[test]
fn the_key_is_on_by_default_only_for_openai_itself() {
    let on = codesmith_providers::OpenAiConfig::new("https://api.openai.com/v1", None);
    assert!(on.prompt_cache_key);
    let off = codesmith_providers::OpenAiConfig::new("http://127.0.0.1:8080/v1", None);
    assert!(!off.prompt_cache_key);
}

/// Runs one batch of shell calls (then a closing answer) and returns the wall time of
/// the task and the tool results the model read, in call order.
async fn shell_batch(rig: &Rig, commands: &[&str]) -> (std::time::Duration, Vec<String>) {
    let mut batch = Scripted::default();
    for (i, command) in commands.iter().enumerate() {
        let args = serde_json::json!({ "command": command }).to_string();
        batch = batch.with_tool_call(format!("s{i}"), "exec_shell", args);
    }
    rig.server.push(batch).push(Scripted::text("done"));
    let mut engine = common::engine(&rig.server, &rig.ws, &rig.home, common::Setup::default());
    let started = std::time::Instant::now();
    let mut results = Vec::new();
    engine
        .run_task("run them", &mut |e| {
            if let codesmith_protocol::Event::ToolResult { output, .. } = e {
                results.push(output);
            }
        })
        .await
        .unwrap();
    (started.elapsed(), results)
}

#[tokio::test]
async fn two_read_only_shell_calls_of_one_batch_run_together() {
    let rig = Rig::new().await;
    let (took, results) = shell_batch(&rig, &["sleep 1; echo first", "sleep 1; echo second"]).await;
    println!(
        "two `sleep 1` shell calls in one batch: {} ms",
        took.as_millis()
    );
    // One after the other they take at least 2 s; together about 1 s plus the spawn cost,
    // which grows on a loaded machine — any figure under 1.9 s proves they overlapped.
    assert!(
        took < std::time::Duration::from_millis(1900),
        "took {took:?}: the calls did not overlap"
    );
    assert!(results[0].starts_with("first"), "{results:?}");
    assert!(results[1].starts_with("second"), "{results:?}");
}

#[tokio::test]
async fn a_write_and_a_read_of_one_batch_keep_their_order() {
    let rig = Rig::new().await;
    let (_, results) = shell_batch(
        &rig,
        &[
            "cat n1.txt",
            "sleep 0.3; echo changed > n1.txt",
            "cat n1.txt",
        ],
    )
    .await;
    assert!(results[0].starts_with("note 1"), "{results:?}");
    assert!(results[2].starts_with("changed"), "{results:?}");
    // A command that changes directory never runs beside another: the next call sees it.
    let (_, results) = shell_batch(&rig, &["cd src", "ls"]).await;
    assert!(results[1].starts_with("lib.rs"), "{results:?}");
}

#[tokio::test]
async fn tool_results_carry_only_what_the_model_uses() {
    let rig = Rig::new().await;
    let calls: [(&str, serde_json::Value); 10] = [
        ("read_file", serde_json::json!({"path": "src/lib.rs"})),
        ("grep_files", serde_json::json!({"pattern": "answer"})),
        (
            "edit_file",
            serde_json::json!({"path": "src/lib.rs", "search": "42", "replace": "43"}),
        ),
        (
            "exec_shell",
            serde_json::json!({"command": "python3 -c 'print(1)'"}),
        ),
        ("file_search", serde_json::json!({"pattern": "**/*.rs"})),
        ("exec_shell", serde_json::json!({"command": "ls src"})),
        ("read_file", serde_json::json!({"path": "notes.txt"})),
        (
            "edit_file",
            serde_json::json!({"path": "notes.txt", "search": "beta", "replace": "gamma"}),
        ),
        ("grep_files", serde_json::json!({"pattern": "gamma"})),
        (
            "edit_file",
            serde_json::json!({"path": "notes.txt", "search": "nothing", "replace": "x"}),
        ),
    ];
    for (i, (name, args)) in calls.iter().enumerate() {
        rig.server.push(Scripted::tool_call(
            format!("t{i}"),
            *name,
            args.to_string(),
        ));
    }
    rig.server.push(Scripted::text("done"));
    let setup = common::Setup {
        max_turns: 20,
        ..common::Setup::default()
    };
    let mut engine = common::engine(&rig.server, &rig.ws, &rig.home, setup);
    let mut events = Vec::new();
    engine
        .run_task("work", &mut |e| events.push(e))
        .await
        .unwrap();
    let (mut before, mut after) = (0usize, 0usize);
    for event in &events {
        let codesmith_protocol::Event::ToolResult {
            ok, output, meta, ..
        } = event
        else {
            continue;
        };
        after += output.len();
        if *ok {
            // The envelope the same result was sent as before: output and the whole meta.
            let text = match output.rfind("\n[meta] ") {
                Some(at) => &output[..=at],
                None => output.as_str(),
            };
            let text = if text == "(no output)" { "" } else { text };
            before += serde_json::json!({"ok": true, "output": text, "meta": meta})
                .to_string()
                .len();
        } else {
            // Refusals are unchanged: typed, with their code and hint.
            let v: serde_json::Value = serde_json::from_str(output).unwrap();
            assert_eq!(v["error"]["code"], "NO_MATCH", "{output}");
            assert!(v["error"]["hint"].as_str().is_some_and(|h| !h.is_empty()));
            before += output.len();
        }
    }
    let drop = 100.0 - after as f64 * 100.0 / before as f64;
    println!(
        "tool results of 10 calls: {before} bytes as envelopes, {after} bytes now ({drop:.0} % less)"
    );
    assert!(drop >= 40.0, "only {drop:.0} % less");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    let print = events.iter().find_map(|e| match e {
        codesmith_protocol::Event::ToolResult { id, output, .. } if id == "t3" => {
            Some(output.clone())
        }
        _ => None,
    });
    assert_eq!(print.as_deref(), Some("1\n"));
}

/// Model requests of the compacting cache session (100 tool calls, then the answer).
const COMPACTING_TURNS: usize = 101;
/// The context window of the compacting cache session, in tokens: the tool catalogue and
/// system prompt take about 5,000 of it and each round adds about 740, so the context
/// crosses the threshold (80 %) every four to six rounds, and the cleared stubs pile up
/// until a summary is needed.
const WINDOW: u64 = 14_000;

/// Tokens of the tool catalogue and system prompt of an Anthropic request `body`, counted
/// as the scripted cache counts them (a block's JSON without its marker, 4 bytes a token).
fn fixed_tokens(body: &serde_json::Value) -> u64 {
    let tools = body["tools"].as_array().into_iter().flatten();
    let system = body["system"].as_array().into_iter().flatten();
    tools
        .chain(system)
        .map(|block| {
            let mut block = block.clone();
            block.as_object_mut().unwrap().remove("cache_control");
            (serde_json::to_vec(&block).unwrap().len() as u64).div_ceil(4)
        })
        .sum()
}

#[tokio::test]
async fn a_compacting_session_is_still_served_from_the_anthropic_prompt_cache() {
    let rig = Rig::new().await;
    // About 2 KB per read (see [`WINDOW`]).
    let line = "0123456789abcdefghijklmnopqrstu\n";
    std::fs::write(rig.ws.join("big.txt"), line.repeat(64)).unwrap();
    rig.server.enable_prompt_cache(1024);
    rig.server.answer_when(
        "You summarize a coding session",
        Scripted::text("The user asked to read big.txt repeatedly; it was read many times."),
    );
    for i in 0..COMPACTING_TURNS - 1 {
        // Distinct arguments each time (the file is shorter than any of these limits).
        let args = format!(r#"{{"path": "big.txt", "max_lines": {}}}"#, 1000 + i);
        rig.server
            .push(Scripted::tool_call(format!("c{i}"), "read_file", args));
    }
    rig.server.push(Scripted::text("done"));
    let budget =
        codesmith_engine::ContextBudget::resolve("claude-sonnet-4-5", Some(WINDOW), None, None, 80);
    let mut engine = rig.anthropic_engine(200, budget);
    // The request each compaction preceded: one call per round, so the number of results
    // before it.
    let mut compacted_before = Vec::new();
    let mut results = 0usize;
    let mut stages = Vec::new();
    let outcome = engine
        .run_task(
            "TASK-7731: read big.txt again and again",
            &mut |e| match e {
                codesmith_protocol::Event::ToolResult { .. } => results += 1,
                codesmith_protocol::Event::Compaction { stage, .. } => {
                    compacted_before.push(results);
                    stages.push(stage);
                }
                _ => {}
            },
        )
        .await
        .unwrap();
    assert_eq!(outcome.turns as usize, COMPACTING_TURNS, "{outcome:?}");
    let usage = rig.server.cache_usage();
    assert_eq!(usage.len(), COMPACTING_TURNS);
    let chat: Vec<serde_json::Value> = rig
        .server
        .requests()
        .into_iter()
        .filter(|r| !r.raw_body.contains("You summarize a coding session"))
        .map(|r| r.body)
        .collect();
    assert_eq!(chat.len(), COMPACTING_TURNS);
    assert!(fixed_tokens(&chat[0]) > 1024, "{}", fixed_tokens(&chat[0]));
    assert!(compacted_before.len() >= 2, "{compacted_before:?}");
    assert!(
        stages.iter().any(|s| s == "clear_tool_results") && stages.iter().any(|s| s == "summary"),
        "{stages:?}"
    );
    for n in 1..usage.len() {
        if compacted_before.contains(&n) {
            // The compacted request still reads the tool catalogue and system prompt...
            assert!(
                usage[n].cache_read_input_tokens >= fixed_tokens(&chat[n]),
                "request {}: {:?}",
                n + 1,
                usage[n]
            );
        } else {
            // ...and the next one reads the whole compacted request: the share recovers
            // at once, as it does after every other request.
            assert_eq!(
                usage[n].cache_read_input_tokens,
                usage[n - 1].total(),
                "request {}",
                n + 1
            );
        }
    }
    let worst = compacted_before
        .iter()
        .map(|&n| usage[n].cache_read_input_tokens as f64 / usage[n].total() as f64)
        .fold(1.0f64, f64::min);
    let read: u64 = usage.iter().map(|u| u.cache_read_input_tokens).sum();
    let total: u64 = usage.iter().map(|u| u.total()).sum();
    // What the summary requests sent (none of it cached): a quarter of their bytes.
    let summary_tokens: u64 = rig
        .server
        .requests()
        .iter()
        .filter(|r| r.raw_body.contains("You summarize a coding session"))
        .map(|r| r.raw_body.len() as u64 / 4)
        .sum();
    let overall = read as f64 / total as f64;
    let summaries = stages.iter().filter(|s| *s == "summary").count();
    println!(
        "prompt cache with compaction, {COMPACTING_TURNS} requests, window {WINDOW}: {:.1} % of \
         {total} input tokens read from the cache; {} compactions ({summaries} summaries), the \
         compacted requests {:.1} % at worst; {:.1} % counting the summary requests' \
         {summary_tokens} tokens as unread",
        overall * 100.0,
        compacted_before.len(),
        worst * 100.0,
        read as f64 * 100.0 / (total + summary_tokens) as f64,
    );
    assert!(overall >= 0.85, "only {:.1} %", overall * 100.0);
}
