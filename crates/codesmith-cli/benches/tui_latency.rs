//! Keystroke-to-screen latency of the terminal UI while an answer streams.
//!
//! The UI's state, reducer and view are compiled in from `src/tui/` and driven
//! the way the real loop drives them: one `select!` over key presses and
//! engine events, a redraw after each wake-up (engine events drained in a
//! batch first). A producer streams assistant text at 200 tokens/s (one
//! delta of about 4 characters every 5 ms, the issue's target rate) into a
//! transcript that already holds a long session; a typist presses a key every
//! 37 ms. Each key's latency runs from the moment it is sent to the end of the
//! frame that shows it, flushed through ratatui's crossterm backend (escape
//! sequences written to a sink, as they would be to a terminal). Target: under 16 ms.
//!
//! Run: `cargo bench -p codesmith-cli --bench tui_latency`.

#![allow(dead_code, unused_imports, missing_docs, clippy::unwrap_used)]

#[path = "../src/tui/app.rs"]
mod app;
#[path = "../src/tui/approval.rs"]
mod approval;
#[path = "../src/tui/input.rs"]
mod input;
#[path = "../src/tui/markdown.rs"]
mod markdown;
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

use std::time::{Duration, Instant};

use codesmith_protocol::Event;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::mpsc;

const STREAM_SECS: u64 = 5;
const TOKEN_EVERY: Duration = Duration::from_millis(5);
const KEY_EVERY: Duration = Duration::from_millis(37);

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
            output: "{\"ok\":true}".into(),
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

async fn run(width: u16, height: u16, answer_so_far: usize) -> (Vec<f64>, Vec<f64>, u64) {
    let mut app = app::App::new(
        theme::Theme::new(theme::ThemeKind::Dark),
        status::Status::new("openai", "gpt-4.1-mini", "suggest", "none", false),
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
    let (etx, mut erx) = mpsc::unbounded_channel::<Event>();
    let (ktx, mut krx) = mpsc::unbounded_channel::<(Instant, KeyEvent)>();
    let end = Instant::now() + Duration::from_secs(STREAM_SECS);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TOKEN_EVERY);
        let words = [
            "the ",
            "engine ",
            "streams ",
            "text, ",
            "`code` ",
            "and **bold**\n",
        ];
        let mut n = 0;
        while Instant::now() < end {
            tick.tick().await;
            let _ = etx.send(Event::AssistantText {
                delta: words[n % words.len()].to_string(),
            });
            n += 1;
        }
    });
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(KEY_EVERY);
        let mut n = 0u32;
        while Instant::now() < end {
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
    let (mut frames, mut events) = (0u64, 0u64);
    loop {
        let mut sent_at = None;
        tokio::select! {
            k = krx.recv() => {
                let Some((at, key)) = k else { break };
                app.on_key(key);
                sent_at = Some(at);
            }
            e = erx.recv() => {
                let Some(e) = e else { break };
                app.apply(e);
                events += 1;
                for _ in 0..256 {
                    match erx.try_recv() {
                        Ok(e) => { app.apply(e); events += 1; }
                        Err(_) => break,
                    }
                }
            }
        }
        let t = Instant::now();
        terminal.draw(|f| view::draw(f, &mut app)).unwrap();
        draws.push(t.elapsed().as_secs_f64() * 1e3);
        frames += 1;
        if let Some(at) = sent_at {
            latencies.push(at.elapsed().as_secs_f64() * 1e3);
        }
    }
    let _ = frames;
    (latencies, draws, events)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (w, h, so_far) in [(80u16, 24u16, 0usize), (200, 60, 0), (80, 24, 40_000)] {
        let (mut lat, mut draws, events) = rt.block_on(run(w, h, so_far));
        lat.sort_by(f64::total_cmp);
        draws.sort_by(f64::total_cmp);
        println!(
            "tui_latency {w}x{h}, answer already {so_far} bytes: {} keys over {STREAM_SECS} s of streaming at 200 tok/s \
             ({events} deltas, {} frames): keystroke-to-screen p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms \
             (target < 16 ms); one frame p50 {:.2} ms, p99 {:.2} ms",
            lat.len(),
            draws.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(0.0),
            percentile(&draws, 0.5),
            percentile(&draws, 0.99),
        );
    }
}
