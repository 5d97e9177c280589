//! Keystroke-to-screen latency of the terminal UI while an answer streams.
//!
//! The answer comes over the wire: a [`ScriptedServer`] plays one long
//! OpenAI-dialect turn, one 4-character delta (about one token) per SSE event
//! every 5 ms (`pace_ms(5)`, the issue's 200 tokens/s), and the real OpenAI
//! provider and engine consume it on their own task. As in `tui/driver.rs`,
//! the engine's event sink forwards each event on an unbounded channel; the UI
//! side is the state, reducer and view compiled in from `src/tui/`, driven the
//! way `tui/tty.rs` drives them: one `select!` over key presses and engine
//! messages (drained in batches of at most 256), then a redraw. The transcript
//! already holds a long session. Once the first delta is on screen a typist
//! presses a key every 37 ms until the turn ends. Each key's latency runs from
//! the moment it is sent to the end of the frame that shows it, flushed
//! through ratatui's crossterm backend (escape sequences written to a sink, as
//! they would be to a terminal). Target: under 16 ms.
//!
//! Run: `cargo bench -p codesmith-cli --bench tui_latency`. Without
//! `--bench` (as under `cargo test --all-targets`) it prints a line and exits.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(dead_code, unused_imports, missing_docs, clippy::unwrap_used)]

#[path = "../src/tui/app.rs"]
mod app;
#[path = "../src/tui/approval.rs"]
mod approval;
#[path = "../src/tui/input.rs"]
mod input;
#[path = "../src/tui/markdown.rs"]
mod markdown;
#[path = "../src/render.rs"]
mod render;
#[path = "../src/tui/slash.rs"]
mod slash;
#[path = "../src/tui/status.rs"]
mod status;
#[path = "../src/tui/theme.rs"]
mod theme;
#[path = "../src/tui/view.rs"]
mod view;
#[path = "../src/tui/wrap.rs"]
mod wrap;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use codesmith_engine::{Engine, EngineConfig, NoApprover, Session};
use codesmith_policy::{ApprovalMode, NetworkPolicy, Rules};
use codesmith_protocol::Event;
use codesmith_providers::{CompleteOptions, OpenAiConfig, OpenAiProvider};
use codesmith_testkit::{Scripted, ScriptedServer};
use codesmith_tools::ToolContext;
use codesmith_tools::fetch::FetchConfig;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::{mpsc, watch};

/// Tokens streamed per run: 5 s at 200 tokens/s.
const STREAM_TOKENS: usize = 1_000;
/// Characters per SSE delta, about one token.
const TOKEN_CHARS: usize = 4;
/// Gap between SSE events: 5 ms, i.e. 200 tokens/s.
const PACE_MS: u64 = 5;
const KEY_EVERY: Duration = Duration::from_millis(37);
/// Most engine messages applied before a redraw (as `tui/tty.rs`).
const DRAIN_BATCH: usize = 256;

/// What the engine task sends the UI (the subset of `driver::ToUi` a plain
/// streamed answer uses), sized like it: events are sent unboxed there too.
#[allow(clippy::large_enum_variant)]
enum ToUi {
    Event(Event),
    Done,
}

/// The scripted answer: markdown-ish prose of `STREAM_TOKENS` deltas.
fn long_answer() -> String {
    let words = [
        "the ",
        "engine ",
        "streams ",
        "text, ",
        "`code` ",
        "and **bold**\n",
    ];
    let mut text = String::new();
    let mut n = 0;
    while text.chars().count() < STREAM_TOKENS * TOKEN_CHARS {
        text.push_str(words[n % words.len()]);
        n += 1;
    }
    text.chars().take(STREAM_TOKENS * TOKEN_CHARS).collect()
}

/// The real OpenAI provider and engine against `server`, on a scratch workspace.
fn engine(server: &ScriptedServer, ws: &std::path::Path, home: &std::path::Path) -> Engine {
    let provider = OpenAiProvider::new(OpenAiConfig::new(
        server.base_url(),
        Some("sk-bench".into()),
    ))
    .unwrap();
    let session = Session::create(home, ws, "openai", "scripted").unwrap();
    let config = EngineConfig {
        model: "scripted".into(),
        system_prompt: "bench".into(),
        max_turns: 4,
        max_tokens: None,
        approval: ApprovalMode::Auto,
        complete: CompleteOptions::default(),
        rules: Rules::new(),
        network: NetworkPolicy::default(),
        agents: Default::default(),
        verify_claims: false,
        slop_from_verdicts: false,
        early_start: true,
        snapshots: codesmith_engine::snapshot::SnapshotSettings::default(),
        context: codesmith_engine::ContextBudget::default(),
        hooks: Default::default(),
    };
    let ctx = ToolContext::new(ws.to_path_buf(), home.to_path_buf());
    Engine::new(
        Arc::new(provider),
        codesmith_tools::builtin_registry(FetchConfig::default()),
        Arc::new(ctx),
        Arc::new(NoApprover),
        session,
        config,
    )
}

fn long_session(app: &mut app::App) {
    for i in 0..200 {
        app.start_task(&format!("task {i}: fix the failing test in module {i}"));
        app.apply(Event::ToolCall {
            id: format!("c{i}"),
            name: "edit_file".into(),
            arguments: serde_json::json!({"path": "src/lib.rs", "search": "a - b", "replace": "a + b"}),
        });
        app.apply(Event::ToolResult {
            id: format!("c{i}"),
            name: "edit_file".into(),
            ok: true,
            output: "Edited \"src/lib.rs\".".into(),
            meta: serde_json::Value::Null,
            error: None,
            summary: Some("+1 -1".into()),
            changes: vec![codesmith_protocol::ChangedFile {
                path: "src/lib.rs".into(),
                kind: codesmith_protocol::ChangeKind::Modified,
                moved_to: None,
                added: 1,
                removed: 1,
                diff: "@@ -1 +1 @@\n-a - b\n+a + b\n".into(),
                truncated: false,
            }],
            source: None,
        });
        app.apply(Event::AssistantText {
            delta:
                "Done. Here is the fix:\n```rust\nfn add(a: i32, b: i32) -> i32 { a + b }\n```\n"
                    .repeat(2),
        });
        app.task_finished();
    }
    app.start_task("explain the whole crate");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Latencies (ms), frame times (ms), deltas seen and the stream's duration.
struct Figures {
    latencies: Vec<f64>,
    draws: Vec<f64>,
    deltas: u64,
    streamed: Duration,
}

async fn run(width: u16, height: u16, answer_so_far: usize) -> Figures {
    let mut app = app::App::new(
        theme::Theme::new(theme::ThemeKind::Dark),
        status::Status::new("openai", "scripted", "auto", "none", false),
    );
    long_session(&mut app);
    if answer_so_far > 0 {
        let para = "Some prose with `code` and **bold** words, then a list:\n- one\n- two\n";
        app.apply(Event::AssistantText {
            delta: para.repeat(answer_so_far / para.len() + 1),
        });
    }
    let backend = CrosstermBackend::new(std::io::sink());
    let mut terminal = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, width, height)),
        },
    )
    .unwrap();

    let server = ScriptedServer::start().await;
    server.push(
        Scripted::text(long_answer())
            .chunk_chars(TOKEN_CHARS)
            .write_bytes(0)
            .pace_ms(PACE_MS),
    );
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut engine = engine(&server, ws.path(), home.path());

    let (etx, mut erx) = mpsc::unbounded_channel::<ToUi>();
    let (ktx, mut krx) = mpsc::unbounded_channel::<(Instant, KeyEvent)>();
    let finished = Arc::new(AtomicBool::new(false));
    let (streaming_tx, mut streaming) = watch::channel(false);
    let done = Arc::clone(&finished);
    tokio::spawn(async move {
        let events = etx.clone();
        let mut sink = move |e: Event| {
            let _ = events.send(ToUi::Event(e));
        };
        let outcome = engine.run_task("explain the whole crate", &mut sink).await;
        if let Err(e) = outcome {
            eprintln!("tui_latency: the engine failed: {e}");
        }
        done.store(true, Ordering::SeqCst);
        let _ = etx.send(ToUi::Done);
    });
    let done = Arc::clone(&finished);
    tokio::spawn(async move {
        if streaming.wait_for(|s| *s).await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(KEY_EVERY);
        let mut n = 0u32;
        while !done.load(Ordering::SeqCst) {
            tick.tick().await;
            let c = char::from(b'a' + (n % 26) as u8);
            let _ = ktx.send((
                Instant::now(),
                KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            ));
            n += 1;
        }
    });

    let mut latencies = Vec::new();
    let mut draws = Vec::new();
    let mut deltas = 0u64;
    let (mut first, mut last) = (None, None);
    let mut apply = |app: &mut app::App, msg: ToUi| match msg {
        ToUi::Event(e) => {
            if matches!(e, Event::AssistantText { .. }) {
                deltas += 1;
                let now = Instant::now();
                first.get_or_insert(now);
                last = Some(now);
                streaming_tx.send_replace(true);
            }
            app.apply(e);
        }
        ToUi::Done => app.task_done(),
    };
    loop {
        let mut sent_at = None;
        tokio::select! {
            k = krx.recv() => {
                let Some((at, key)) = k else { break };
                app.on_key(key);
                sent_at = Some(at);
            }
            m = erx.recv() => {
                let Some(m) = m else { break };
                apply(&mut app, m);
                for _ in 0..DRAIN_BATCH {
                    match erx.try_recv() {
                        Ok(m) => apply(&mut app, m),
                        Err(_) => break,
                    }
                }
            }
        }
        let t = Instant::now();
        terminal.draw(|f| view::draw(f, &mut app)).unwrap();
        draws.push(t.elapsed().as_secs_f64() * 1e3);
        if let Some(at) = sent_at {
            latencies.push(at.elapsed().as_secs_f64() * 1e3);
        }
    }
    Figures {
        latencies,
        draws,
        deltas,
        streamed: match (first, last) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        },
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "tui_latency: skipped (run it with `cargo bench -p codesmith-cli --bench tui_latency`)"
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (w, h, so_far) in [(80u16, 24u16, 0usize), (200, 60, 0), (80, 24, 40_000)] {
        let Figures {
            mut latencies,
            mut draws,
            deltas,
            streamed,
        } = rt.block_on(run(w, h, so_far));
        latencies.sort_by(f64::total_cmp);
        draws.sort_by(f64::total_cmp);
        let rate = deltas as f64 / streamed.as_secs_f64().max(1e-3);
        println!(
            "tui_latency {w}x{h}, answer already {so_far} bytes: {} keys while the scripted server \
             streamed {deltas} deltas in {:.2} s ({rate:.0} tokens/s, {} frames): \
             keystroke-to-screen p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target < 16 ms); \
             one frame p50 {:.2} ms, p99 {:.2} ms",
            latencies.len(),
            streamed.as_secs_f64(),
            draws.len(),
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies.last().copied().unwrap_or(0.0),
            percentile(&draws, 0.5),
            percentile(&draws, 0.99),
        );
    }
}
