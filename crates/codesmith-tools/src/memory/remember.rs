//! The `remember` tool: append one fact to long-lived memory.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{INDEX_FILE, MAX_FACT_BYTES, MemoryError, Scope, append_fact, memory_dir};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Appends a fact to the user's or the project's memory (see [`append_fact`]).
/// Capability: writes files. Identical lines are stored once; nothing is ever removed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Remember;

const DESCRIPTION: &str = "Store one durable fact for future sessions: a user preference, \
a project convention, a command that works, a pitfall found the hard way. The fact is \
appended as one line to MEMORY.md, or to a topic file when `topic` is given (the index then \
points to it); an identical line is stored only once and nothing is ever deleted. Scope \
\"user\" (the default) is private to the user and true in every project; \"project\" is \
stored under .codesmith/memory/ in the workspace. Write a fact, not an instruction, and \
never a secret. Do not use it for task progress or notes for this session only. Examples: \
{\"fact\": \"The user prefers tabs for indentation.\"}; {\"fact\": \"Run the tests with \
make check, not cargo test.\", \"topic\": \"build\", \"scope\": \"project\"}.";

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        message,
        "call remember with {\"fact\": \"one sentence\"} and optionally \"topic\" and \
         \"scope\": \"user\" or \"project\"",
    )
}

fn parse_scope(args: &Value) -> Result<Scope, Refusal> {
    match args.get("scope") {
        None | Some(Value::Null) => Ok(Scope::User),
        Some(Value::String(s)) if s == "user" => Ok(Scope::User),
        Some(Value::String(s)) if s == "project" => Ok(Scope::Project),
        Some(other) => Err(invalid(format!(
            "scope {other} is not \"user\" or \"project\""
        ))),
    }
}

fn refusal(e: MemoryError) -> Refusal {
    match e {
        MemoryError::EmptyFact => invalid("the fact is empty"),
        MemoryError::FactTooLong(n) => Refusal::new(
            ErrorCode::TooLarge,
            format!("the fact is {n} bytes; the limit is {MAX_FACT_BYTES}"),
            "store one short sentence per call; split a long note into several facts",
        ),
        e @ MemoryError::BadTopic(_) => invalid(e.to_string()),
        MemoryError::Io(path, e) => crate::fs::os_error::io_refusal(
            &path.to_string_lossy(),
            crate::fs::os_error::Access::Write,
            &e,
        ),
    }
}

#[async_trait]
impl Tool for Remember {
    fn name(&self) -> &'static str {
        "remember"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "One self-contained sentence stating the fact."},
                "topic": {"type": "string", "description": "Short topic name (e.g. \"build\"); the fact goes to <topic>.md."},
                "scope": {"type": "string", "enum": ["user", "project"], "description": "Where to store it (default \"user\")."}
            },
            "required": ["fact"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let Some(fact) = args.get("fact").and_then(Value::as_str) else {
            return Err(invalid("`fact` is missing or not a string"));
        };
        let topic = match args.get("topic") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.as_str()),
            Some(_) => return Err(invalid("`topic` must be a string")),
        };
        let scope = parse_scope(&args)?;
        let dir = match scope {
            Scope::User => memory_dir(scope, &ctx.home, &ctx.workspace),
            // The project store lives in the workspace: the same containment as any write,
            // so a `.codesmith` symlink cannot send the fact outside.
            Scope::Project => ctx.resolve(".codesmith/memory")?.abs,
        };
        if scope == Scope::User {
            crate::private::create_dir_all(&dir)
                .map_err(|e| refusal(super::MemoryError::Io(dir.clone(), e)))?;
        }
        let done = append_fact(&dir, fact, topic).map_err(refusal)?;
        if scope == Scope::User {
            // User memory lives under $CODESMITH_HOME: owner-only, like everything there.
            for path in [dir.join(INDEX_FILE), done.file.clone()] {
                let _ = crate::private::restrict(&path);
            }
        }
        let scope_name = if scope == Scope::User {
            "user"
        } else {
            "project"
        };
        let file = done.file.file_name().map_or_else(
            || INDEX_FILE.to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let index = std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap_or_default();
        let text = if done.added {
            format!("Remembered in {scope_name} memory ({file}).")
        } else {
            format!("Already remembered in {scope_name} memory ({file}); nothing changed.")
        };
        Ok(ToolOutput::new(text)
            .with("scope", scope_name)
            .with("file", file)
            .with("added", done.added)
            .with("pointer_added", done.pointer_added)
            // Stated as the news (`true` when over), because the lean result the
            // model reads leaves out facts that are `false`.
            .with("index_over_budget", !super::within_budget(&index)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn remembers_once_per_scope() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        let ctx = ToolContext::new(
            d.path().canonicalize().unwrap().join("ws"),
            d.path().join("home"),
        );
        let out = Remember
            .call(
                &ctx,
                json!({"fact": "uses uv", "topic": "python", "scope": "project"}),
            )
            .await
            .unwrap();
        assert_eq!(
            out.output,
            json!("Remembered in project memory (python.md).")
        );
        let again = Remember
            .call(
                &ctx,
                json!({"fact": "uses uv", "topic": "python", "scope": "project"}),
            )
            .await
            .unwrap();
        assert_eq!(again.meta["added"], json!(false));
        assert!(d.path().join("ws/.codesmith/memory/python.md").is_file());
        Remember
            .call(&ctx, json!({"fact": "likes tabs"}))
            .await
            .unwrap();
        assert!(d.path().join("home/memory/MEMORY.md").is_file());
        #[cfg(unix)]
        {
            // User memory lives under $CODESMITH_HOME: owner-only.
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &str| {
                std::fs::metadata(d.path().join(p))
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o777
            };
            assert_eq!(mode("home"), 0o700);
            assert_eq!(mode("home/memory"), 0o700);
            assert_eq!(mode("home/memory/MEMORY.md"), 0o600);
        }
    }

    #[tokio::test]
    async fn the_model_reads_that_the_index_is_over_budget() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws/.codesmith/memory")).unwrap();
        let lines: String = (0..super::super::MAX_LINES + 5)
            .map(|i| format!("- fact {i}\n"))
            .collect();
        std::fs::write(d.path().join("ws/.codesmith/memory/MEMORY.md"), lines).unwrap();
        let ctx = ToolContext::new(
            d.path().canonicalize().unwrap().join("ws"),
            d.path().join("home"),
        );
        let over = Remember
            .call(&ctx, json!({"fact": "uses uv", "scope": "project"}))
            .await;
        let text = crate::model_text(&crate::envelope_json(&over), false, false);
        assert!(text.contains("\"index_over_budget\":true"), "{text}");
        let fresh = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(fresh.path().join("ws")).unwrap();
        let ctx = ToolContext::new(
            fresh.path().canonicalize().unwrap().join("ws"),
            fresh.path().join("home"),
        );
        let within = Remember
            .call(&ctx, json!({"fact": "uses uv", "scope": "project"}))
            .await;
        let text = crate::model_text(&crate::envelope_json(&within), false, false);
        assert!(!text.contains("budget"), "{text}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn project_memory_cannot_escape_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let (ws, outside) = (d.path().join("ws"), d.path().join("outside"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join(".codesmith")).unwrap();
        let ctx = ToolContext::new(ws.canonicalize().unwrap(), d.path().join("home"));
        let e = Remember
            .call(&ctx, json!({"fact": "x", "scope": "project"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::OutsideWorkspace);
        assert!(!outside.join("memory").exists());
    }

    #[tokio::test]
    async fn bad_arguments_are_typed_refusals() {
        let d = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(d.path().to_path_buf(), d.path().to_path_buf());
        for args in [
            json!({}),
            json!({"fact": "x", "scope": "team"}),
            json!({"fact": "x", "topic": 3}),
            json!({"fact": "  "}),
        ] {
            let e = Remember.call(&ctx, args).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments);
        }
        let e = Remember
            .call(&ctx, json!({"fact": "z".repeat(5000)}))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::TooLarge);
    }

    #[test]
    fn description_is_byte_stable_and_has_examples() {
        assert_eq!(Remember.description(), DESCRIPTION);
        assert!(DESCRIPTION.contains("Examples:"));
        assert_eq!(
            Remember.input_schema().to_string(),
            Remember.input_schema().to_string()
        );
    }
}
