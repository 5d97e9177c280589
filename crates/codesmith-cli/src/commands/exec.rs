//! `codesmith exec`: run one task to completion without a person present.

use std::sync::Arc;

use anyhow::Result;
use codesmith_engine::{Approvals, NoApprover, Session};
use codesmith_protocol::{Event, Op, StopReason, TaskStatus};

use crate::args::ExecArgs;
use crate::config;
use crate::exit::{Exit, usage};
use crate::progress::Progress;
use crate::setup;
use crate::shutdown::{self, Shutdown, StopSignal};

/// Runs `codesmith exec`.
pub(crate) async fn run(mut args: ExecArgs) -> Exit {
    keep_resumed_model(&mut args);
    let mut resolved = match config::resolve(config::Flags {
        workspace: args.workspace.workspace.as_deref(),
        model: &args.model,
        max_turns: args.max_turns,
    }) {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    if args.task.trim().is_empty() {
        return usage(anyhow::anyhow!(
            "the task is empty: say what to do, e.g. codesmith exec \"fix the failing test\""
        ));
    }
    let mut images = Vec::new();
    for path in &args.image {
        match codesmith_tools::image::attach_async(path).await {
            Ok(fitted) => images.push(fitted),
            Err(e) => {
                return usage(anyhow::anyhow!(
                    "--image {}: {e}; name a PNG, JPEG, GIF or WebP file",
                    path.display()
                ));
            }
        }
    }
    let mut progress = Progress::new(args.json);
    // `/NAME ARGS`: a custom slash command, expanded by the one expansion the UI uses too.
    let mut only_tools = None;
    if let Some(expansion) = resolved.commands.expand(&args.task) {
        args.task = expansion.text;
        if let Some(model) = expansion.model {
            resolved.model = model;
        }
        only_tools = expansion.allowed_tools;
    }
    for fitted in images.iter().filter(|f| f.downscaled()) {
        progress.show(&Event::Notice {
            message: format!("attached image: {}", fitted.describe()),
        });
    }
    // Spilled outputs older than 7 days are removed at start-up; a failure costs nothing.
    let _ = codesmith_tools::spill::cleanup_old(&resolved.home);
    for warning in resolved.warnings.iter().chain(&resolved.session_notices) {
        progress.show(&Event::Notice {
            message: warning.clone(),
        });
    }
    let provider = match setup::provider(&resolved, &mut |e| progress.show(&e)).await {
        Ok(p) => p,
        Err(setup::SetupError::Usage(e)) => return usage(e),
        Err(setup::SetupError::Failed(e)) => return Exit::failed(e),
    };
    match setup::utility_provider(&resolved) {
        Ok(_) => {}
        Err(setup::SetupError::Usage(e)) => return usage(e),
        Err(setup::SetupError::Failed(e)) => return Exit::failed(e),
    }
    let session = match open_session(&resolved, args.resume.as_deref()) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let ctx = match setup::tool_context(&resolved) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    if let Some(notice) = ctx
        .sandbox
        .unisolated_notice(&config::user_config_path(&resolved.home))
    {
        // Once, at start: on stderr whatever the output mode, and as an event.
        if args.json {
            eprintln!("codesmith: {notice}");
        }
        progress.show(&Event::Notice { message: notice });
    }
    if resolved.approval == codesmith_policy::ApprovalMode::Suggest {
        // `suggest` asks before each write, and nobody answers here (it was the name of
        // today's `auto-edit` before the ladder had a rung that asks before writes).
        progress.show(&Event::Notice {
            message: "approval mode suggest asks before each file write and nobody can answer \
                      in exec, so writes are refused; --approval auto-edit lets them run (the \
                      former meaning of suggest)"
                .to_string(),
        });
    }
    let mcp = setup::mcp_servers(&resolved).await;
    // The language servers end with the session: `shutdown`, `exit`, then killed.
    let lsp = ctx.lsp.clone();
    let engine = setup::engine_with_tools(
        &resolved,
        provider,
        Arc::new(ctx),
        Arc::new(NoApprover),
        session,
        &mcp,
        only_tools.as_deref(),
        &mut |e| progress.show(&e),
    );
    for warning in mcp.notices() {
        progress.show(&Event::Notice { message: warning });
    }
    progress.show(&Event::SessionStarted {
        session_id: engine.session().id().to_string(),
        provider: setup::provider_label(resolved.provider).to_string(),
        model: resolved.model.clone(),
        workspace: resolved.workspace.display().to_string(),
    });
    // SIGINT, SIGTERM and SIGHUP interrupt the task (crate::shutdown): running commands are
    // killed with their whole trees, every tool call gets a result, the transcript is
    // closed and synced, and the exit status is 128 + the signal (130, 143, 129).
    let shutdown = match Shutdown::listen(StopSignal::ALL) {
        Ok(s) => s,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot listen for signals: {e}")),
    };
    // Nobody is present: requests that need a person are refused, saying how to allow them.
    // `/mcp__SERVER__PROMPT args` runs an MCP server's prompt: the task is its text.
    let task = match mcp.render_prompt(&args.task).await {
        None => args.task.clone(),
        Some(Ok(rendered)) => {
            // What is sent in the user's name is shown.
            progress.show(&Event::Notice {
                message: rendered.preview,
            });
            rendered.text
        }
        Some(Err(e)) => {
            mcp.close().await;
            return usage(anyhow::anyhow!(e));
        }
    };
    let mut handle = engine.spawn(Approvals::Refused);
    if let Err(e) = handle
        .submit(Op::UserTask {
            text: task,
            images: images.into_iter().map(|f| f.part).collect(),
        })
        .await
    {
        return Exit::failed(e.into());
    }
    let stop = shutdown.token();
    let mut interrupted = false;
    let mut finished = None;
    // How the last model round ended: an answer cut at the output-token limit is not a
    // finished task, even though the engine ends it there.
    let mut last_stop = None;
    // What the MCP servers report (progress, tool-list changes, warnings) is shown as it
    // comes, between the engine's events.
    let mut mcp_events = mcp.take_events();
    let mut plan = None;
    loop {
        let event = tokio::select! {
            event = handle.next_event() => event,
            Some(e) = async {
                match mcp_events.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(event) = setup::mcp_event(e) {
                    progress.show(&event);
                }
                continue;
            }
            () = stop.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = handle.submit(Op::Interrupt).await;
                continue;
            }
        };
        match event {
            Some(event @ Event::TaskFinished { .. }) => {
                finished = Some(event);
                break;
            }
            Some(event) => {
                if let Event::TurnCompleted { stop_reason, .. } = &event {
                    last_stop = Some(stop_reason.clone());
                }
                if let Event::PlanUpdated { plan: steps, .. } = &event {
                    plan = Some(steps.clone());
                }
                progress.show(&event);
            }
            None => break,
        }
    }
    let _ = handle.shutdown().await;
    mcp.close().await;
    if let Some(lsp) = lsp {
        lsp.shutdown().await;
    }
    let status = match &finished {
        Some(Event::TaskFinished { status, .. }) => Some(*status),
        _ => None,
    };
    if let (Some(signal), Some(TaskStatus::Cancelled)) = (shutdown.caught(), status) {
        let message = "running commands were killed and the turn was closed in the session; \
                       continue with --resume";
        if args.json {
            progress.show(&Event::Error {
                message: format!("interrupted by {}: {message}", signal.name()),
            });
        }
        if let Some(event) = &finished {
            progress.show(event);
        }
        // The streamed answer's open line ends before the interruption is reported.
        progress.end_answer();
        return shutdown::exit(signal, message);
    }
    // In plan mode the plan is the answer: written after the model's last words.
    if resolved.approval == codesmith_policy::ApprovalMode::ReadOnly
        && status == Some(TaskStatus::Completed)
        && let Some(plan) = plan.filter(|p| !p.is_empty())
    {
        progress.write_plan(&plan);
    }
    // The last event line: how the task ended (plain progress shows nothing for it).
    if let Some(event) = &finished {
        progress.show(event);
    }
    if status == Some(TaskStatus::Completed) && last_stop == Some(StopReason::MaxTokens) {
        progress.end_answer();
        let message = incomplete_message(&resolved.home);
        if args.json {
            progress.show(&Event::Error {
                message: message.clone(),
            });
        }
        return Exit::failed(anyhow::anyhow!(message));
    }
    finish(status, &mut progress)
}

/// What `exec` says when the model's last answer was cut at the output-token limit.
fn incomplete_message(home: &std::path::Path) -> String {
    let config = config::user_config_path(home);
    format!(
        "incomplete: the output-token limit was reached; raise it with the top-level key \
         `max_output_tokens = N` in {}, or continue with --resume",
        config.display()
    )
}

fn open_session(resolved: &config::Settings, resume: Option<&str>) -> Result<Session> {
    let provider = setup::provider_label(resolved.provider);
    Ok(match resume {
        Some(id) => Session::resume(&resolved.home, id)?,
        None => Session::create(
            &resolved.home,
            &resolved.workspace,
            provider,
            &resolved.model,
        )?,
    })
}

/// The exit status for how the task ended (`None`: the engine stopped without saying).
fn finish(status: Option<TaskStatus>, progress: &mut Progress) -> Exit {
    // The answer was streamed as it came; only its last line may still be open.
    progress.end_answer();
    match status {
        Some(TaskStatus::Completed) => Exit::Ok,
        Some(TaskStatus::Interrupted) => Exit::failed(anyhow::anyhow!(
            "the model's answer was cut off; the partial answer is above"
        )),
        // The engine's `error` event said what went wrong and what to do.
        Some(
            TaskStatus::TurnLimit
            | TaskStatus::TooManyFailures
            | TaskStatus::Cancelled
            | TaskStatus::Failed,
        ) => Exit::Failed(None),
        None => Exit::failed(anyhow::anyhow!(
            "the engine stopped before the task finished; the session is saved, continue with --resume"
        )),
    }
}

/// A resumed session keeps its provider and model unless the flags name others.
fn keep_resumed_model(args: &mut ExecArgs) {
    let (Some(id), Ok(home)) = (args.resume.as_deref(), config::home_dir()) else {
        return;
    };
    let Some(codesmith_engine::session::SessionMeta {
        provider, model, ..
    }) = codesmith_engine::session::SessionCatalog::new(&home).meta(id)
    else {
        return;
    };
    if args.model.provider.is_none() {
        args.model.provider =
            <crate::args::ProviderName as clap::ValueEnum>::from_str(&provider, true).ok();
    }
    let same_provider = args.model.provider.map(setup::provider_label) == Some(provider.as_str());
    if args.model.model.is_none() && same_provider {
        args.model.model = Some(model);
    }
}
