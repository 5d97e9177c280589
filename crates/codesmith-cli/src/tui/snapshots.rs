//! Rendering tests: key screens drawn on ratatui's test backend at 80×24,
//! asserted on the buffer's text.

#![allow(clippy::unwrap_used)]

use codesmith_protocol::ApprovalRequest;
use codesmith_protocol::{ChangeKind, ChangedFile, ErrorCode, Event, StopReason, ToolError, Usage};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::App;
use super::status::Status;
use super::theme::{Theme, ThemeKind};
use super::view;

fn app() -> App {
    let mut a = App::new(
        Theme::new(ThemeKind::Dark),
        Status::new("openai", "gpt-4.1-mini", "suggest", "none", false),
    );
    a.session_id = "20261129-132000-abcdef".into();
    a.info(vec![
        "CodeSmith · /work/calc · session 20261129-132000-abcdef".into(),
        "Type a task and press Enter. /help lists commands; Ctrl-C twice quits.".into(),
    ]);
    a
}

fn screen(app: &mut App) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
    let buf = terminal.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

fn find(rows: &[String], needle: &str) -> usize {
    rows.iter()
        .position(|r| r.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{}", rows.join("\n")))
}

#[test]
fn empty_screen_shows_welcome_input_and_status() {
    let rows = screen(&mut app());
    assert!(rows[0].starts_with("CodeSmith · /work/calc"));
    assert_eq!(find(&rows, "Ask for a change, or /help"), 21);
    assert!(rows[20].starts_with("┌ › message, /help"), "{}", rows[20]);
    assert!(rows[22].starts_with("└"));
    let status = &rows[23];
    assert!(
        status.starts_with("openai gpt-4.1-mini │ 0 tok $0.00 │ ctx 0"),
        "{status}"
    );
    assert!(
        status.contains("approval suggest │ no isolation"),
        "{status}"
    );
}

#[test]
fn streaming_answer_renders_markdown_at_the_bottom() {
    let mut a = app();
    a.start_task("explain calc.py");
    for d in [
        "The **add** fu",
        "nction:\n```python\ndef add(a, b):\n",
        "    return a - b\n```\nIt subtracts",
    ] {
        a.apply(Event::AssistantText { delta: d.into() });
    }
    let rows = screen(&mut a);
    let user = find(&rows, "› explain calc.py");
    let answer = find(&rows, "The add function:");
    assert!(answer > user);
    assert_eq!(rows[answer + 1], "┌── python");
    assert_eq!(rows[answer + 2], "│ def add(a, b):");
    assert_eq!(rows[answer + 3], "│     return a - b");
    assert_eq!(rows[answer + 4], "└────");
    assert_eq!(rows[answer + 5], "It subtracts");
    assert!(
        rows[20].contains("working… Ctrl-C interrupts"),
        "{}",
        rows[20]
    );
}

#[test]
fn tool_calls_show_status_and_coloured_diffs() {
    let mut a = app();
    a.start_task("fix it");
    a.apply(Event::ToolCall {
        id: "c1".into(),
        name: "edit_file".into(),
        arguments: serde_json::json!({"path": "calc.py", "search": "return a - b", "replace": "return a + b"}),
    });
    a.apply(Event::ToolResult {
        id: "c1".into(),
        name: "edit_file".into(),
        ok: true,
        output: "Edited \"calc.py\".".into(),
        meta: serde_json::Value::Null,
        error: None,
        summary: Some("+1 -1".into()),
        changes: vec![ChangedFile {
            path: "calc.py".into(),
            kind: ChangeKind::Modified,
            moved_to: None,
            added: 1,
            removed: 1,
            diff: "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n".into(),
            truncated: false,
        }],
        source: None,
    });
    a.apply(Event::ToolCall {
        id: "c2".into(),
        name: "exec_shell".into(),
        arguments: serde_json::json!({"command": "python3 -m unittest"}),
    });
    let rows = screen(&mut a);
    // The diff is the one the tool computed and sent on the result event, not a guess
    // from the call's arguments.
    let edit = find(&rows, "● edit_file calc.py · +1 -1");
    assert_eq!(rows[edit + 1], "    @@ -1,2 +1,2 @@");
    assert_eq!(rows[edit + 2], "     def add(a, b):");
    assert_eq!(rows[edit + 3], "    -    return a - b");
    assert_eq!(rows[edit + 4], "    +    return a + b");
    find(&rows, "◌ exec_shell python3 -m unittest …");
    a.apply(Event::ToolResult {
        id: "c2".into(),
        name: "exec_shell".into(),
        ok: false,
        output: "the model's text is not read for this".into(),
        meta: serde_json::Value::Null,
        error: Some(ToolError {
            code: ErrorCode::Timeout,
            message: "ran past 120 s".into(),
            hint: "run it in the background".into(),
        }),
        summary: None,
        changes: Vec::new(),
        source: None,
    });
    let rows = screen(&mut a);
    let shell = find(&rows, "✗ exec_shell python3 -m unittest");
    assert_eq!(rows[shell + 1], "  └ TIMEOUT: ran past 120 s");
}

#[test]
fn approval_prompt_shows_command_reason_and_choices() {
    let mut a = app();
    a.start_task("clean up");
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: "rm -rf build".into(),
        reason: "deletes files recursively".into(),
        can_persist: false,
        ..Default::default()
    });
    let rows = screen(&mut a);
    let top = find(&rows, "Allow exec_shell?");
    assert!(
        rows[top + 1].starts_with("│ $ rm -rf build   "),
        "{}",
        rows[top + 1]
    );
    assert!(rows[top + 1].ends_with('│') && rows[top + 1].chars().count() == 80);
    assert!(rows[top + 2].starts_with("│ why: deletes files recursively"));
    assert!(
        rows[top + 3].starts_with("│ [y] yes, once  [s] yes, this session  [n] no"),
        "{}",
        rows[top + 3]
    );
    assert!(!rows[top + 3].contains("always"));
    find(&rows, "answer the prompt above");
    a.approval = None;
    a.ask(ApprovalRequest {
        tool: "fetch_url".into(),
        summary: "fetch https://docs.rs".into(),
        reason: "the network policy asks".into(),
        can_persist: true,
        ..Default::default()
    });
    let rows = screen(&mut a);
    find(&rows, "[a] always");
}

#[test]
fn an_elided_command_is_shown_whole_before_it_can_be_approved() {
    use super::app::Action;
    use codesmith_protocol::ApprovalAnswer;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
    let mut a = app();
    a.start_task("build it");
    // Typed text whose dangerous line sits in the middle, where the prompt folds.
    let text = format!(
        "echo harmless build step\n{}touch HIDDEN_RAN\n{}echo done",
        "\n".repeat(30),
        "\n".repeat(30)
    );
    a.ask(ApprovalRequest {
        tool: "pty_send".into(),
        summary: text,
        reason: "types into a terminal".into(),
        can_persist: true,
        ..Default::default()
    });
    let rows = screen(&mut a);
    assert!(!rows.iter().any(|r| r.contains("HIDDEN_RAN")));
    find(&rows, "not shown: Ctrl-O shows all of it");
    // "yes" before the whole text was on screen shows it instead, and says why.
    for c in ['y', 'a', 's'] {
        assert_eq!(a.on_key(key(KeyCode::Char(c))), Action::None, "{c}");
    }
    assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
    let rows = screen(&mut a);
    find(&rows, "approve only what you have seen");
    find(&rows, "rows 1–");
    assert!(
        !rows.iter().any(|r| r.contains("HIDDEN_RAN")),
        "below the page"
    );
    assert_eq!(a.on_key(key(KeyCode::Char('y'))), Action::None);
    // A jump to the end skips rows that were never drawn: "yes" still only shows.
    a.on_key(key(KeyCode::End));
    let rows = screen(&mut a);
    find(&rows, "$ echo done");
    screen(&mut a);
    assert_eq!(a.on_key(key(KeyCode::Char('y'))), Action::None);
    find(&screen(&mut a), "approve only what you have seen");
    // Up after End moves up from the end.
    a.on_key(key(KeyCode::Up));
    let rows = screen(&mut a);
    // The reason is the last row of the whole view: one row up, it leaves.
    assert!(rows.iter().any(|r| r.contains("$ echo done")));
    assert!(
        !rows
            .iter()
            .any(|r| r.contains("why: types into a terminal")),
        "one row up:\n{}",
        rows.join("\n")
    );
    a.on_key(key(KeyCode::Home));
    // Scrolled down row by row to the end, everything has been shown: now "yes" answers.
    let mut rows = screen(&mut a);
    for _ in 0..70 {
        if rows.iter().any(|r| r.contains("$ touch HIDDEN_RAN")) {
            break;
        }
        a.on_key(key(KeyCode::Down));
        rows = screen(&mut a);
    }
    find(&rows, "$ touch HIDDEN_RAN");
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        Action::None,
        "not at the end yet"
    );
    for _ in 0..70 {
        if rows.iter().any(|r| r.contains("$ echo done")) {
            break;
        }
        a.on_key(key(KeyCode::Down));
        rows = screen(&mut a);
    }
    find(&rows, "$ echo done");
    // The next frame drops the note: every row has been on screen.
    let rows = screen(&mut a);
    assert!(!rows.iter().any(|r| r.contains("approve only what")));
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        Action::Answer(ApprovalAnswer::Once, None)
    );
    // A single long line elided in its middle counts too; Ctrl-O shows it, and "no"
    // never needs it.
    let long = format!(
        "echo {} ; rm -rf ~/work {}",
        "a".repeat(300),
        "b".repeat(300)
    );
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: long,
        reason: "runs a command".into(),
        ..Default::default()
    });
    let rows = screen(&mut a);
    assert!(!rows.iter().any(|r| r.contains("rm -rf ~/work")));
    find(&rows, "Ctrl-O shows all");
    a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let rows = screen(&mut a);
    find(&rows, "rm -rf ~/work");
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        Action::Answer(ApprovalAnswer::Once, None)
    );
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: "a\nb\nc\nd\ne\nf".into(),
        ..Default::default()
    });
    screen(&mut a);
    assert_eq!(
        a.on_key(key(KeyCode::Char('n'))),
        Action::Answer(ApprovalAnswer::Deny, None)
    );
}

#[test]
fn status_line_and_retry_banner_at_80x24() {
    let mut a = app();
    a.apply(Event::TurnCompleted {
        turn: 1,
        stop_reason: StopReason::EndTurn,
        usage: Usage {
            input_tokens: 52_000,
            output_tokens: 1_200,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        },
        refusal: false,
    });
    a.apply(Event::Retry {
        attempt: 2,
        wait_ms: 4_000,
        reason: "HTTP 503 from the provider".into(),
    });
    let rows = screen(&mut a);
    assert_eq!(
        rows[23],
        "openai gpt-4.1-mini │ 53.2k tok $0.02 │ ctx 5% │ approval suggest │ no isolation"
    );
    let banner = find(
        &rows,
        "↻ retrying (attempt 2) in 4s: HTTP 503 from the provider",
    );
    assert_eq!(banner, 19);
}

#[test]
fn long_transcripts_scroll_and_keep_the_latest_rows() {
    let mut a = app();
    for i in 0..60 {
        a.notice(format!("line {i}"));
    }
    let rows = screen(&mut a);
    assert!(rows[19].contains("line 59"), "{}", rows[19]);
    a.scroll = 10;
    let rows = screen(&mut a);
    assert!(rows[19].contains("line 49"), "{}", rows[19]);
    find(&rows, "10 more rows (PgDn)");
    // New rows arriving below do not move a scrolled-up view.
    a.notice("line 60");
    let rows = screen(&mut a);
    assert!(rows[19].contains("line 49"), "{}", rows[19]);
    find(&rows, "11 more rows (PgDn)");
}

#[test]
fn light_theme_renders_the_same_text() {
    let mut a = app();
    a.theme = Theme::new(ThemeKind::Light);
    let rows = screen(&mut a);
    assert!(rows[23].starts_with("openai gpt-4.1-mini"));
}

#[test]
fn a_large_paste_scrolls_the_input_box_to_the_cursor() {
    let mut a = app();
    let text: Vec<String> = (1..=40).map(|i| format!("pasted line {i}")).collect();
    a.editor.paste(&text.join("\n"));
    let rows = screen(&mut a);
    let top = find(&rows, "message (40 lines; Enter sends)");
    assert_eq!(top, 15);
    assert_eq!(
        rows[16],
        "│pasted line 35                                                                │"
    );
    assert!(rows[21].starts_with("│pasted line 40"));
    // Sent, it shows collapsed in the transcript.
    let text = a.editor.text();
    a.editor.clear();
    a.start_task(&text);
    let rows = screen(&mut a);
    let first = find(&rows, "› pasted line 1");
    assert_eq!(rows[first + 7], "  pasted line 8");
    assert_eq!(rows[first + 8], "  … 32 more lines (Ctrl-O)");
}

#[test]
fn a_resumed_session_shows_its_history() {
    use codesmith_engine::session::{NoteKind, Record};
    use codesmith_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};
    let message = |message| Record::Message { message };
    let shown = serde_json::json!({"event": {
        "type": "tool_result", "id": "c1", "name": "exec_shell", "ok": true,
        "output": "", "summary": "exit 0 · 0.1s"
    }});
    let records = [
        message(Message::user_text("fix calc")),
        Record::Note {
            kind: NoteKind::TaskStart,
            data: serde_json::json!({"task": 1}),
        },
        message(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: "c1".into(),
                name: "exec_shell".into(),
                arguments: r#"{"command":"make test"}"#.into(),
            })],
        }),
        Record::Note {
            kind: NoteKind::Shown,
            data: shown,
        },
        message(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                call_id: "c1".into(),
                content: "exit 0".into(),
                is_error: false,
                images: Vec::new(),
            })],
        }),
        message(Message::assistant_text("All fixed.")),
        message(Message::user_text(
            "<runtime_event type=\"verdict\">{\"verdict\":\"verified_pass\"}</runtime_event>",
        )),
    ];
    let mut a = app();
    a.load_history(&codesmith_engine::replay::replay_records(&records));
    let rows = screen(&mut a);
    let user = find(&rows, "› fix calc");
    assert_eq!(rows[user + 1], "● exec_shell make test · exit 0 · 0.1s");
    assert_eq!(rows[user + 3], "All fixed.");
    assert!(
        !rows.iter().any(|r| r.contains("runtime_event")),
        "an engine note shown as the user's words:\n{}",
        rows.join("\n")
    );
}

#[test]
fn thinking_is_collapsed_until_ctrl_t_and_tool_results_expand_with_ctrl_o() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut a = app();
    a.start_task("why?");
    a.apply(Event::Thinking {
        delta: "first thought\nsecond thought".into(),
    });
    a.apply(Event::ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path": "calc.py"}),
    });
    a.apply(Event::ToolResult {
        id: "c1".into(),
        name: "read_file".into(),
        ok: true,
        output: "1\tdef add(a, b):\n2\t    return a - b".into(),
        meta: serde_json::Value::Null,
        error: None,
        summary: None,
        changes: Vec::new(),
        source: None,
    });
    let rows = screen(&mut a);
    find(&rows, "┊ thinking (2 lines, Ctrl-T to show)");
    assert!(!rows.iter().any(|r| r.contains("def add")));
    let dim = {
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| view::draw(f, &mut a)).unwrap();
        let buf = t.backend().buffer().clone();
        let y = rows.iter().position(|r| r.contains("┊ thinking")).unwrap() as u16;
        buf[(2, y)].fg
    };
    assert_eq!(dim, a.theme.dim.fg.unwrap());
    a.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let rows = screen(&mut a);
    let t = find(&rows, "┊ first thought");
    assert_eq!(rows[t + 1], "┊ second thought");
    find(&rows, "  │ 1    def add(a, b):");
}

#[test]
fn streaming_line_by_line_renders_the_same_rows_as_a_whole_render() {
    let text = "Intro with **bold** and a long line that wraps past eighty columns of the terminal for sure.\n\n```rust\nfn main() {\n    let s = \"str\"; // note\n}\n```\n- item one\n- item two\nThe end";
    let mut a = app();
    a.start_task("go");
    let chars: Vec<char> = text.chars().collect();
    let mut streamed = Vec::new();
    for chunk in chars.chunks(3) {
        a.apply(Event::AssistantText {
            delta: chunk.iter().collect(),
        });
        streamed = screen(&mut a);
    }
    assert!(a.stream.is_some(), "the streaming path was used");
    a.task_finished();
    let whole = screen(&mut a);
    assert_eq!(streamed[..19], whole[..19]);
    find(&whole, "│     let s = \"str\"; // note");
}

#[test]
fn tiny_terminals_do_not_panic() {
    let mut a = app();
    a.start_task("a task with a rather long description");
    a.apply(Event::AssistantText {
        delta: "日本語 text ```\ncode".into(),
    });
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: "rm -rf build\nsecond line".into(),
        reason: "deletes".into(),
        can_persist: true,
        ..Default::default()
    });
    a.editor.paste("typed\ttext");
    for (w, h) in [(1, 1), (2, 3), (10, 4), (20, 6), (300, 100)] {
        a.scroll = 3;
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| view::draw(f, &mut a)).unwrap();
    }
}

#[test]
fn typing_a_slash_command_shows_what_it_may_become() {
    let mut a = app();
    a.editor.set_text("/m");
    find(&screen(&mut a), "┌ /model /memory ");
    a.editor.set_text("/ver");
    find(&screen(&mut a), "┌ /verify (Tab completes) ");
    a.editor.set_text("/zz");
    find(&screen(&mut a), "┌ unknown command: /help lists them ");
    a.editor.set_text("//etc");
    find(&screen(&mut a), "┌ › message, /help ");
}

/// Every cell of the screen, for checking that nothing a terminal acts on is in it.
fn cells(app: &mut App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
    let buf = terminal.backend().buffer().clone();
    buf.content().iter().map(|c| c.symbol()).collect()
}

#[test]
fn hostile_answer_file_name_and_command_are_inert_on_screen() {
    // OSC 52, OSC 8, clear screen, cursor moves, conceal, a bell, a CR drawing over the
    // line and a right-to-left override, streamed in pieces that split the sequences.
    let answer = "Done.\u{1b}]52;c;ZWNobyBwd25lZA==\u{7} See \u{1b}]8;;https://evil.example/\u{1b}\\docs\
                  \u{1b}]8;;\u{1b}\\.\u{1b}[2J\u{1b}[H\u{1b}[3A\u{1b}[8mhidden\u{1b}[0m\u{7} fake \
                  prompt$ \rreal \u{202e}txt.exe";
    let mut a = app();
    a.start_task("summarise");
    a.apply(Event::ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path": "notes\u{1b}]52;c;cHduZWQ=\u{7}\u{202e}txt.exe"}),
    });
    let chars: Vec<char> = answer.chars().collect();
    for piece in chars.chunks(3) {
        a.apply(Event::AssistantText {
            delta: piece.iter().collect(),
        });
    }
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: format!(
            "rm -rf build\u{1b}[8m{}; printf '\u{1b}]52;c;cHduZWQ=\u{7}'",
            " ".repeat(200)
        ),
        reason: "deletes files recursively".into(),
        can_persist: false,
        ..Default::default()
    });
    let rows = screen(&mut a);
    let call = find(&rows, "read_file");
    assert_eq!(
        rows[call],
        "◌ read_file notes\\u{1b}]52;c;cHduZWQ=\\u{7}\\u{202e}txt.exe …"
    );
    find(
        &rows,
        "Done. See docs.hidden\\u{7} fake prompt$ \\rreal \\u{202e}txt.exe",
    );
    let top = find(&rows, "Allow exec_shell?");
    assert_eq!(
        rows[top + 1],
        "│ $ rm -rf build\\u{1b}[8m[… 200 blanks …]; printf '\\u{1b}]52;c;cHduZWQ=\\u{7}'  │"
    );
    let all = cells(&mut a, 80, 24);
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(!all.contains(bad), "{bad:?} on screen");
    }
}

#[test]
fn a_compaction_shows_a_spinner_and_ctrl_c_interrupts_it() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut a = app();
    a.start_compaction();
    let rows = screen(&mut a);
    assert!(
        rows[20].contains("compacting… Ctrl-C interrupts"),
        "{}",
        rows[20]
    );
    assert!(rows[23].contains(" compacting 0s │ openai"), "{}", rows[23]);
    let key = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(a.on_key(key), super::app::Action::Interrupt);
    a.compaction_done("compaction interrupted: the session is unchanged".into());
    let rows = screen(&mut a);
    assert!(rows[23].starts_with("openai"), "{}", rows[23]);
    assert_eq!(
        rows.iter()
            .filter(|r| r.contains("compaction interrupted"))
            .count(),
        1
    );
    assert!(!a.running);
}

#[test]
fn a_long_reason_folds_and_the_choices_stay_on_a_small_screen() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let at = |a: &mut App, w, h| {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| view::draw(f, a)).unwrap();
        let buf = terminal.backend().buffer().clone();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<String>>()
    };
    let mut a = app();
    a.start_task("build it");
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: format!("ls {}", "x".repeat(150)),
        reason: format!("unknown word {} END_OF_REASON", "w".repeat(2600)),
        can_persist: true,
        ..Default::default()
    });
    let rows = at(&mut a, 60, 14);
    find(&rows, "[y] yes, once");
    find(&rows, "more rows of why: Ctrl-O shows all");
    find(&rows, "$ ls");
    assert!(!rows.iter().any(|r| r.contains("END_OF_REASON")));
    // The whole reason scrolls under the whole command; the choices stay.
    a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let mut rows = at(&mut a, 60, 14);
    for _ in 0..80 {
        find(&rows, "[y] yes, once");
        if rows.iter().any(|r| r.contains("END_OF_REASON")) {
            break;
        }
        a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
        rows = at(&mut a, 60, 14);
    }
    find(&rows, "END_OF_REASON");
    // A command taller than the screen gives way before the choices, and is then not
    // taken as seen.
    a.approval = None;
    a.ask(ApprovalRequest {
        tool: "exec_shell".into(),
        summary: (0..6).map(|i| format!("echo line{i}\n")).collect(),
        reason: "r".repeat(300),
        can_persist: true,
        ..Default::default()
    });
    let rows = at(&mut a, 60, 14);
    find(&rows, "[y] yes, once");
    find(&rows, "more rows of the command: Ctrl-O shows all");
    assert!(!a.approval.as_ref().unwrap().seen_all.get());
}
