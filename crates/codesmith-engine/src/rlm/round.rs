//! One round of an RLM session: code in, printed output out, with the child calls the code
//! makes answered on the way; and the recursive child (`rlm_query`), an RLM of its own one
//! level down.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use codesmith_protocol::{ContentBlock, Message, Role};
use codesmith_providers::ChatRequest;
use codesmith_tools::ToolContext;
use serde_json::{Value, json};

use super::RlmConfig;
use super::child::ChildModel;
use super::repl::{Repl, ReplError};

/// What a round produced.
#[derive(Debug, Clone, Default)]
pub(super) struct RoundOutput {
    /// Printed output (the driver keeps at most 8 Mi characters of it).
    pub output: String,
    /// Characters printed in all, kept or not.
    pub output_chars: u64,
    /// The answer passed to `final()`, if it was called.
    pub final_answer: Option<String>,
    /// The end of the traceback when the code raised.
    pub error: Option<String>,
    /// Child calls the round made (plain and recursive).
    pub child_calls: u32,
}

/// Everything a round needs besides its REPL.
#[derive(Debug, Clone)]
pub(super) struct RoundEnv {
    /// The session's tool context (sandbox, workspace, usage counter).
    pub ctx: ToolContext,
    /// Where child calls go.
    pub child: ChildModel,
    /// The bounds.
    pub config: RlmConfig,
    /// The interpreter (recursive children start their own REPL with it).
    pub python: std::path::PathBuf,
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs `code` in `repl` until the driver reports the round done, answering its child
/// calls: `llm`/`llm_batch` as plain completions, `rlm_query` as a recursive child while
/// `depth_remaining > 0` and as a plain completion once it is 0. A batch over the cap is
/// refused back into Python (the driver checks it too).
///
/// # Errors
/// The REPL's: it ended (a crash, the memory limit) or broke the protocol.
pub(super) fn run_round<'a>(
    env: &'a RoundEnv,
    repl: &'a mut Repl,
    code: &'a str,
    depth_remaining: u32,
) -> Boxed<'a, Result<RoundOutput, ReplError>> {
    Box::pin(async move {
        let number = repl.next_round();
        repl.send(&json!({"op": "exec", "code": code, "round": number}))
            .await?;
        let mut calls = 0u32;
        loop {
            let message = repl.recv().await?;
            match message["op"].as_str() {
                // A `done` of another round (forged by the code, or left over after a forged
                // one) would shift every later round's output by one: the session ends.
                Some("done") if message["round"].as_u64() != Some(number) => {
                    return Err(ReplError::Protocol(format!(
                        "round {number} was answered as round {}",
                        message["round"]
                    )));
                }
                Some("done") => {
                    return Ok(RoundOutput {
                        output: message["output"].as_str().unwrap_or_default().to_string(),
                        output_chars: message["output_chars"].as_u64().unwrap_or(0),
                        final_answer: message["final"].as_str().map(str::to_string),
                        error: message["error"].as_str().map(str::to_string),
                        child_calls: calls,
                    });
                }
                Some("llm") => {
                    let prompts: Vec<String> = message["prompts"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .map(|p| p.as_str().unwrap_or_default().to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    let reply = if prompts.len() > env.config.max_batch {
                        json!({"op": "answers", "error": format!(
                            "at most {} prompts per batch, got {}; split the list",
                            env.config.max_batch, prompts.len())})
                    } else {
                        calls += prompts.len() as u32;
                        match env.child.batch(&prompts, &env.ctx.child_usage).await {
                            Ok(answers) => json!({"op": "answers", "answers": answers}),
                            Err(e) => json!({"op": "answers", "error": e}),
                        }
                    };
                    repl.send(&reply).await?;
                }
                Some("rlm") => {
                    let prompt = message["prompt"].as_str().unwrap_or_default();
                    let context = message["context"].as_str().unwrap_or_default();
                    calls += 1;
                    let answer = if depth_remaining == 0 {
                        env.child
                            .complete(&degraded_prompt(prompt, context), &env.ctx.child_usage)
                            .await
                    } else {
                        child_rlm(env, prompt, context, depth_remaining - 1).await
                    };
                    let reply = match answer {
                        Ok(a) => json!({"op": "answers", "answers": [a]}),
                        Err(e) => json!({"op": "answers", "error": e}),
                    };
                    repl.send(&reply).await?;
                }
                other => {
                    return Err(ReplError::Protocol(format!(
                        "unexpected message {:?}",
                        other.unwrap_or("?")
                    )));
                }
            }
        }
    })
}

/// Most characters of `context` a degraded (plain) `rlm_query` sends inline.
pub const DEGRADED_CONTEXT_CHARS: usize = 32_000;

/// The prompt of an `rlm_query` once the depth is spent: the question, then the context
/// inline, cut at [`DEGRADED_CONTEXT_CHARS`] with a note.
pub(super) fn degraded_prompt(prompt: &str, context: &str) -> String {
    let cut: String = context.chars().take(DEGRADED_CONTEXT_CHARS).collect();
    let note = if cut.len() < context.len() {
        format!(
            "\n[the context was cut to its first {DEGRADED_CONTEXT_CHARS} characters of {}]",
            context.chars().count()
        )
    } else {
        String::new()
    };
    format!("{prompt}\n\n<context>\n{cut}\n</context>{note}")
}

/// The system prompt of a recursive child: the root's contract one level down.
pub const CHILD_RLM_SYSTEM: &str = "You are a child of a Recursive Language Model (RLM). Your \
input is loaded into a Python REPL as the variable `context`; you never see it whole. Every \
reply is exactly one ```repl fenced block of Python and nothing else: read through the bounded \
helpers peek(var, start, length), grep(var, pattern, max) and chunks(var, size), compute in \
Python, print only small summaries, delegate judgement of small pieces with llm(prompt) or \
llm_batch(prompts), and call final(answer) with your answer when you have it.";

/// Rounds a recursive child may take before it must have answered.
pub const CHILD_RLM_ROUNDS: u32 = 8;

/// A recursive child: a fresh REPL (same sandbox, same bounds) holding `context`, driven by
/// the child model in rounds of one code block each until it calls `final()`, at most
/// [`CHILD_RLM_ROUNDS`] rounds. Its own `rlm_query` calls run with `depth_remaining`.
async fn child_rlm(
    env: &RoundEnv,
    prompt: &str,
    context: &str,
    depth_remaining: u32,
) -> Result<String, String> {
    let mut repl = Repl::start(
        &env.ctx,
        &env.python,
        env.config.memory_bytes,
        env.config.max_batch,
    )
    .await
    .map_err(|r| r.message)?;
    let meta = json!({"chars": context.chars().count(), "lines": context.lines().count()});
    repl.load("context", &Value::String(context.to_string()), meta.clone())
        .await
        .map_err(|e| e.to_string())?;
    let preview: String = context.chars().take(200).collect();
    let mut messages = vec![Message::user_text(format!(
        "{prompt}\n\n`context`: {meta}; preview: {preview:?}\nDepth remaining for rlm_query: \
         {depth_remaining}."
    ))];
    let deadline = Instant::now() + env.child.timeout;
    for _ in 0..CHILD_RLM_ROUNDS {
        let request = ChatRequest {
            model: env.child.model.clone(),
            system: CHILD_RLM_SYSTEM.to_string(),
            messages: messages.clone(),
            tools: Vec::new(),
            max_tokens: Some(env.child.max_tokens),
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: None,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let mut quiet = |_| {};
        let response = tokio::time::timeout(
            left,
            codesmith_providers::complete(
                env.child.provider.as_ref(),
                &request,
                &env.child.complete,
                &mut quiet,
            ),
        )
        .await
        .map_err(|_| {
            format!(
                "the recursive child timed out after {} s",
                env.child.timeout.as_secs()
            )
        })?
        .map_err(|e| format!("the model request failed: {e}"))?;
        env.ctx.child_usage.add(&response.usage);
        let Some(code) = code_block(&response.text) else {
            return Ok(response.text);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let round = tokio::time::timeout(
            left.min(env.config.round_timeout),
            run_round(env, &mut repl, &code, depth_remaining),
        )
        .await
        .map_err(|_| "a round of the recursive child ran out of time".to_string())?
        .map_err(|e| e.to_string())?;
        if let Some(answer) = round.final_answer {
            return Ok(answer);
        }
        let shown = super::cap_text(&round.output, env.config.output_cap);
        let mut feedback = format!("Output:\n{shown}");
        if let Some(err) = round.error {
            feedback.push_str(&format!("\nError:\n{}", super::repl::report(&err)));
        }
        messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: response.text,
            }],
        });
        messages.push(Message::user_text(feedback));
    }
    Err(format!(
        "the recursive child did not call final() within {CHILD_RLM_ROUNDS} rounds"
    ))
}

/// The body of the first ```repl (or ```python) fenced block of `text`.
pub fn code_block(text: &str) -> Option<String> {
    let start = ["```repl", "```python"]
        .iter()
        .filter_map(|fence| text.find(fence).map(|at| at + fence.len()))
        .min()?;
    let body = &text[start..];
    let body = body.strip_prefix('\n').unwrap_or(body);
    let end = body.find("```")?;
    Some(body[..end].to_string())
}
