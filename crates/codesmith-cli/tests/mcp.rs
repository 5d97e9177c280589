//! `codesmith mcp` against real MCP clients: the Python `mcp` SDK (skipped with a note
//! when it is not installed) and a raw JSON-RPC exchange over the binary's stdio.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Longest a whole client session may take before the test kills it.
const HARD_LIMIT: Duration = Duration::from_secs(60);

const BIN: &str = env!("CARGO_BIN_EXE_codesmith");

/// A directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "codesmith-mcp-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits for `child` at most `limit`, killing it after that.
fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child process ran longer than {limit:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn python_mcp_available() -> bool {
    Command::new(codesmith_testkit::mcp_python())
        .args(["-c", "import mcp, anyio"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The client session the Python SDK runs: every answer it gets, as one JSON object.
const CLIENT: &str = r#"
import json, os, sys
import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

exe, workspace, home, out_path, dangerous = sys.argv[1:6]

def parse(text):
    # A refusal is the JSON envelope; a success is the tool's output as plain text.
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}

def shape(result):
    texts = [c.text for c in result.content if c.type == "text"]
    return {"isError": bool(result.isError), "envelopes": [parse(t) for t in texts]}

async def protocol(coro):
    # A JSON-RPC error answer, as its code and message (or the result when there is none).
    try:
        return {"result": shape(await coro)}
    except McpError as e:
        return {"code": e.error.code, "message": e.error.message}

def raw_call(session, name, arguments):
    # Arguments the SDK's types would refuse to send (not an object), sent unchecked.
    params = types.CallToolRequestParams.model_construct(name=name, arguments=arguments)
    request = types.ClientRequest(types.CallToolRequest.model_construct(method="tools/call", params=params))
    return session.send_request(request, types.CallToolResult)

async def main():
    params = StdioServerParameters(
        command=exe,
        args=["mcp", "--workspace", workspace],
        env=dict(os.environ, CODESMITH_HOME=home),
    )
    out = {}
    with anyio.fail_after(30):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["server"] = {
                    "name": init.serverInfo.name,
                    "version": init.serverInfo.version,
                    "instructions": init.instructions,
                    "tools_capability": init.capabilities.tools is not None,
                }
                listed = await session.list_tools()
                out["tools"] = [
                    {"name": t.name, "description": t.description, "inputSchema": t.inputSchema}
                    for t in listed.tools
                ]
                call = session.call_tool
                out["write"] = shape(await call("write_file", {"path": "notes/hello.txt", "content": "héllo 世界\n"}))
                out["read"] = shape(await call("read_file", {"path": "notes/hello.txt"}))
                out["overwrite_unread"] = shape(await call("write_file", {"path": "seed.txt", "content": "new\n"}))
                out["overwrite_forced"] = shape(await call("write_file", {"path": "seed.txt", "content": "new\n", "force_fresh": True}))
                out["outside"] = shape(await call("read_file", {"path": "../outside"}))
                out["no_arguments"] = shape(await call("read_file"))
                out["unknown"] = await protocol(call("no_such_tool", {}))
                out["list_arguments"] = await protocol(raw_call(session, "read_file", [1, 2]))
                out["failed_command"] = shape(await call("exec_shell", {"command": "ls /no-such-dir-cs"}))
                if dangerous:
                    out["dangerous"] = shape(await call("exec_shell", {"command": dangerous}))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)

anyio.run(main)
"#;

/// A command the policy classifies as catastrophic (the quoted text counts) that would only
/// print a line if it ever ran.
const DANGEROUS: &str = "echo 'rm -rf /'";

/// Runs the Python client against a fresh workspace; returns its answers and the workspace.
/// `dangerous` is sent to `exec_shell` when not empty.
fn run_python_client(dangerous: &str) -> (Value, Scratch) {
    let scratch = Scratch::new("py");
    let workspace = scratch.path().join("ws");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(workspace.join("seed.txt"), "old\n").unwrap();
    std::fs::write(scratch.path().join("outside"), "secret\n").unwrap();
    let script = scratch.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let out_path = scratch.path().join("out.json");

    let mut child = Command::new(codesmith_testkit::mcp_python())
        .arg(&script)
        .arg(BIN)
        .args([&workspace, &home, &out_path])
        .arg(dangerous)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, HARD_LIMIT);
    assert!(status.success(), "the Python MCP client failed: {status}");
    let text = std::fs::read_to_string(&out_path).unwrap();
    (serde_json::from_str(&text).unwrap(), scratch)
}

fn envelope<'a>(answers: &'a Value, key: &str) -> (&'a Value, bool) {
    let answer = &answers[key];
    let envelopes = answer["envelopes"].as_array().unwrap();
    assert_eq!(
        envelopes.len(),
        1,
        "{key}: one text block expected: {answer}"
    );
    (&envelopes[0], answer["isError"].as_bool().unwrap())
}

fn refusal_code(answers: &Value, key: &str) -> String {
    let (env, is_error) = envelope(answers, key);
    assert!(is_error, "{key}: a refusal must be a tool error: {env}");
    assert_eq!(env["ok"], false, "{key}: {env}");
    env["error"]["code"].as_str().unwrap().to_string()
}

#[test]
fn python_sdk_client_lists_and_calls_tools() {
    if !python_mcp_available() {
        eprintln!(
            "note: skipped: the Python `mcp` package is not installed (scripts/dev-setup.sh installs it)"
        );
        return;
    }
    // The dangerous command is sent only when the policy is known to refuse it, so a broken
    // gate can fail this test but never run anything harmful.
    let registry =
        codesmith_tools::builtin_registry(codesmith_tools::fetch::FetchConfig::default());
    let policy = codesmith_policy::decide(
        DANGEROUS,
        "/workspace",
        &codesmith_policy::Rules::new(),
        codesmith_policy::ApprovalMode::Auto,
    );
    let probe_policy =
        registry.get("exec_shell").is_some() && policy.decision == codesmith_policy::Decision::Deny;
    if !probe_policy {
        eprintln!(
            "note: the exec-policy probe is skipped (no exec_shell, or the policy allows {DANGEROUS:?})"
        );
    }
    let (answers, scratch) = run_python_client(if probe_policy { DANGEROUS } else { "" });
    let workspace = scratch.path().join("ws");

    let server = &answers["server"];
    assert_eq!(server["name"], "codesmith");
    assert_eq!(server["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(server["tools_capability"], true);
    let instructions = server["instructions"].as_str().unwrap();
    assert!(!instructions.is_empty() && !instructions.contains('\n'));

    // The catalogue is the registry's, sorted, with byte-identical descriptions and schemas.
    let listed = answers["tools"].as_array().unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools/list must be sorted by name");
    for required in ["edit_file", "read_file", "write_file"] {
        assert!(
            names.contains(&required),
            "{required} missing from {names:?}"
        );
    }
    let specs = registry.specs();
    // `lsp` is offered only when a language server is found on this machine's PATH; the
    // registry built here has none.
    let compared: Vec<&Value> = listed.iter().filter(|t| t["name"] != "lsp").collect();
    assert_eq!(compared.len(), specs.len(), "{names:?}");
    for (tool, spec) in compared.iter().zip(&specs) {
        assert_eq!(tool["name"], spec.name.as_str());
        assert_eq!(tool["description"], spec.description.as_str());
        // Writers also accept `force_fresh` over MCP; otherwise the schema is the model's.
        let mut schema = tool["inputSchema"].clone();
        if let Some(props) = schema["properties"].as_object_mut() {
            props.remove("force_fresh");
        }
        assert_eq!(schema, spec.input_schema);
    }
    let write = listed.iter().find(|t| t["name"] == "write_file").unwrap();
    assert!(write["inputSchema"]["properties"]["force_fresh"].is_object());

    // A successful write and read come back as their output, not tool errors.
    let (write, is_error) = envelope(&answers, "write");
    assert!(!is_error && write["text"].is_string(), "{write}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes/hello.txt")).unwrap(),
        "héllo 世界\n"
    );
    let (read, is_error) = envelope(&answers, "read");
    let text = read["text"].as_str().unwrap_or_default();
    assert!(!is_error && text.starts_with("héllo 世界"), "{read}");
    // One-shot callers get the digest edit_file takes, shortened.
    assert!(
        text.contains(r#""sha256":""#) && !text.contains("duration_ms"),
        "{read}"
    );

    // Replacing a file nobody read is refused; force_fresh (one-shot mode) allows it.
    assert_eq!(refusal_code(&answers, "overwrite_unread"), "ALREADY_EXISTS");
    let (forced, is_error) = envelope(&answers, "overwrite_forced");
    assert!(!is_error && forced["text"].is_string(), "{forced}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("seed.txt")).unwrap(),
        "new\n"
    );

    // Refusals are tool errors that carry the envelope.
    assert_eq!(refusal_code(&answers, "outside"), "OUTSIDE_WORKSPACE");
    let (outside, _) = envelope(&answers, "outside");
    assert!(!outside.to_string().contains("secret"));
    assert_eq!(refusal_code(&answers, "no_arguments"), "INVALID_ARGUMENTS");
    // An unknown tool and arguments that are not an object are protocol errors: invalid
    // params (-32602), with a message saying what was wrong.
    assert_eq!(answers["unknown"]["code"], -32602, "{}", answers["unknown"]);
    assert!(
        answers["unknown"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
    let listed_args = &answers["list_arguments"];
    assert_eq!(listed_args["code"], -32602, "{listed_args}");
    assert!(
        listed_args["message"].as_str().unwrap().contains("object"),
        "{listed_args}"
    );
    // A command that ran and failed is a tool error that keeps its output and exit code.
    let failed = &answers["failed_command"];
    assert_eq!(failed["isError"], true, "{failed}");
    let text = failed["envelopes"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("No such file") && text.contains(r#""exit_code":2"#),
        "{failed}"
    );

    // A tool that executes code still passes the exec policy: catastrophic means DENIED.
    if probe_policy {
        assert_eq!(refusal_code(&answers, "dangerous"), "DENIED");
    }
}

/// Speaks newline-delimited JSON-RPC to the binary directly: stdout carries nothing but
/// protocol messages, and the server exits 0 once stdin closes.
#[test]
fn raw_stdio_session_ends_when_stdin_closes() {
    let scratch = Scratch::new("raw");
    let home = scratch.path().join("home");
    let workspace = scratch.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--workspace"])
        .arg(&workspace)
        .env("CODESMITH_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "missing.txt"}
        }}),
    ];
    // Read stdout on a thread, line by line, so a full pipe can never stall the server.
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for message in &messages {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answers: Vec<Value> = Vec::new();
    let take = |line: String, answers: &mut Vec<Value>| {
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(value["jsonrpc"], "2.0", "{line}");
        answers.push(value);
    };
    // Every request is answered before stdin closes (the server may stop at end of input).
    let deadline = Instant::now() + HARD_LIMIT;
    while !answers.iter().any(|a| a["id"] == 3) {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => take(line, &mut answers),
            Err(e) => {
                let _ = child.kill();
                panic!("no answer to every request ({e}); got {answers:?}");
            }
        }
    }
    drop(stdin);
    let status = wait_bounded(&mut child, HARD_LIMIT);
    assert!(status.success(), "codesmith mcp exited with {status}");
    reader.join().unwrap();
    for line in lines.try_iter() {
        take(line, &mut answers);
    }
    let by_id = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id}: {answers:?}"))
    };
    assert_eq!(by_id(1)["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "codesmith");
    assert!(by_id(2)["result"]["tools"].as_array().unwrap().len() >= 3);
    let call = &by_id(3)["result"];
    assert_eq!(call["isError"], true, "{call}");
    let env: Value = serde_json::from_str(call["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(env["error"]["code"], "NOT_FOUND", "{env}");
}

/// The Python SDK client that cancels a running `exec_shell` with `notifications/cancelled`
/// and then checks that the server answers the next call (and never the cancelled one).
const CANCEL_CLIENT: &str = r#"
import json, os, sys, time
import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

exe, workspace, home, out_path, command = sys.argv[1:6]

async def main():
    params = StdioServerParameters(
        command=exe,
        args=["mcp", "--workspace", workspace],
        env=dict(os.environ, CODESMITH_HOME=home),
    )
    out = {"answered": None}
    with anyio.fail_after(30):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                request_id = session._request_id

                async def slow():
                    result = await session.call_tool("exec_shell", {"command": command})
                    out["answered"] = [c.text for c in result.content if c.type == "text"]

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow)
                    # Wait until the command runs: its marker file appears.
                    started = os.path.join(workspace, "started")
                    with anyio.fail_after(10):
                        while not os.path.exists(started):
                            await anyio.sleep(0.02)
                    await session.send_notification(types.ClientNotification(
                        types.CancelledNotification(params=types.CancelledNotificationParams(
                            requestId=request_id, reason="the user changed their mind"))))
                    t0 = time.monotonic()
                    after = await session.call_tool("read_file", {"path": "missing.txt"})
                    out["next_call_seconds"] = time.monotonic() - t0
                    out["next_call_is_error"] = bool(after.isError)
                    # A response to the cancelled request would arrive well within this.
                    await anyio.sleep(1.0)
                    tg.cancel_scope.cancel()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)

anyio.run(main)
"#;

/// `notifications/cancelled` for a running `tools/call exec_shell` kills the command with
/// everything it started (a `setsid` child too); the server sends no response to the
/// cancelled request and goes on answering.
#[test]
fn python_sdk_cancellation_kills_the_running_command() {
    if !python_mcp_available() {
        eprintln!(
            "note: skipped: the Python `mcp` package is not installed (scripts/dev-setup.sh installs it)"
        );
        return;
    }
    let scratch = Scratch::new("cancel");
    let workspace = scratch.path().join("ws");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = scratch.path().join("cancel.py");
    std::fs::write(&script, CANCEL_CLIENT).unwrap();
    let out_path = scratch.path().join("out.json");
    let command = "setsid sleep 48 & touch started; sleep 2; touch marker";
    let mut child = Command::new(codesmith_testkit::mcp_python())
        .arg(&script)
        .arg(BIN)
        .args([&workspace, &home, &out_path])
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, HARD_LIMIT);
    assert!(status.success(), "the Python MCP client failed: {status}");
    let answers: Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(
        answers["answered"],
        Value::Null,
        "the cancelled call was answered: {answers}"
    );
    assert_eq!(answers["next_call_is_error"], true, "{answers}");
    assert!(
        answers["next_call_seconds"].as_f64().unwrap() < 2.0,
        "{answers}"
    );
    assert!(workspace.join("started").exists());
    assert!(
        codesmith_testkit::live_processes(&["sleep", "48"]).is_empty(),
        "the setsid child outlived the cancel"
    );
    // Past the moment the command would have finished (2 s after it started), its last
    // step never ran.
    let started_at = std::fs::metadata(workspace.join("started"))
        .unwrap()
        .modified()
        .unwrap();
    let due = started_at + Duration::from_millis(2500);
    if let Ok(left) = due.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left.min(Duration::from_secs(3)));
    }
    assert!(
        !workspace.join("marker").exists(),
        "the cancelled command ran on"
    );
}
