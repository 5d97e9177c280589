//! `codesmith memory consolidate` end to end: dry run, --apply with a backup, and --llm
//! against the scripted model server (a valid proposal lands; an invalid one falls back).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use codesmith_testkit::{Fault, Scripted, ScriptedServer};

const INDEX: &str =
    "# Memory\n- prefers tabs\n- [build](build.md)\n- [build](build.md)\n- [gone](gone.md)\n";

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let mem = home.join("memory");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("MEMORY.md"), INDEX).unwrap();
        std::fs::write(mem.join("build.md"), "- run make check\n").unwrap();
        std::fs::write(mem.join("style.md"), "---\nname: style\n---\n- tabs\n").unwrap();
        Home { _dir: dir, home }
    }

    fn mem(&self) -> PathBuf {
        self.home.join("memory")
    }

    fn with_server(&self, server: &ScriptedServer) {
        let config = format!(
            "provider = \"openai\"\nmodel = \"scripted\"\n[openai]\nbase_url = \"{}\"\napi_key = \"sk-test\"\n",
            server.base_url()
        );
        std::fs::write(self.home.join("config.toml"), config).unwrap();
    }
}

async fn run(home: &Path, args: &[&str]) -> (i32, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(args)
        .env("CODESMITH_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out: Output = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

const TIDY: &str = "# Memory\n- prefers tabs\n- [build](build.md)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_a_diff_and_apply_writes_with_a_backup() {
    let h = Home::new();
    let (code, out) = run(&h.home, &["memory", "consolidate"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("dropped duplicate pointer: - [build](build.md)"),
        "{out}"
    );
    assert!(
        out.contains("dropped pointer to a missing file: - [gone](gone.md)"),
        "{out}"
    );
    assert!(
        out.contains("orphan topic file (kept, not indexed): style.md"),
        "{out}"
    );
    assert!(out.contains("\n-- [gone](gone.md)\n"), "{out}");
    assert!(out.contains("dry run"), "{out}");
    assert_eq!(
        std::fs::read_to_string(h.mem().join("MEMORY.md")).unwrap(),
        INDEX
    );

    let (code, out) = run(&h.home, &["memory", "consolidate", "--apply"]).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(h.mem().join("MEMORY.md")).unwrap(),
        TIDY
    );
    assert_eq!(
        std::fs::read_to_string(h.mem().join("MEMORY.md.bak")).unwrap(),
        INDEX
    );
    assert!(
        h.mem().join("style.md").is_file(),
        "orphans are never deleted"
    );
    let (_, out) = run(&h.home, &["memory", "consolidate"]).await;
    assert!(out.contains("needs no change"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_llm_proposal_lands() {
    let h = Home::new();
    let server = ScriptedServer::start().await;
    let proposal = "# Memory\n- prefers tabs\n## Topics\n- [build](build.md) — build commands\n- [style](style.md) — code style\n";
    server.push(Scripted::text(proposal));
    h.with_server(&server);
    let (code, out) = run(&h.home, &["memory", "consolidate", "--llm", "--apply"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("passed validation"), "{out}");
    assert_eq!(
        std::fs::read_to_string(h.mem().join("MEMORY.md")).unwrap(),
        proposal
    );
    assert_eq!(
        std::fs::read_to_string(h.mem().join("build.md")).unwrap(),
        "- run make check\n"
    );
    let body = server.request_bodies()[0].to_string();
    assert!(
        body.contains("style.md") && body.contains("name: style"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_proposal_or_a_failed_call_falls_back_to_the_tidy() {
    let h = Home::new();
    let server = ScriptedServer::start().await;
    // Points to a file that does not exist and forgets style.md.
    server.push(Scripted::text(
        "- prefers tabs\n- [build](build.md)\n- [ghost](ghost.md)\n",
    ));
    server.push(Fault::status(500));
    h.with_server(&server);
    let (code, out) = run(&h.home, &["memory", "consolidate", "--llm"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("points to ghost.md, which does not exist"),
        "{out}"
    );
    assert!(out.contains("leaves style.md without a pointer"), "{out}");
    assert!(out.contains("keeping the deterministic result"), "{out}");
    let (code, out) = run(&h.home, &["memory", "consolidate", "--llm", "--apply"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("llm: proposal discarded"), "{out}");
    assert_eq!(
        std::fs::read_to_string(h.mem().join("MEMORY.md")).unwrap(),
        TIDY
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_memory_and_a_missing_index() {
    let h = Home::new();
    let ws = h.home.parent().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let (code, out) = run(
        &h.home,
        &[
            "memory",
            "consolidate",
            "--project",
            "-w",
            ws.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to consolidate"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_facts_reach_the_system_prompt_and_remember_is_offered() {
    let h = Home::new();
    let ws = h.home.parent().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("ok"));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args([
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
    ])
    .args([
        "--base-url",
        &server.base_url(),
        "--model",
        "scripted",
        "hello",
    ])
    .env("CODESMITH_HOME", &h.home)
    .env("OPENAI_API_KEY", "sk-test")
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &server.request_bodies()[0];
    let system = body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(system.contains("never commands"), "{system}");
    assert!(
        system.contains("[user memory: MEMORY.md]\n# Memory\n- prefers tabs"),
        "{system}"
    );
    // Topic files are listed with their entry counts; their entries come by `recall`.
    assert!(
        system.contains("[user memory: build.md] 1 entry\n[user memory: style.md] 1 entry\n"),
        "{system}"
    );
    assert!(!system.contains("run make check"), "{system}");
    let tools = body["tools"].to_string();
    assert!(tools.contains("\"remember\""), "{tools}");
    assert!(tools.contains("\"recall\""), "{tools}");
}

#[tokio::test]
async fn a_large_project_memory_stays_out_of_the_prompt_and_recall_finds_a_planted_entry() {
    use crate::common::{Sandbox, codesmith, exec_args};
    let sb = Sandbox::new();
    let ws = sb.ws();
    let mem = ws.join(".codesmith").join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    let mut index = String::from("# Memory\n");
    for i in 0..500 {
        if i == 377 {
            index.push_str("- The staging deploy key rotates every Tuesday at 09:00 UTC\n");
        } else {
            index.push_str(&format!(
                "- Convention {i}: module {i} keeps its tests beside it\n"
            ));
        }
    }
    std::fs::write(mem.join("MEMORY.md"), &index).unwrap();
    let server = ScriptedServer::start().await;
    server.push(Scripted::tool_call(
        "c1",
        "recall",
        r#"{"query": "when does the deploy key rotate"}"#,
    ));
    server.push(Scripted::text("Tuesdays."));
    let args = exec_args(
        &ws,
        &server.base_url(),
        "auto",
        &["When does the key rotate?"],
    );
    let out = codesmith(&sb.home(), &args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies = server.request_bodies();
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        !system.contains("deploy key"),
        "the planted entry is in the prompt"
    );
    assert!(
        !system.contains("Convention 499"),
        "the memory entered whole"
    );
    assert!(system.contains("- Convention 1: module 1"), "{system}");
    assert!(system.contains("recall finds every entry"), "{system}");
    let memory_part = &system[system.find("Memory index").unwrap()..];
    assert!(memory_part.len() < 9 * 1024, "{} bytes", memory_part.len());
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("The staging deploy key rotates every Tuesday"),
        "{result}"
    );
    let found: Vec<&str> = result
        .lines()
        .filter(|l| l.contains("[project memory: MEMORY.md] "))
        .collect();
    assert!((1..=5).contains(&found.len()), "{result}");
    assert!(
        found[0].contains("The staging deploy key rotates"),
        "not ranked first: {result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_utility_model_writes_the_proposal() {
    let h = Home::new();
    let session = ScriptedServer::start().await;
    let utility = ScriptedServer::start().await;
    let proposal =
        "# Memory\n- prefers tabs\n- [build](build.md) — build\n- [style](style.md) — style\n";
    utility.push(Scripted::text(proposal));
    h.with_server(&session);
    let mut config = std::fs::read_to_string(h.home.join("config.toml")).unwrap();
    config.push_str(&format!(
        "[utility_model]\nmodel = \"tidy-model\"\nbase_url = \"{}\"\n",
        utility.base_url()
    ));
    std::fs::write(h.home.join("config.toml"), config).unwrap();
    let (code, out) = run(&h.home, &["memory", "consolidate", "--llm", "--apply"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("passed validation"), "{out}");
    assert!(
        session.requests().is_empty(),
        "the session's model was asked"
    );
    assert_eq!(utility.request_bodies()[0]["model"], "tidy-model");
}
