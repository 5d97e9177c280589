//! The refusal registry: every tool of the catalogue the model is offered (read from the
//! scripted server's first request) has an entry here listing the refusals it can
//! produce, each with the code and the detail keys its serialised envelope carries. The
//! calls run through `codesmith exec --json`, and each result must be exactly
//! `{"error": {"code", "message", "hint", "details"}, "ok": false}` with the registered
//! code and keys. A tool added to the catalogue without an entry fails the test, so no
//! refusal ships without a stable shape.

#![allow(clippy::unwrap_used)]

use crate::common::Sandbox;
use crate::interactive::{call, results};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

/// One refusal a tool can produce: the arguments that provoke it, its code, and the
/// keys its `details` must carry besides `message`.
struct Case {
    args: Value,
    code: &'static str,
    details: &'static [&'static str],
}

fn case(args: Value, code: &'static str, details: &'static [&'static str]) -> Case {
    Case {
        args,
        code,
        details,
    }
}

/// The registry: every catalogue tool with the refusals it can produce. A tool that
/// cannot refuse anything of its own (its only failures are the engine's, such as
/// arguments that are not an object) is listed with no cases and a reason.
fn registry() -> Vec<(&'static str, Vec<Case>)> {
    vec![
        ("agent", vec![case(json!({}), "INVALID_ARGUMENTS", &[])]),
        (
            "apply_patch",
            vec![case(
                json!({"patch": "not a patch"}),
                "INVALID_ARGUMENTS",
                &["patch_line", "reason"],
            )],
        ),
        (
            "edit_file",
            vec![case(
                json!({"path": "missing.txt", "search": "a", "replace": "b"}),
                "NOT_FOUND",
                &["path"],
            )],
        ),
        (
            "exec_shell",
            vec![case(json!({"command": " "}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "fetch_url",
            vec![case(
                json!({"url": "not a url"}),
                "DENIED",
                &["url", "check_name"],
            )],
        ),
        (
            "file_search",
            vec![case(json!({}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "fim_edit",
            vec![case(
                json!({"path": "calc.py", "prefix": "", "suffix": "", "middle": "x"}),
                "INVALID_ARGUMENTS",
                &[],
            )],
        ),
        (
            "grep_files",
            vec![case(json!({}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "list_dir",
            vec![case(json!({"path": "nope"}), "NOT_FOUND", &["path"])],
        ),
        // Offered when a language server is configured (the test configures one).
        ("lsp", vec![case(json!({}), "INVALID_ARGUMENTS", &[])]),
        (
            "pty_end",
            vec![case(json!({"id": "pty-9"}), "NOT_FOUND", &["id"])],
        ),
        // Lists the session's interactive sessions; nothing to refuse.
        ("pty_list", vec![]),
        (
            "pty_read",
            vec![case(json!({"id": "pty-9"}), "NOT_FOUND", &["id"])],
        ),
        (
            "pty_send",
            vec![
                case(json!({"id": "pty-9", "text": "y\n"}), "NOT_FOUND", &["id"]),
                case(
                    json!({"id": "pty-1", "keys": ["hyper"]}),
                    "INVALID_ARGUMENTS",
                    &["key"],
                ),
            ],
        ),
        (
            "pty_start",
            vec![case(json!({"command": ""}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "read_file",
            vec![case(
                json!({"path": "../outside.txt"}),
                "OUTSIDE_WORKSPACE",
                &["path"],
            )],
        ),
        ("recall", vec![case(json!({}), "INVALID_ARGUMENTS", &[])]),
        (
            "remember",
            vec![case(json!({"fact": ""}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "retrieve_tool_result",
            vec![case(json!({"ref": "nope"}), "NOT_FOUND", &["ref"])],
        ),
        ("rlm", vec![case(json!({}), "INVALID_ARGUMENTS", &[])]),
        ("rlm_exec", vec![case(json!({}), "INVALID_ARGUMENTS", &[])]),
        (
            "skill",
            vec![case(json!({"name": "no-such-skill"}), "NOT_FOUND", &[])],
        ),
        (
            "slop",
            vec![
                case(json!({"action": "explode"}), "INVALID_ARGUMENTS", &[]),
                case(
                    json!({"action": "show", "id": "SLOP-9"}),
                    "NOT_FOUND",
                    &["id"],
                ),
                case(
                    json!({"action": "update", "id": "SLOP-9", "status": "accepted"}),
                    "DENIED",
                    &["id", "status"],
                ),
            ],
        ),
        (
            "task_shell_cancel",
            vec![case(json!({"id": "task-9"}), "NOT_FOUND", &["id"])],
        ),
        (
            "task_shell_poll",
            vec![case(json!({"id": "task-9"}), "NOT_FOUND", &["id"])],
        ),
        (
            "task_shell_start",
            vec![case(json!({"command": ""}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "update_plan",
            vec![case(json!({}), "INVALID_ARGUMENTS", &[])],
        ),
        (
            "write_file",
            vec![case(
                json!({"path": ".git/config", "content": "x"}),
                "DENIED",
                &["path"],
            )],
        ),
    ]
}

/// The envelope inside a result's text (a network tool's is inside its external wrapper).
fn envelope(output: &str) -> Value {
    let start = output.find('{').unwrap_or(0);
    let end = output.rfind('}').map_or(output.len(), |e| e + 1);
    serde_json::from_str(&output[start..end]).unwrap_or_else(|e| panic!("{e}: {output}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalogue_tool_has_a_registered_refusal_shape() {
    let sb = Sandbox::new();
    let registry = registry();
    let server = ScriptedServer::start().await;
    let mut n = 0;
    for (_, cases) in &registry {
        for c in cases {
            n += 1;
            server.push(call(
                &format!("c{n}"),
                registry_name(&registry, n),
                c.args.clone(),
            ));
            // A success now and then, so the loop guard's count of consecutive failures
            // never stops the run.
            if n % 6 == 0 {
                server.push(call(
                    &format!("ok{n}"),
                    "exec_shell",
                    json!({"command": format!("echo {n}")}),
                ));
            }
        }
    }
    server.push(Scripted::text("Done."));
    // A language server in the user config, so the catalogue has the `lsp` tool whatever
    // this machine has on PATH (it never starts: no call names a file it handles).
    let config = sb.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    text.push_str("\n[lsp.fake]\ncommand = [\"/bin/false\"]\nextensions = [\"zzz\"]\n");
    std::fs::write(&config, text).unwrap();
    let ws = sb.ws();
    let out = crate::common::codesmith(
        &sb.home(),
        &crate::common::exec_args(
            &ws,
            &server.base_url(),
            "auto",
            &["--json", "exercise every refusal"],
        ),
    )
    .await;
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    // The catalogue the model was offered.
    let first = server.request_bodies().into_iter().next().unwrap();
    let offered: Vec<String> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    let missing: Vec<&String> = offered
        .iter()
        .filter(|name| !registry.iter().any(|(r, _)| r == name))
        .collect();
    assert!(
        missing.is_empty(),
        "catalogue tools with no refusal registry entry: {missing:?}; add them to registry() \
         with the refusals they can produce"
    );

    let r: Vec<&Value> = results(&events)
        .into_iter()
        .filter(|e| e["id"].as_str().is_some_and(|id| id.starts_with('c')))
        .collect();
    assert_eq!(r.len(), n, "{events:?}");
    let mut wrong = Vec::new();
    for (result, (tool, c)) in r.iter().zip(
        registry
            .iter()
            .flat_map(|(tool, cases)| cases.iter().map(move |c| (*tool, c))),
    ) {
        if let Err(why) = shape(result, tool, c) {
            wrong.push(format!("{tool} {}: {why}", c.args));
        }
    }
    assert!(
        wrong.is_empty(),
        "refusals off their registered shape:\n{}",
        wrong.join("\n")
    );
}

/// Checks one result against its registered case.
fn shape(result: &Value, tool: &str, c: &Case) -> Result<(), String> {
    if result["name"] != tool || result["ok"] != false {
        return Err(format!("not a refusal of {tool}: {result}"));
    }
    let v = envelope(result["output"].as_str().unwrap_or_default());
    let top: Vec<&String> = v
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    let e = &v["error"];
    let keys: Vec<&String> = e
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    if top != ["error", "ok"] || keys != ["code", "details", "hint", "message"] {
        return Err(format!("envelope keys {top:?} / {keys:?}: {v}"));
    }
    if e["code"] != c.code {
        return Err(format!("code {} (registered {}): {v}", e["code"], c.code));
    }
    if e["message"].as_str().is_none_or(str::is_empty)
        || e["hint"].as_str().is_none_or(str::is_empty)
        || e["details"]["message"] != e["message"]
    {
        return Err(format!("message or hint missing: {v}"));
    }
    for key in c.details {
        if e["details"].get(*key).is_none() {
            return Err(format!("details lack {key:?}: {v}"));
        }
    }
    Ok(())
}

/// The tool of the `n`-th case (1-based), in registry order.
fn registry_name(registry: &[(&'static str, Vec<Case>)], n: usize) -> &'static str {
    registry
        .iter()
        .flat_map(|(tool, cases)| cases.iter().map(move |_| *tool))
        .nth(n - 1)
        .unwrap()
}
