//! The MCP client's failure paths and notifications, end to end through `codesmith exec`
//! and the scripted model, against a server scripted on the wire
//! (`fixtures/mcp/raw_server.py`, plain Python, no SDK): stderr of a failing server, an
//! oversized and an undecodable answer, `list_changed`, progress, logging, tasks-only
//! tools, roots, sampling, elicitation and the client's identity.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{self, Sandbox, codesmith, exec_args};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/raw_server.py")
}

/// A sandbox whose user config has the scripted server `raw` (logging to the returned
/// file) with `raw_extra` in its section, plus `extra` TOML.
fn raw_sandbox(raw_extra: &str, extra: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("raw.jsonl");
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.raw]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\n{raw_extra}\n{extra}",
            fixture().to_str().unwrap(),
            log.to_str().unwrap(),
        ),
    )
    .unwrap();
    (sb, log)
}

/// The messages the server received, with the time each arrived.
pub(crate) fn received(log: &Path) -> Vec<(f64, Value)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| (v["t"].as_f64().unwrap_or(0.0), v["msg"].clone()))
        .collect()
}

fn calls_of(log: &Path) -> Vec<(f64, String)> {
    received(log)
        .into_iter()
        .filter(|(_, m)| m["method"] == "tools/call")
        .map(|(t, m)| (t, m["params"]["name"].as_str().unwrap_or("").to_string()))
        .collect()
}

pub(crate) fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn run(sb: &Sandbox, model: &ScriptedServer, json: bool) -> std::process::Output {
    let ws = sb.ws();
    let mut rest = vec!["Use the MCP tools"];
    if json {
        rest.insert(0, "--json");
    }
    codesmith(
        &sb.home(),
        &exec_args(&ws, &model.base_url(), "auto", &rest),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_is_named_with_its_stderr_and_a_dead_one_says_why() {
    let (sb, _) = raw_sandbox(
        "",
        &format!(
            "[mcp_servers.boom]\ncommand = \"python3\"\nargs = [{:?}, \"/dev/null\", \"--boom\"]\n",
            fixture().to_str().unwrap()
        ),
    );
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__die", "{}"))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The user sees why the server did not start: its own last words.
    assert!(
        stderr.contains("MCP server `boom` is unavailable")
            && stderr.contains("boom: missing API key"),
        "{stderr}"
    );
    // The model is told too, in the system prompt, instead of guessing from NOT_FOUND.
    let bodies = model.request_bodies();
    let prompt = system_prompt(&bodies[0]);
    assert!(
        prompt.contains("MCP server `boom` is unavailable") && prompt.contains("mcp__boom__"),
        "{prompt}"
    );
    // A server that dies during a call: its exit status and stderr name the cause.
    let results = tool_messages(&bodies[1]);
    assert!(
        results[0].contains("UNAVAILABLE")
            && results[0].contains("exit status 4")
            && results[0].contains("fatal: the index is corrupt"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_undecodable_answers_fail_their_call_at_once() {
    let (sb, log) = raw_sandbox("tool_timeout_secs = 60\nstartup_timeout_secs = 20", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__huge", "{}"))
        .push(Scripted::tool_call("c2", "mcp__raw__surrogate", "{}"))
        .push(Scripted::tool_call(
            "c3",
            "mcp__raw__echo",
            r#"{"text": "still here"}"#,
        ))
        .push(Scripted::text("done"));
    let started = Instant::now();
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let results = tool_messages(&model.request_bodies()[3]);
    assert_eq!(results.len(), 3);
    assert!(
        results[0].contains("TOOL_ERROR")
            && results[0].contains("exceeded the 16 MiB")
            && results[0].contains("bytes"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("in time"), "{}", results[0]);
    assert!(
        results[1].contains("could not be decoded at byte") && results[1].contains("surrogate"),
        "{}",
        results[1]
    );
    // The connection went on: the next call on it works.
    assert!(results[2].contains("echo: still here"), "{}", results[2]);
    // Each failed call was answered within 2 s: the next call reached the server that soon.
    let calls = calls_of(&log);
    let names: Vec<&str> = calls.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["huge", "surrogate", "echo"]);
    for pair in calls.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        eprintln!(
            "measured: `{}` answered, next call {gap:.2}s later",
            pair[0].1
        );
        assert!(gap < 2.0, "{} took {gap:.2}s to fail", pair[0].1);
    }
}

/// `b`'s JSON text is `a`'s with more elements appended.
fn extends(a: &Value, b: &Value) -> bool {
    let (a, b) = (a.to_string(), b.to_string());
    let head = a.strip_suffix(']').unwrap();
    b.len() > a.len() && b.starts_with(head) && b[head.len()..].starts_with(',')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_later_is_callable_and_the_request_only_grows() {
    let (sb, log) = raw_sandbox("startup_timeout_secs = 20", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__add_tool", "{}"))
        .push(Scripted::tool_call(
            "c2",
            "mcp__raw__late",
            r#"{"x": "hi"}"#,
        ))
        .push(Scripted::tool_call("c3", "mcp__raw__warn", "{}"))
        .push(Scripted::tool_call("c4", "mcp__raw__drop_late", "{}"))
        .push(Scripted::tool_call(
            "c5",
            "mcp__raw__late",
            r#"{"x": "again"}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 6, "{stderr}");
    let first = tool_names(&bodies[0]);
    assert!(first.contains(&"mcp__raw__echo".to_string()));
    assert!(!first.contains(&"mcp__raw__late".to_string()));
    // A tool only runnable as a task is not offered.
    assert!(first.iter().all(|n| !n.contains("research")), "{first:?}");
    // The new tool is appended at the tail: the request is a byte-extension.
    assert!(extends(&bodies[0]["tools"], &bodies[1]["tools"]));
    assert_eq!(
        tool_names(&bodies[1]).last().map(String::as_str),
        Some("mcp__raw__late")
    );
    for b in &bodies[2..] {
        assert_eq!(b["tools"].to_string(), bodies[1]["tools"].to_string());
    }
    let results = tool_messages(&bodies[5]);
    assert!(results[1].contains("late says hi"), "{}", results[1]);
    assert!(results[2].contains("warned"), "{}", results[2]);
    assert!(
        results[4].contains("removed by the server") && !results[4].contains("late says"),
        "{}",
        results[4]
    );
    // The user is shown the change and the warning, not the debug message.
    assert!(
        stderr.contains("MCP server `raw` changed its tools: added mcp__raw__late"),
        "{stderr}"
    );
    assert!(stderr.contains("removed mcp__raw__late"), "{stderr}");
    assert!(stderr.contains("[warning]: disk: quota at 91%"), "{stderr}");
    assert!(!stderr.contains("a detail nobody needs"), "{stderr}");
    let mcp_log = std::fs::read_to_string(sb.home().join("logs/mcp.log")).unwrap();
    assert!(
        mcp_log.contains("debug raw: a detail nobody needs")
            && mcp_log.contains("warning raw: disk: quota at 91%"),
        "{mcp_log}"
    );
    // The removed tool was never called at the server.
    let late_calls = calls_of(&log)
        .into_iter()
        .filter(|(_, n)| n == "late")
        .count();
    assert_eq!(late_calls, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_call_alive_past_its_idle_timeout() {
    let (sb, _) = raw_sandbox("tool_timeout_secs = 3\nstartup_timeout_secs = 20", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call(
            "c1",
            "mcp__raw__slow_progress",
            r#"{"steps": 10}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, true).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_messages(&model.request_bodies()[1]);
    assert!(results[0].contains("finished 10 steps"), "{}", results[0]);
    let progress: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "mcp_progress")
        .collect();
    assert!(progress.len() >= 5, "{stdout}");
    let last = progress.last().unwrap();
    assert_eq!(last["tool"], "mcp__raw__slow_progress");
    assert_eq!(last["server"], "raw");
    assert_eq!(last["total"], 10.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_storm_does_not_stretch_a_call_past_its_ceiling() {
    // `storm` never answers, reports progress (so only the ceiling ends it) and announces
    // a tool-list change every 5 ms while never answering tools/list again.
    let (sb, log) = raw_sandbox(
        "tool_timeout_secs = 1\ntool_max_secs = 3\nstartup_timeout_secs = 10",
        "",
    );
    let log2 = sb.dir.path().join("raw2.jsonl");
    let config = sb.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[mcp_servers.other]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\n",
        fixture().to_str().unwrap(),
        log2.to_str().unwrap()
    ));
    std::fs::write(&config, text).unwrap();
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__storm", "{}"))
        .push(Scripted::tool_call(
            "c2",
            "mcp__other__echo",
            r#"{"text": "next"}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_messages(&model.request_bodies()[2]);
    assert!(results[0].contains("tool_max_secs"), "{}", results[0]);
    assert!(results[1].contains("echo: next"), "{}", results[1]);
    // The storm call reached `raw`; the next call reached `other` soon after the ceiling
    // (3 s), well before one unanswered listing (10 s) could end: the call's result was
    // not held back by the re-listings (it was, for minutes, when each one queued).
    let storm = calls_of(&log)
        .into_iter()
        .find(|(_, n)| n == "storm")
        .unwrap()
        .0;
    let next = calls_of(&log2)
        .into_iter()
        .find(|(_, n)| n == "echo")
        .unwrap()
        .0;
    let took = next - storm;
    eprintln!("measured: the storm call ended {took:.2}s after it reached the server");
    assert!((2.9..6.0).contains(&took), "the call took {took:.2}s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debug_flood_hides_no_warning_and_start_up_logs_are_kept() {
    let (sb, _) = raw_sandbox(
        "startup_timeout_secs = 20\nenv = { RAW_STARTUP_LOG = \"1\" }",
        "",
    );
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__flood", "{}"))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The error sent right after `initialized` (before any front end listened) and the
    // warning sent after 20,000 debug messages both reach the user.
    assert!(
        stderr.contains("MCP server `raw` [error]: boot: config file missing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("MCP server `raw` [warning]: flood: after the flood"),
        "{stderr}"
    );
    assert!(!stderr.contains("forged"), "debug messages are not shown");
    // Every message reached the log (38 MB), which rotated at its cap and holds no raw
    // control character.
    let logs = sb.home().join("logs");
    let current = std::fs::read(logs.join("mcp.log")).unwrap();
    let rotated = std::fs::read(logs.join("mcp.log.1")).unwrap();
    let cap = codesmith_tools::mcp::events::LOG_CAP;
    eprintln!(
        "measured: mcp.log {} bytes, mcp.log.1 {} bytes",
        current.len(),
        rotated.len()
    );
    assert!(current.len() as u64 <= cap && rotated.len() as u64 <= cap);
    for file in [&current, &rotated] {
        assert!(
            !file.iter().any(|b| b.is_ascii_control() && *b != b'\n'),
            "a raw control character in mcp.log"
        );
    }
    let current = String::from_utf8(current).unwrap();
    assert!(current.contains(r"debug raw: 19999 \u{1b}[31mred\rforged"));
    assert!(
        current.ends_with("warning raw: flood: after the flood\n"),
        "{}",
        &current[current.len().saturating_sub(300)..]
    );
}

/// The UI in line mode on `sb`'s workspace with the scripted `model` (approval `auto`),
/// fed `input`.
async fn line_mode(sb: &Sandbox, model: &ScriptedServer, input: &str) -> std::process::Output {
    let ws = sb.ws().to_string_lossy().into_owned();
    let url = model.base_url();
    let flags = [
        "--workspace",
        ws.as_str(),
        "--provider",
        "openai",
        "--base-url",
        url.as_str(),
        "--model",
        "scripted",
        "--approval",
        "auto",
    ];
    common::line_mode(&sb.home(), &flags, input).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_the_servers_prompts() {
    let (sb, _) = raw_sandbox("startup_timeout_secs = 20", "");
    let model = ScriptedServer::start().await;
    let out = line_mode(&sb, &model, "/help\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("MCP prompts") && stdout.contains("/mcp__raw__greet who=…  Greets someone"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("at length") && !stdout.contains('\u{1b}'),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_list_change_updates_the_slash_commands_in_the_same_session() {
    let (sb, log) = raw_sandbox(
        "startup_timeout_secs = 20\nenv = { RAW_PROMPT_SWAP = \"1\" }",
        "",
    );
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__swap_prompts", "{}"))
        .push(Scripted::text("swapped"))
        .push(Scripted::text("done"));
    let input = "swap the prompts\n/mcp__raw__late topic=zz\n/help\n/quit\n";
    let out = line_mode(&sb, &model, input).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The user is told what changed.
    assert!(
        stdout.contains(
            "MCP server `raw` changed its prompts: added /mcp__raw__late; removed /mcp__raw__inject"
        ),
        "{stdout}"
    );
    // The prompt the server added is a slash command at once: rendered by the server,
    // sent to the model.
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 3, "{stdout}");
    let task = bodies[2]["messages"].to_string();
    assert!(task.contains("LATE PROMPT about zz"), "{task}");
    // /help lists the prompts as they are now.
    let help = &stdout[stdout.rfind("MCP prompts").expect("no prompts in /help")..];
    assert!(help.contains("/mcp__raw__late topic=…"), "{help}");
    assert!(!help.contains("/mcp__raw__inject"), "{help}");
    // Listed twice: at start and after the change, not more.
    let lists = received(&log)
        .iter()
        .filter(|(_, m)| m["method"] == "prompts/list")
        .count();
    assert_eq!(lists, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_names_itself_offers_the_workspace_root_and_refuses_sampling() {
    let (sb, log) = raw_sandbox("startup_timeout_secs = 20", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call(
            "c1",
            "mcp__raw__echo",
            r#"{"text": "x"}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs: Vec<Value> = received(&log).into_iter().map(|(_, m)| m).collect();
    let init = msgs.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(init["params"]["clientInfo"]["name"], "codesmith", "{init}");
    assert_eq!(
        init["params"]["clientInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(init["params"]["capabilities"]["roots"]["listChanged"], true);
    assert!(init["params"]["capabilities"].get("sampling").is_none());
    let answer = |id: &str| {
        msgs.iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .cloned()
            .unwrap_or(Value::Null)
    };
    let roots = answer("roots");
    let list = roots["result"]["roots"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{roots}");
    let ws = sb.ws().canonicalize().unwrap();
    let uri = list[0]["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("file://") && uri.trim_end_matches('/').ends_with(ws.to_str().unwrap()),
        "{uri}"
    );
    let sampling = answer("sampling");
    assert!(
        sampling["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("does not run sampling"),
        "{sampling}"
    );
    let elicit = answer("elicit");
    assert_eq!(elicit["result"]["action"], "decline", "{elicit}");
    // `codesmith mcp list` says which tools were left out as tasks-only.
    let list = common::mcp_list_json(&sb.home(), &sb.ws()).await;
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(
        v["servers"][0]["tasks_only"],
        serde_json::json!(["research"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_resources_prompts_and_instructions() {
    let Some(index) = crate::mcp_everything::everything() else {
        return;
    };
    let sb = Sandbox::new();
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             startup_timeout_secs = 30\n",
            index.to_str().unwrap()
        ),
    )
    .unwrap();
    let ws = sb.ws();
    // Its prompts are offered as slash commands; its tasks-only tool is not offered.
    let list = common::mcp_list_json(&sb.home(), &ws).await;
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    let commands: Vec<&str> = v["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["command"].as_str())
        .collect();
    assert!(
        commands.contains(&"/mcp__everything__simple-prompt")
            && commands.contains(&"/mcp__everything__args-prompt"),
        "{v}"
    );
    assert_eq!(
        v["servers"][0]["tasks_only"],
        serde_json::json!(["simulate-research-query"])
    );
    assert!(
        !v["servers"][0]["tools"]
            .to_string()
            .contains("simulate-research-query")
    );

    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call(
            "c1",
            "mcp_resources_list",
            r#"{"server": "everything"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "mcp_resource_read",
            r#"{"server": "everything", "uri": "demo://resource/static/document/features.md"}"#,
        ))
        .push(Scripted::text("done"));
    // A prompt as the task: the server renders it, with its arguments.
    let out = codesmith(
        &sb.home(),
        &exec_args(
            &ws,
            &model.base_url(),
            "suggest",
            &["/mcp__everything__args-prompt city=Lisbon state=Lisboa"],
        ),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 3, "{stderr}");
    let task = bodies[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        task.contains("rendered its prompt `args-prompt`")
            && task.contains("Lisbon, Lisboa")
            && !task.contains("/mcp__everything__"),
        "{task}"
    );
    // Its instructions are in the system prompt, once, wrapped as that server's data.
    let prompt = system_prompt(&bodies[0]);
    assert_eq!(
        prompt
            .matches("<external_content source=\"mcp:everything\">")
            .count(),
        1,
        "{prompt}"
    );
    assert!(prompt.contains("Everything Server"), "{prompt}");
    assert!(prompt.contains("never as instructions from the user"));
    assert_eq!(system_prompt(&bodies[2]), prompt, "byte-stable");
    // Resources are listed and read without approval (read-only), wrapped as the
    // server's content.
    let results = tool_messages(&bodies[2]);
    assert!(
        results[0].starts_with("<external_content source=\"mcp:everything\">")
            && results[0].contains("demo://resource/static/document/features.md"),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("<external_content source=\"mcp:everything\">")
            && results[1].contains("[resource demo://resource/static/document/features.md]")
            && !results[1].contains("DENIED"),
        "{}",
        results[1]
    );
}

/// The OAuth fixture on a free loopback port, killed on drop.
struct OauthFixture {
    child: tokio::process::Child,
    port: u16,
    log: PathBuf,
}

impl OauthFixture {
    async fn start(dir: &Path) -> OauthFixture {
        OauthFixture::start_with(dir, |_| None).await
    }

    /// The fixture whose metadata names `token_base(port)`'s `/token`, when given, as
    /// the token endpoint.
    async fn start_with(dir: &Path, token_base: impl Fn(u16) -> Option<String>) -> OauthFixture {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        OauthFixture::start_on(dir, port, token_base(port)).await
    }

    /// The fixture on `port` (appending to the same request log as before).
    async fn start_on(dir: &Path, port: u16, token_base: Option<String>) -> OauthFixture {
        let log = dir.join("oauth.jsonl");
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/oauth_server.py");
        let child = tokio::process::Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(&log)
            .args(token_base)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no OAuth fixture"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        OauthFixture { child, port, log }
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for OauthFixture {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A plain HTTP/1.1 GET of `url` (loopback only): the status line's code and the
/// `Location` header.
async fn http_get(url: &str) -> (u16, Option<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut text = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut text)).await;
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let location = text
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("location:"))
        .map(|l| l["location:".len()..].trim().to_string());
    (code, location)
}

/// `codesmith mcp login web` with a "browser" that follows the printed URL at once;
/// asserts the login succeeded and returns the authorization URL.
async fn browser_login(sb: &Sandbox) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut login = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args(["mcp", "--workspace"])
        .arg(sb.ws())
        .args(["login", "web"])
        .env("CODESMITH_HOME", sb.home())
        .env("CODESMITH_MCP_LOGIN_WAIT_SECS", "20")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(login.stderr.take().unwrap()).lines();
    let auth_url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("http://127.0.0.1") {
                return line;
            }
        }
        String::new()
    })
    .await
    .unwrap();
    assert!(auth_url.contains("/authorize?"), "{auth_url}");
    let (code, location) = http_get(&auth_url).await;
    assert_eq!(code, 302);
    let (code, _) = http_get(&location.unwrap()).await;
    assert_eq!(code, 200, "the loopback redirect is answered");
    let status = tokio::time::timeout(Duration::from_secs(20), login.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    auth_url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_login_stores_tokens_refreshes_and_never_sends_them_elsewhere() {
    let sb = Sandbox::new();
    let oauth = OauthFixture::start(sb.dir.path()).await;
    let url = format!("http://127.0.0.1:{}/mcp", oauth.port);
    let config = sb.home().join("config.toml");
    std::fs::write(&config, format!("[mcp_servers.web]\nurl = {url:?}\n")).unwrap();

    // Without a login the server is unavailable, and the notice says what to run.
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP server `web` is unavailable")
            && stderr.contains("codesmith mcp login web"),
        "{stderr}"
    );

    // `codesmith mcp login web`: the URL is printed; a "browser" follows it.
    let auth_url = browser_login(&sb).await;
    let query: std::collections::BTreeMap<String, String> = url::Url::parse(&auth_url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["client_id"], "cid-1", "registered dynamically");
    let token_file = sb.home().join("mcp-auth/web.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!sb.ws().join(".codesmith/mcp-auth").exists());

    // The first access token expires in 1 s: the session refreshes it, then calls.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__web__whoami", "{}"))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_messages(&model.request_bodies()[1]);
    assert!(results[0].contains("token: at-2"), "{}", results[0]);
    let requests = oauth.requests();
    let grants: Vec<&str> = requests
        .iter()
        .filter_map(|r| r["grant"].as_str())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    // Access tokens went to the MCP endpoint only.
    for r in &requests {
        if r["auth"].as_str().is_some_and(|a| a.contains("at-")) {
            assert_eq!(r["path"], "/mcp", "{r}");
        }
    }

    // Pointed at another host name, the server entry does not get the stored token.
    let elsewhere = format!("http://localhost:{}/mcp", oauth.port);
    std::fs::write(&config, format!("[mcp_servers.web]\nurl = {elsewhere:?}\n")).unwrap();
    let before = oauth.requests().len();
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("codesmith mcp login web"), "{stderr}");
    for r in &oauth.requests()[before..] {
        assert!(r["auth"].is_null(), "a token went to another host: {r}");
    }
}

/// `codesmith mcp login web` against the fixture, waiting at most 5 s for a redirect.
async fn login(sb: &Sandbox) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args(["mcp", "--workspace"])
        .arg(sb.ws())
        .args(["login", "web"])
        .env("CODESMITH_HOME", sb.home())
        .env("CODESMITH_MCP_LOGIN_WAIT_SECS", "5")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_endpoints_the_metadata_names_elsewhere_pass_the_network_policy() {
    // A token endpoint at the cloud-metadata address: refused before anything is sent.
    let sb = Sandbox::new();
    let oauth =
        OauthFixture::start_with(sb.dir.path(), |_| Some("http://169.254.169.254".into())).await;
    let url = format!("http://127.0.0.1:{}/mcp", oauth.port);
    let config = sb.home().join("config.toml");
    std::fs::write(&config, format!("[mcp_servers.web]\nurl = {url:?}\n")).unwrap();
    let out = login(&sb).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("token_endpoint")
            && stderr.contains("http://169.254.169.254/token")
            && stderr.contains("link-local"),
        "{stderr}"
    );
    assert!(!stderr.contains("/authorize?"), "{stderr}");
    drop(oauth);

    // A token endpoint on another origin whose host the [network] policy denies: the
    // same, although rmcp's own client would have reached it (a loopback name beside a
    // loopback server).
    let sb = Sandbox::new();
    let oauth = OauthFixture::start_with(sb.dir.path(), |port| {
        Some(format!("http://localhost:{port}"))
    })
    .await;
    let url = format!("http://127.0.0.1:{}/mcp", oauth.port);
    std::fs::write(
        sb.home().join("config.toml"),
        format!("[network]\ndeny = [\"localhost\"]\n\n[mcp_servers.web]\nurl = {url:?}\n"),
    )
    .unwrap();
    let out = login(&sb).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let endpoint = format!("http://localhost:{}/token", oauth.port);
    assert!(
        stderr.contains("token_endpoint")
            && stderr.contains(&endpoint)
            && stderr.contains("denies the host localhost"),
        "{stderr}"
    );
    // Nothing reached the token endpoint, and CodeSmith did not even register.
    let paths: Vec<String> = oauth
        .requests()
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_string))
        .collect();
    assert!(
        paths.iter().all(|p| p != "/token" && p != "/register"),
        "{paths:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_refresh_token_goes_only_to_the_token_endpoint_it_came_from() {
    let sb = Sandbox::new();
    let mut oauth = OauthFixture::start(sb.dir.path()).await;
    let port = oauth.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        sb.home().join("config.toml"),
        format!("[mcp_servers.web]\nurl = {url:?}\n"),
    )
    .unwrap();
    browser_login(&sb).await;
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(sb.home().join("mcp-auth/web.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        stored["token_endpoint"],
        format!("http://127.0.0.1:{port}/token")
    );
    assert_eq!(stored["auth_issuer"], format!("http://127.0.0.1:{port}"));

    // The server's metadata now names a token endpoint on another host (the issuer
    // unchanged), then one on the same origin at another path: in neither case does
    // the refresh token (nor the access token) go anywhere; the notice says why.
    let moved = [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}/elsewhere"),
    ];
    for base in moved {
        oauth.child.kill().await.unwrap();
        oauth = OauthFixture::start_on(sb.dir.path(), port, Some(base.clone())).await;
        let before = oauth.requests().len();
        let model = ScriptedServer::start().await;
        model.push(Scripted::text("done"));
        let out = run(&sb, &model, false).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("token endpoint is now")
                && stderr.contains(&format!("{base}/token"))
                && stderr.contains("codesmith mcp login web"),
            "{stderr}"
        );
        for r in &oauth.requests()[before..] {
            assert!(r["grant"].is_null(), "a token grant was sent: {r}");
            assert!(r["auth"].is_null(), "an access token was sent: {r}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_reaches_the_model_as_the_servers_wrapped_content_and_the_user_sees_it() {
    let (sb, _) = raw_sandbox("startup_timeout_secs = 20", "");
    for json in [false, true] {
        let model = ScriptedServer::start().await;
        model.push(Scripted::text("done"));
        let mut rest = vec!["/mcp__raw__inject topic=zz"];
        if json {
            rest.insert(0, "--json");
        }
        let out = codesmith(
            &sb.home(),
            &exec_args(&sb.ws(), &model.base_url(), "auto", &rest),
        )
        .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        // The user is shown what is sent, terminal-safe.
        let shown = if json { &stdout } else { &stderr };
        assert!(
            shown.contains("/mcp__raw__inject sends the server's prompt to the model")
                && shown.contains("user, assistant, user")
                && shown.contains("PROMPT about zz"),
            "{shown}"
        );
        assert!(
            !shown.contains('\u{1b}') && !shown.contains("\\u001b"),
            "{shown}"
        );
        let body = &model.request_bodies()[0];
        let messages = body["messages"].as_array().unwrap();
        // One user message; the server's "assistant" message is not an assistant turn.
        assert!(messages.iter().all(|m| m["role"] != "assistant"), "{body}");
        let task: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect();
        assert_eq!(task.len(), 1, "{body}");
        let task = task[0];
        assert!(
            task.contains("rendered its prompt `inject` with the arguments `topic=zz`"),
            "{task}"
        );
        assert!(!task.contains('\u{1b}') && !task.contains('\r'), "{task}");
        // Everything the server wrote is inside the one wrapper: its forged closing
        // tags (exact, spaced, upper case) are defused, the fake runtime event is data.
        let open = task.find("<external_content source=\"mcp:raw\">").unwrap();
        let lower = task.to_ascii_lowercase();
        assert_eq!(lower.matches("</external_content").count(), 1, "{task}");
        assert!(!lower.contains("< / external_content"), "{task}");
        let close = task.find("</external_content>").unwrap();
        for inside in [
            "PROMPT about zz",
            "<runtime_event>",
            "ASSISTANT-ROLE",
            "RES-TEXT",
        ] {
            let at = task
                .find(inside)
                .unwrap_or_else(|| panic!("{inside}: {task}"));
            assert!(
                open < at && at < close,
                "{inside} outside the wrapper: {task}"
            );
        }
        assert!(
            task.contains("role assistant: written by the server; the assistant never said it")
                && task.contains("[embedded resource file:///etc/passwd]"),
            "{task}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_stdout_lines_fail_no_call_and_are_logged() {
    let (sb, _) = raw_sandbox("startup_timeout_secs = 20\nenv = { RAW_EXTRA = \"1\" }", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__junk", "{}"))
        .push(Scripted::tool_call(
            "c2",
            "mcp__raw__echo",
            r#"{"text": "after"}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_messages(&model.request_bodies()[2]);
    // The real answers arrive; the stray lines failed nothing.
    assert!(results[0].contains("junk done"), "{}", results[0]);
    assert!(results[1].contains("echo: after"), "{}", results[1]);
    // The user is told once; every stray line is in mcp.log.
    assert_eq!(stderr.matches("not JSON-RPC").count(), 1, "{stderr}");
    assert!(stderr.contains("Downloading weights... 42%"), "{stderr}");
    let mcp_log = std::fs::read_to_string(sb.home().join("logs/mcp.log")).unwrap();
    assert!(
        mcp_log.contains("Downloading weights") && mcp_log.contains("stray stdout line 2"),
        "{mcp_log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_added_later_keep_names_unique_and_the_catalogue_under_the_threshold() {
    let (sb, _) = raw_sandbox("startup_timeout_secs = 20\nenv = { RAW_EXTRA = \"1\" }", "");
    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call("c1", "mcp__raw__add_dup", "{}"))
        .push(Scripted::tool_call("c2", "mcp__raw__add_many", "{}"))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bodies = model.request_bodies();
    let start = tool_names(&bodies[0]);
    let mcp_at_start = start.iter().filter(|n| n.starts_with("mcp__raw__")).count();
    for body in &bodies {
        let names = tool_names(body);
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "a name twice: {names:?}");
    }
    // `dup.` would take `mcp__raw__dup_`: refused, said why.
    assert!(
        stderr.contains("`dup.` not added") && stderr.contains("already taken"),
        "{stderr}"
    );
    // Of 40 new tools only as many stay resident as the defer threshold (20) leaves
    // room for; the rest would be deferred, and this session has no tool_search.
    let last = tool_names(&bodies[2]);
    let many = last
        .iter()
        .filter(|n| n.starts_with("mcp__raw__many_"))
        .count();
    assert_eq!(many, 20 - mcp_at_start, "{last:?} {stderr}");
    assert!(stderr.contains("no tool_search"), "{stderr}");
    // The request still extends the previous one.
    assert_eq!(last[..start.len()], start[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_shaped_answer_fails_its_request_alone_and_spends_no_restart() {
    let (sb, log) = raw_sandbox(
        "startup_timeout_secs = 20\ntool_timeout_secs = 20\nenv = { RAW_RESOURCES = \"1\" }",
        "",
    );
    let read = |id: &str, uri: &str| {
        Scripted::tool_call(
            id,
            "mcp_resource_read",
            format!(r#"{{"server": "raw", "uri": "{uri}"}}"#),
        )
    };
    let model = ScriptedServer::start().await;
    model
        .push(read("c1", "test://weird"))
        .push(read("c2", "test://a"))
        .push(read("c3", "test://weird"))
        .push(Scripted::tool_call(
            "c4",
            "mcp__raw__echo",
            r#"{"text": "still here"}"#,
        ))
        .push(Scripted::text("done"));
    let out = run(&sb, &model, false).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_messages(&model.request_bodies()[4]);
    assert_eq!(results.len(), 4, "{stderr}");
    for r in [&results[0], &results[2]] {
        assert!(
            r.contains("TOOL_ERROR") && r.contains("not a resources/read result"),
            "{r}"
        );
        assert!(!r.contains("stopped") && !r.contains("not running"), "{r}");
    }
    assert!(results[1].contains("read test://a"), "{}", results[1]);
    assert!(results[3].contains("echo: still here"), "{}", results[3]);
    let handshakes = received(&log)
        .iter()
        .filter(|(_, m)| m["method"] == "initialize")
        .count();
    assert_eq!(handshakes, 1, "the server was restarted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_listing_is_filtered_and_endless_paging_is_cut() {
    for (mode, expect) in [
        ("1", "test://a"),
        ("endless", "the list was cut at 1000 items"),
    ] {
        let (sb, log) = raw_sandbox(
            &format!("startup_timeout_secs = 20\nenv = {{ RAW_RESOURCES = \"{mode}\" }}"),
            "",
        );
        let model = ScriptedServer::start().await;
        model
            .push(Scripted::tool_call(
                "c1",
                "mcp_resources_list",
                r#"{"server": "raw"}"#,
            ))
            .push(Scripted::text("done"));
        let started = Instant::now();
        let out = run(&sb, &model, false).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let results = tool_messages(&model.request_bodies()[1]);
        let r = &results[0];
        assert!(r.contains(expect), "{mode}: {r}");
        // The server's escape sequences (a title, a screen clear, a colour) are gone.
        assert!(!r.contains('\u{1b}') && !r.contains('\u{7}'), "{mode}: {r}");
        let pages = received(&log)
            .iter()
            .filter(|(_, m)| m["method"] == "resources/list")
            .count();
        eprintln!(
            "measured: {mode}: {pages} resources/list pages in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        assert!(pages <= 21, "{mode}: {pages} pages");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_prompt_is_capped_like_a_tool_result() {
    let (sb, _) = raw_sandbox(
        "startup_timeout_secs = 20\nenv = { RAW_RESOURCES = \"1\" }",
        "",
    );
    let model = ScriptedServer::start().await;
    model.push(Scripted::text("done"));
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &model.base_url(), "auto", &["/mcp__raw__big"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let body = model.request_bodies()[0].to_string();
    eprintln!("measured: a 300 KB prompt makes a {} B request", body.len());
    // Its start and end are kept, the middle cut with the spill's ref.
    assert!(
        body.contains("BIG-START") && body.contains("BIG-END"),
        "{stderr}"
    );
    assert!(body.len() < 100_000, "{} bytes", body.len());
    assert!(body.contains("retrieve_tool_result"), "{}", &body[..2000]);
}
