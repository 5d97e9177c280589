//! The `rlm` / `rlm_exec` tools: a scripted root model counts a 5 MB log exactly through
//! the REPL while a child call classifies a sample; every bound (printed output, round and
//! session time, child-call time, batch size, recursion depth, memory); confinement in the
//! sandbox; a missing Python; the session ending with the task or a cancel.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codesmith_engine::rlm::{self, RlmConfig};
use codesmith_providers::{CompleteOptions, OpenAiConfig, OpenAiProvider, Provider};
use codesmith_testkit::{Scripted, ScriptedServer};
use codesmith_tools::sandbox::Sandbox;
use codesmith_tools::{CancellationToken, Tool, ToolContext, ToolOutcome, call_tool};
use serde_json::{Value, json};

struct Rig {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    outside: PathBuf,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        let outside = dir.path().join("outside").canonicalize().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Rig {
            _dir: dir,
            ws,
            home,
            outside,
            server: ScriptedServer::start().await,
        }
    }

    fn provider(&self) -> Arc<dyn Provider> {
        Arc::new(
            OpenAiProvider::new(OpenAiConfig::new(
                self.server.base_url(),
                Some("sk-test".into()),
            ))
            .unwrap(),
        )
    }

    fn tools(&self, config: RlmConfig) -> (Arc<dyn Tool>, Arc<dyn Tool>) {
        let mut tools = rlm::tools(self.provider(), "scripted", quick(), config).into_iter();
        (tools.next().unwrap(), tools.next().unwrap())
    }

    fn ctx(&self, sandbox: Sandbox) -> ToolContext {
        ToolContext::new(self.ws.clone(), self.home.clone()).with_sandbox(sandbox)
    }
}

fn quick() -> CompleteOptions {
    CompleteOptions {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_millis(50),
        idle_timeout: Duration::from_secs(2),
        max_retries: 0,
        ..CompleteOptions::default()
    }
}

/// The isolating sandbox when bwrap works here, else none (the confinement tests then
/// report that they were skipped; CI installs bubblewrap).
fn bwrap() -> Option<Sandbox> {
    codesmith_tools::sandbox::backend_from_name("bwrap")
        .ok()
        .map(|b| Sandbox::new(b, false))
}

fn text(outcome: &ToolOutcome) -> String {
    match outcome {
        Ok(out) => out.output.as_str().unwrap_or_default().to_string(),
        Err(r) => format!("REFUSED {:?}: {} / {}", r.code, r.message, r.hint),
    }
}

async fn open(rlm: &Arc<dyn Tool>, ctx: &ToolContext, inputs: Value) -> ToolOutcome {
    call_tool(rlm.as_ref(), ctx, json!({"task": "test", "inputs": inputs})).await
}

async fn exec(tool: &Arc<dyn Tool>, ctx: &ToolContext, code: &str) -> ToolOutcome {
    call_tool(tool.as_ref(), ctx, json!({ "code": code })).await
}

/// A deterministic 5 MB log: INFO lines, WARN lines and ERROR lines with codes of known
/// frequencies, and one marker line in the middle that must never reach the transcript.
fn make_log(path: &Path) -> (usize, Vec<(String, usize)>, String) {
    let mut log = String::with_capacity(5_300_000);
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut errors = 0;
    let marker = "SECRET-MIDDLE-MARKER-7f3a9c".to_string();
    let mut i = 0u64;
    while log.len() < 5 * 1024 * 1024 {
        i += 1;
        if i == 30_000 {
            log.push_str(&format!("2026-12-01T00:00:00Z INFO {marker}\n"));
        }
        // A small linear congruential sequence keeps the mix irregular but reproducible.
        let r = (i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 33)
            % 100;
        if r < 7 {
            let code = match r {
                0..=2 => "E1001",
                3..=4 => "E2002",
                5 => "E3003",
                _ => "E4004",
            };
            errors += 1;
            *counts.entry(code.to_string()).or_default() += 1;
            log.push_str(&format!(
                "2026-12-01T00:00:{:02}Z ERROR [{code}] request {i} failed: disk quota exceeded on volume {}\n",
                i % 60,
                i % 17
            ));
        } else if r < 15 {
            log.push_str(&format!(
                "2026-12-01T00:00:{:02}Z WARN slow request {i} took {} ms\n",
                i % 60,
                500 + i % 900
            ));
        } else {
            log.push_str(&format!(
                "2026-12-01T00:00:{:02}Z INFO request {i} served in {} ms\n",
                i % 60,
                i % 300
            ));
        }
    }
    std::fs::write(path, &log).unwrap();
    let mut top: Vec<(String, usize)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(3);
    (errors, top, marker)
}

#[tokio::test]
async fn a_scripted_root_counts_a_5_mb_log_exactly_and_a_child_classifies_a_sample() {
    let rig = Rig::new().await;
    let (errors, top, marker) = make_log(&rig.ws.join("app.log"));
    let round = r#"import collections, re
hits = grep(log, r'\bERROR\b', 1000)
n = sum(1 for line in log.splitlines() if ' ERROR ' in line)
codes = collections.Counter(re.findall(r'ERROR \[(E\d{4})\]', log)).most_common(3)
sample = '\n'.join(line for _, line in hits[:3])
label = llm('Classify the cause of these errors in one word:\n' + sample)
print('count', n)
print('top', codes)
print('label', label)"#;
    let s = &rig.server;
    s.push(Scripted::tool_call(
        "c1",
        "rlm",
        json!({"task": "count ERROR lines and the top three error codes",
               "inputs": [{"name": "log", "path": "app.log"}]})
        .to_string(),
    ));
    s.push(Scripted::tool_call(
        "c2",
        "rlm_exec",
        json!({ "code": round }).to_string(),
    ));
    s.push(Scripted::text("storage").usage(1_000, 2));
    s.push(Scripted::tool_call(
        "c3",
        "rlm_exec",
        json!({"code": "final(f'{n} ERROR lines; top codes {codes}; cause {label}')"}).to_string(),
    ));
    s.push(Scripted::text("Done."));
    let setup = common::Setup {
        extra_tools: rlm::tools(rig.provider(), "scripted", quick(), RlmConfig::default()),
        ..Default::default()
    };
    let mut engine = common::engine(&rig.server, &rig.ws, &rig.home, setup);
    let outcome = engine
        .run_task("Analyse app.log", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(outcome.status, codesmith_protocol::TaskStatus::Completed);

    let bodies = rig.server.request_bodies();
    assert_eq!(bodies.len(), 5, "root, root, child, root, root");
    // The child call: a plain completion under the child prompt, carrying the sample only.
    let child = &bodies[2];
    assert!(
        child
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{child}"
    );
    let child_text = child["messages"].to_string();
    assert!(child_text.contains("Classify the cause"), "{child_text}");
    assert!(
        child_text.contains("ERROR ["),
        "the sample travels to the child"
    );
    assert!(
        child_text.len() < 2_000,
        "only the sample, not the log: {}",
        child_text.len()
    );
    assert_eq!(
        child["max_tokens"]
            .as_u64()
            .or(child["max_completion_tokens"].as_u64()),
        Some(4096)
    );

    // The root's Python did the counting, exactly.
    let last = bodies[4]["messages"].to_string();
    assert!(last.contains(&format!("count {errors}")), "{last}");
    let top_py = format!(
        "[('{}', {}), ('{}', {}), ('{}', {})]",
        top[0].0, top[0].1, top[1].0, top[1].1, top[2].0, top[2].1
    );
    assert!(last.contains(&top_py), "expected {top_py} in {last}");
    assert!(last.contains("label storage"));
    assert!(
        last.contains(&format!("{errors} ERROR lines")),
        "the final answer"
    );

    // The transcript never holds the body: only capped previews.
    let transcript = std::fs::read_to_string(engine.session().path()).unwrap();
    assert!(
        !transcript.contains(&marker),
        "the middle of the log leaked"
    );
    assert!(
        transcript.len() < 40_000,
        "transcript is {} bytes",
        transcript.len()
    );
    for body in &bodies {
        assert!(!body.to_string().contains(&marker));
        assert!(body.to_string().len() < 60_000);
    }
    // The child call's usage is in the task's totals and in the transcript.
    assert!(outcome.usage.input_tokens >= 1_000, "{:?}", outcome.usage);
    let (recorded, _) = codesmith_engine::session::recorded_usage(engine.session().path());
    assert_eq!(recorded.input_tokens, outcome.usage.input_tokens);
    assert!(transcript.contains("\"child_calls\":true"));
}

#[tokio::test]
async fn printed_output_past_the_cap_is_cut_spilled_and_kept_in_the_repl() {
    let rig = Rig::new().await;
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    let opened = open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}])).await;
    assert!(opened.is_ok(), "{}", text(&opened));
    let out = exec(&exec_tool, &ctx, "print('x' * 5000 + 'END')").await;
    let shown = text(&out);
    assert!(shown.contains("characters omitted"), "{shown}");
    assert!(shown.contains("5004 characters printed"), "{shown}");
    assert!(shown.len() < 1_600, "{} bytes shown", shown.len());
    assert!(shown.contains("END"), "the tail is kept");
    let reference = out.as_ref().unwrap().meta["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let saved =
        std::fs::read_to_string(codesmith_tools::spill::spill_dir(&rig.home).join(reference))
            .unwrap();
    assert_eq!(saved.len(), 5004);
    let again = exec(&exec_tool, &ctx, "print(len(last_output))").await;
    assert_eq!(text(&again).trim(), "5004");
}

#[tokio::test]
async fn a_round_over_its_time_limit_is_killed_and_closes_the_session() {
    let rig = Rig::new().await;
    let config = RlmConfig {
        round_timeout: Duration::from_millis(800),
        ..RlmConfig::default()
    };
    let (rlm, exec_tool) = rig.tools(config);
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let pid = text(&exec(&exec_tool, &ctx, "import os; print(os.getpid())").await);
    let pid: i32 = pid.trim().parse().unwrap();
    let started = Instant::now();
    let out = exec(&exec_tool, &ctx, "while True: pass").await;
    assert!(started.elapsed() < Duration::from_secs(3));
    let err = out.unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::Timeout);
    assert!(err.message.contains("round limit"), "{}", err.message);
    assert!(gone(pid).await, "the REPL process {pid} was not killed");
    let after = exec(&exec_tool, &ctx, "print(1)").await.unwrap_err();
    assert_eq!(after.code, codesmith_tools::ErrorCode::NotFound);
}

#[tokio::test]
async fn a_session_over_its_time_limit_is_closed() {
    let rig = Rig::new().await;
    let config = RlmConfig {
        session_timeout: Duration::from_millis(700),
        ..RlmConfig::default()
    };
    let (rlm, exec_tool) = rig.tools(config);
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let out = exec(&exec_tool, &ctx, "import time; time.sleep(2)")
        .await
        .unwrap_err();
    assert_eq!(out.code, codesmith_tools::ErrorCode::Timeout);
    assert!(out.message.contains("session limit"), "{}", out.message);
}

#[tokio::test]
async fn a_child_call_over_its_time_limit_fails_in_python() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::text("late").stall_before(1_500));
    let config = RlmConfig {
        child_timeout: Duration::from_millis(400),
        ..RlmConfig::default()
    };
    let (rlm, exec_tool) = rig.tools(config);
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let started = Instant::now();
    let out = text(
        &exec(
            &exec_tool,
            &ctx,
            "try:\n    llm('q')\nexcept RuntimeError as e:\n    print('caught', e)",
        )
        .await,
    );
    assert!(
        started.elapsed() < Duration::from_millis(1_400),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.contains("caught child call failed") && out.contains("timed out"),
        "{out}"
    );
}

#[tokio::test]
async fn a_batch_over_sixteen_prompts_is_refused_and_sixteen_run() {
    let rig = Rig::new().await;
    for i in 0..16 {
        rig.server.push(Scripted::text(format!("a{i}")));
    }
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let over = text(&exec(&exec_tool, &ctx, "llm_batch(['p'] * 17)").await);
    assert!(
        over.contains("at most 16 prompts per batch, got 17"),
        "{over}"
    );
    assert!(rig.server.requests().is_empty(), "nothing was sent");
    let ok = exec(
        &exec_tool,
        &ctx,
        "r = llm_batch([f'p{i}' for i in range(16)]); print(len(r), sorted(r)[:2])",
    )
    .await;
    assert!(text(&ok).starts_with("16 ['a0', 'a1']"), "{}", text(&ok));
    assert_eq!(ok.unwrap().meta["child_calls"], 16);
    assert_eq!(
        ctx.child_usage.take().input_tokens,
        160,
        "every child call is counted"
    );
}

#[tokio::test]
async fn rlm_query_recurses_while_depth_remains_and_is_a_plain_completion_after() {
    let rig = Rig::new().await;
    // Depth 1: the child is an RLM of its own; its code runs in its own REPL.
    rig.server.push(Scripted::text(
        "```repl\nfinal(str(len(context)) + ' chars')\n```",
    ));
    let (rlm, exec_tool) = rig.tools(RlmConfig {
        depth: 1,
        ..RlmConfig::default()
    });
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let out = text(
        &exec(
            &exec_tool,
            &ctx,
            "print(rlm_query('how long?', 'x' * 12345))",
        )
        .await,
    );
    assert_eq!(out.trim(), "12345 chars");
    let child = &rig.server.request_bodies()[0];
    assert!(
        child
            .to_string()
            .contains("child of a Recursive Language Model")
    );
    assert!(
        !child.to_string().contains(&"x".repeat(300)),
        "the child sees a preview only"
    );

    // Depth exhausted: a plain completion with the context inline.
    let rig = Rig::new().await;
    rig.server.push(Scripted::text("plain"));
    let (rlm, exec_tool) = rig.tools(RlmConfig {
        depth: 0,
        ..RlmConfig::default()
    });
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let out = text(&exec(&exec_tool, &ctx, "print(rlm_query('how long?', 'yyy'))").await);
    assert_eq!(out.trim(), "plain");
    let child = rig.server.request_bodies()[0].to_string();
    assert!(child.contains("You answer one sub-question"), "{child}");
    assert!(child.contains("<context>\\nyyy\\n</context>"), "{child}");
}

#[tokio::test]
async fn memory_past_the_limit_raises_memory_error_in_the_round() {
    let rig = Rig::new().await;
    let config = RlmConfig {
        memory_bytes: 512 << 20,
        ..RlmConfig::default()
    };
    let (rlm, exec_tool) = rig.tools(config);
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let out = text(&exec(&exec_tool, &ctx, "x = bytearray(2 << 30)").await);
    assert!(out.contains("MemoryError"), "{out}");
    let still = text(&exec(&exec_tool, &ctx, "print(len(t))").await);
    assert_eq!(
        still.trim(),
        "3",
        "the session survives a refused allocation"
    );
}

#[tokio::test]
async fn without_python_rlm_is_refused_naming_what_to_install() {
    let rig = Rig::new().await;
    let empty = tempfile::tempdir().unwrap();
    let config = RlmConfig {
        python_path: Some(empty.path().as_os_str().to_owned()),
        ..RlmConfig::default()
    };
    let (rlm, _) = rig.tools(config);
    let err = open(
        &rlm,
        &rig.ctx(Sandbox::none()),
        json!([{"name": "t", "text": "abc"}]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::Unavailable);
    assert!(
        err.message.contains("python3") && err.hint.contains("apt-get install python3"),
        "{err:?}"
    );
}

#[tokio::test]
async fn with_a_required_sandbox_that_cannot_isolate_rlm_is_refused() {
    let rig = Rig::new().await;
    let (rlm, _) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none().with_required(true));
    let err = open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::Denied);
    assert!(err.hint.contains("bubblewrap"), "{err:?}");
}

#[tokio::test]
async fn inputs_outside_the_workspace_or_badly_named_are_refused() {
    let rig = Rig::new().await;
    std::fs::write(rig.outside.join("x.txt"), "secret").unwrap();
    let (rlm, _) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    let escape = format!(
        "../{}/x.txt",
        rig.outside.file_name().unwrap().to_string_lossy()
    );
    let err = open(&rlm, &ctx, json!([{"name": "x", "path": escape}]))
        .await
        .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::OutsideWorkspace);
    let err = open(&rlm, &ctx, json!([{"name": "final", "text": "a"}]))
        .await
        .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::InvalidArguments);
    let err = open(&rlm, &ctx, json!([{"name": "a", "text": "a", "path": "b"}]))
        .await
        .unwrap_err();
    assert!(err.message.contains("exactly one"), "{err:?}");
}

#[tokio::test]
async fn a_glob_input_is_a_dict_of_path_to_text() {
    let rig = Rig::new().await;
    std::fs::create_dir_all(rig.ws.join("src/deep")).unwrap();
    std::fs::write(rig.ws.join("src/a.rs"), "// TODO one\n").unwrap();
    std::fs::write(rig.ws.join("src/deep/b.rs"), "// TODO two\n// TODO three\n").unwrap();
    std::fs::write(rig.ws.join("src/c.txt"), "TODO not me\n").unwrap();
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    let opened = text(&open(&rlm, &ctx, json!([{"name": "src", "glob": "src/**/*.rs"}])).await);
    assert!(opened.contains("2 files"), "{opened}");
    let out = text(
        &exec(
            &exec_tool,
            &ctx,
            "print(sorted((p, len(grep(t, 'TODO'))) for p, t in src.items()))",
        )
        .await,
    );
    assert_eq!(out.trim(), "[('src/a.rs', 1), ('src/deep/b.rs', 2)]");
}

#[tokio::test]
async fn the_repl_cannot_write_outside_the_workspace_nor_reach_the_network() {
    let Some(sandbox) = bwrap() else {
        codesmith_testkit::missing(
            "BWRAP",
            "this REPL sandbox test checked nothing (install bubblewrap)",
        );
        return;
    };
    let rig = Rig::new().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(sandbox);
    let opened = open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}])).await;
    assert!(
        text(&opened).contains("sandbox \"bwrap\""),
        "{}",
        text(&opened)
    );
    let outside = rig.outside.join("escaped.txt");
    let code = format!(
        r#"import os, socket
def attempt(f):
    try:
        f()
        return 'ok'
    except Exception as e:
        return type(e).__name__
def write(p):
    with open(p, 'w') as fh:
        fh.write('x')
print('inside', attempt(lambda: write({inside:?})))
print('outside', attempt(lambda: write({outside:?})))
print('etc', attempt(lambda: write('/etc/codesmith-rlm-probe')))
print('net', attempt(lambda: socket.create_connection(('127.0.0.1', {port}), timeout=1)))
print('uid', os.getuid())"#,
        inside = rig.ws.join("made-inside.txt").display().to_string(),
        outside = outside.display().to_string(),
    );
    let out = text(&exec(&exec_tool, &ctx, &code).await);
    assert!(out.contains("inside ok"), "{out}");
    assert!(!out.contains("outside ok") && !outside.exists(), "{out}");
    assert!(
        !out.contains("etc ok") && !Path::new("/etc/codesmith-rlm-probe").exists(),
        "{out}"
    );
    assert!(!out.contains("net ok"), "{out}");
    assert!(listener.accept().is_err(), "the listener saw a connection");
    assert!(rig.ws.join("made-inside.txt").exists());
    if nix_root() {
        assert!(!out.contains("uid 0"), "root inside the sandbox: {out}");
    }
}

fn nix_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

#[tokio::test]
async fn cancelling_a_round_kills_the_repl_and_the_end_of_a_task_closes_the_session() {
    let rig = Rig::new().await;
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let pid: i32 = text(&exec(&exec_tool, &ctx, "import os; print(os.getpid())").await)
        .trim()
        .parse()
        .unwrap();
    let cancel = CancellationToken::new();
    let cctx = ctx.with_cancel(cancel.clone());
    let fire = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fire.cancel();
    });
    let started = Instant::now();
    let err = exec(&exec_tool, &cctx, "import time; time.sleep(30)")
        .await
        .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(gone(pid).await, "the REPL {pid} survived the cancel");

    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let pid: i32 = text(&exec(&exec_tool, &ctx, "import os; print(os.getpid())").await)
        .trim()
        .parse()
        .unwrap();
    // Another session's end (a subagent sharing the tools) leaves this one open.
    rlm.task_ended(&rig.ctx(Sandbox::none()));
    assert_eq!(text(&exec(&exec_tool, &ctx, "print(7)").await).trim(), "7");
    rlm.task_ended(&ctx);
    assert!(
        gone(pid).await,
        "the REPL {pid} survived the end of the task"
    );
    assert_eq!(
        exec(&exec_tool, &ctx, "print(1)").await.unwrap_err().code,
        codesmith_tools::ErrorCode::NotFound
    );
}

#[tokio::test]
async fn in_suggest_mode_each_round_asks_and_a_session_approval_covers_the_rest() {
    let rig = Rig::new().await;
    let s = &rig.server;
    s.push(Scripted::tool_call(
        "c1",
        "rlm",
        json!({"task": "t", "inputs": [{"name": "t", "text": "abcdef"}]}).to_string(),
    ));
    s.push(Scripted::tool_call(
        "c2",
        "rlm_exec",
        json!({"code": "print(len(t))"}).to_string(),
    ));
    s.push(Scripted::tool_call(
        "c3",
        "rlm_exec",
        json!({"code": "print(t[::-1])"}).to_string(),
    ));
    s.push(Scripted::text("Done."));
    let recorder = common::Recorder::new(codesmith_protocol::ApprovalAnswer::Session);
    let setup = common::Setup {
        approval: codesmith_policy::ApprovalMode::AutoEdit,
        approver: recorder.clone(),
        extra_tools: rlm::tools(rig.provider(), "scripted", quick(), RlmConfig::default()),
        ..Default::default()
    };
    let mut engine = common::engine(&rig.server, &rig.ws, &rig.home, setup);
    engine.run_task("go", &mut |_| {}).await.unwrap();
    assert_eq!(recorder.count(), 1, "asked once for rlm_exec, not for rlm");
    let asked = recorder.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.tool, "rlm_exec");
    assert!(asked.summary.contains("print(len(t))"));
    let last = rig.server.request_bodies()[3]["messages"].to_string();
    assert!(last.contains("fedcba"), "the second round ran: {last}");
}

#[tokio::test]
async fn names_python_itself_uses_and_sources_that_are_not_text_are_refused_as_arguments() {
    let rig = Rig::new().await;
    let (rlm, _) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    for name in ["__builtins__", "__name__", "print", "len", "input"] {
        let err = open(&rlm, &ctx, json!([{"name": name, "text": "a"}]))
            .await
            .unwrap_err();
        assert_eq!(
            err.code,
            codesmith_tools::ErrorCode::InvalidArguments,
            "{name}: {err:?}"
        );
    }
    for source in ["path", "glob", "ref", "text"] {
        let err = open(&rlm, &ctx, json!([{"name": "a", source: 5}]))
            .await
            .unwrap_err();
        assert_eq!(
            err.code,
            codesmith_tools::ErrorCode::InvalidArguments,
            "{source}: {err:?}"
        );
        assert!(err.message.contains("must be a string"), "{err:?}");
    }
    // A name that only looks like one of them is fine.
    open(&rlm, &ctx, json!([{"name": "_log", "text": "a"}]))
        .await
        .unwrap();
}

/// The REPL's round code can make the process say anything on its way down: forge a
/// protocol message, write garbage on the protocol pipe, flood its stderr and crash. What
/// of it reaches the refusal is screened and cut, and a crash keeps its last words.
#[tokio::test]
async fn what_the_python_process_says_in_an_error_is_screened_cut_and_keeps_its_last_words() {
    let rig = Rig::new().await;
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    // Under bwrap when it isolates here (the sandbox must leave stderr in place), else bare.
    let ctx = rig.ctx(bwrap().unwrap_or_else(Sandbox::none));
    let cases = [
        (
            "llm_batch.__globals__['_send']({'op': '\\x1b]0;PWNED\\x07' + 'z' * 3000000})",
            "broke the protocol",
        ),
        (
            "o = llm_batch.__globals__['_out']; o.write('\\x1b[2J' + 'q' * 3000000 + '\\n'); o.flush()",
            "not JSON",
        ),
        (
            "import os\nos.write(2, b'\\x1b]0;PWNED\\x07' + b'y' * 3000000 + b'\\nLAST-WORDS\\n')\nos._exit(3)",
            "LAST-WORDS",
        ),
    ];
    for (code, expect) in cases {
        open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
            .await
            .unwrap();
        let err = exec(&exec_tool, &ctx, code).await.unwrap_err();
        let shown = format!("{} {}", err.message, err.hint);
        assert!(shown.contains(expect), "{expect}: {shown:.500}");
        assert!(
            shown.chars().count() < 3_000,
            "{expect}: {} chars",
            shown.len()
        );
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:.500}"
        );
    }
}

/// An input full of control characters (a binary file, a log of terminal escapes) loads
/// at its own size: escaped in JSON it would be six times larger, past the memory limit.
#[tokio::test]
async fn an_input_of_control_characters_loads_within_a_memory_limit_a_few_times_its_size() {
    let rig = Rig::new().await;
    let (rlm, exec_tool) = rig.tools(RlmConfig {
        memory_bytes: 600 << 20,
        ..RlmConfig::default()
    });
    let ctx = rig.ctx(Sandbox::none());
    let mut body = vec![0u8; 60 << 20];
    body.extend_from_slice("\u{1b}[31mé\n".as_bytes());
    std::fs::write(rig.ws.join("blob"), &body).unwrap();
    std::fs::create_dir_all(rig.ws.join("d")).unwrap();
    std::fs::write(rig.ws.join("d/a.txt"), "\u{0}\u{1}x").unwrap();
    std::fs::write(rig.ws.join("d/b.txt"), "").unwrap();
    let opened = open(
        &rlm,
        &ctx,
        json!([{"name": "blob", "path": "blob"}, {"name": "d", "glob": "d/*.txt"},
               {"name": "t", "text": "inline\u{0}"}]),
    )
    .await;
    assert!(opened.is_ok(), "{}", text(&opened));
    let out = text(
        &exec(
            &exec_tool,
            &ctx,
            "print(len(blob), blob.count('\\0'), repr(blob[-7:]), sorted(d.items()), repr(t))",
        )
        .await,
    );
    assert_eq!(
        out.trim(),
        format!(
            "{} {} '\\x1b[31mé\\n' [('d/a.txt', '\\x00\\x01x'), ('d/b.txt', '')] 'inline\\x00'",
            (60 << 20) + 7,
            60 << 20
        )
    );
    // An input past what the limit holds fails the load, saying so.
    let (small, _) = rig.tools(RlmConfig {
        memory_bytes: 300 << 20,
        ..RlmConfig::default()
    });
    std::fs::write(rig.ws.join("huge"), vec![b'x'; 200 << 20]).unwrap();
    let err = open(&small, &ctx, json!([{"name": "huge", "path": "huge"}]))
        .await
        .unwrap_err();
    assert!(err.message.contains("MemoryError"), "{err:?}");
    assert!(err.hint.contains("do not fit"), "{err:?}");
}

/// Child calls made from several Python threads at once (a thread pool over `llm`) each
/// get their own answer: the request and its answer are one exchange on the pipe.
#[tokio::test]
async fn child_calls_from_many_threads_each_get_their_own_answer() {
    let rig = Rig::new().await;
    let n = 48;
    for i in 0..n {
        rig.server.push(Scripted::text(format!("answer-{i}")));
    }
    let (rlm, exec_tool) = rig.tools(RlmConfig {
        round_timeout: Duration::from_secs(20),
        ..RlmConfig::default()
    });
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let code = format!(
        "from concurrent.futures import ThreadPoolExecutor\n\
         with ThreadPoolExecutor(12) as pool:\n    \
         got = list(pool.map(lambda i: (i, llm('prompt-%d' % i)), range({n})))\n\
         print(';'.join('%d=%s' % pair for pair in got))"
    );
    let out = text(&exec(&exec_tool, &ctx, &code).await);
    assert!(!out.starts_with("REFUSED"), "{out}");
    // Which answer the server gave to which prompt, in the order it was asked.
    let mut given = HashMap::new();
    for (k, body) in rig.server.request_bodies().iter().enumerate() {
        let asked = body["messages"].to_string();
        let i = (0..n)
            .rev()
            .find(|i| asked.contains(&format!("prompt-{i}")))
            .unwrap();
        given.insert(i, format!("answer-{k}"));
    }
    assert_eq!(given.len(), n, "{out}");
    for pair in out.trim().split(';') {
        let (i, answer) = pair.split_once('=').unwrap();
        assert_eq!(
            given[&i.parse::<usize>().unwrap()],
            answer,
            "prompt {i} got another prompt's answer: {out}"
        );
    }
}

/// Code that forges the end of its round on the protocol pipe cannot make later rounds
/// answer with the previous round's output: the stale end is caught and the session closed.
#[tokio::test]
async fn a_forged_end_of_round_closes_the_session_instead_of_shifting_later_rounds() {
    let rig = Rig::new().await;
    let (rlm, exec_tool) = rig.tools(RlmConfig::default());
    let ctx = rig.ctx(Sandbox::none());
    open(&rlm, &ctx, json!([{"name": "t", "text": "abc"}]))
        .await
        .unwrap();
    let forge = "g = llm_batch.__globals__\n\
                 g['_send']({'op': 'done', 'output': 'FORGED', 'output_chars': 6, 'final': None, 'error': None})\n\
                 import time; time.sleep(0.3); print('first')";
    let first = exec(&exec_tool, &ctx, forge).await;
    assert!(first.is_err(), "{}", text(&first));
    assert!(
        text(&first).contains("answered as round"),
        "{}",
        text(&first)
    );
    let second = exec(&exec_tool, &ctx, "print('second')").await;
    assert_eq!(
        second.as_ref().map_err(|r| r.code),
        Err(codesmith_tools::ErrorCode::NotFound),
        "a round after the forgery ran: {}",
        text(&second)
    );
}

/// True once `pid` is gone (or a zombie), within 2 s.
async fn gone(pid: i32) -> bool {
    for _ in 0..40 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if status.is_empty() || status.contains("State:\tZ") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
