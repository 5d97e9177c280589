//! `codesmith doctor`: deterministic self-checks, each finding with a status and a
//! concrete next step, plus an optional advisory
//! analysis by the configured model (`--analyze`) that only explains and never runs
//! anything.
//!
//! Exit code: 1 when any finding is an error, else 0. `--json` prints the object
//! documented in [`report`]; the analysis never changes it (in JSON mode it goes to stderr).

pub(crate) mod advisory;
pub(crate) mod analyze;
pub(crate) mod checks;
pub(crate) mod net;
pub(crate) mod probe;
pub(crate) mod report;

use std::process::ExitCode;

use crate::args::{DoctorArgs, ProviderName};
use crate::config;
use crate::exit::Exit;
use checks::Inputs;
use report::{Finding, Status};

/// Runs `codesmith doctor`.
pub(crate) async fn run(args: DoctorArgs) -> Exit {
    let findings = collect(&args).await;
    if args.json {
        println!(
            "{}",
            codesmith_policy::json_terminal_safe(&report::to_json(&findings).to_string())
        );
    } else {
        // Findings quote endpoints' replies and file names: shown, never acted on.
        print!(
            "{}",
            codesmith_policy::terminal_safe(&report::to_text(&findings))
        );
    }
    if args.analyze {
        let advice = analyze::run(&findings, args.workspace.workspace.as_deref()).await;
        // The advice is a model's answer.
        let advice = codesmith_policy::terminal_safe(&advice);
        if args.json {
            eprint!("{advice}");
        } else {
            print!("{advice}");
        }
    }
    Exit::Code(ExitCode::from(report::exit_code(&findings)))
}

/// Runs every check, in a fixed order, on the configuration resolved as `exec` would
/// (without model flags).
pub(crate) async fn collect(args: &DoctorArgs) -> Vec<Finding> {
    collect_with(args, None).await
}

/// [`collect`] on `resolved` when given: the settings a running session resolved from its
/// own flags (the UI's `/doctor`), so its sources name the same origins `config show`
/// gives for those flags.
pub(crate) async fn collect_with(
    args: &DoctorArgs,
    resolved: Option<config::Settings>,
) -> Vec<Finding> {
    let mut out = vec![checks::version()];
    let home = match config::home_dir() {
        Ok(h) => h,
        Err(e) => {
            out.push(
                Finding::new("config.home", Status::Error, format!("{e:#}"))
                    .hint("export CODESMITH_HOME=$HOME/.codesmith"),
            );
            return out;
        }
    };
    let workspace = config::workspace(args.workspace.workspace.as_deref());
    let workspace = match workspace {
        Ok(w) => Some(w),
        Err(e) => {
            out.push(
                Finding::new("config.workspace", Status::Error, format!("{e:#}"))
                    .hint("pass an existing directory with --workspace"),
            );
            None
        }
    };
    let ws = workspace.as_deref();
    let (user, file) = checks::user_config(&home);
    out.push(user);
    out.push(checks::project_config(ws, &home));
    out.push(checks::policy(&home, ws));
    // Resolved once, as `exec` would; every later check reads these settings.
    let settings = match resolved {
        Some(settings) => Some(Ok(settings)),
        None => (file.is_some() && ws.is_some()).then(|| {
            config::resolve(config::Flags {
                workspace: args.workspace.workspace.as_deref(),
                model: &config::NO_MODEL_FLAGS,
                max_turns: None,
            })
        }),
    };
    let settings = match settings {
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            out.push(
                Finding::new("config.resolve", Status::Error, format!("{e:#}"))
                    .hint("fix the value named above in config.toml or the environment"),
            );
            None
        }
        None => None,
    };
    out.push(checks::sources(settings.as_ref()));
    let inputs = inputs(&home, file, settings.as_ref());
    out.extend(checks::keys(&inputs));
    out.extend(checks::config_mode(&home, inputs.file.as_ref()));
    out.push(endpoint(&inputs).await);
    out.push(checks::embedded_model(&inputs).await);
    // Programs are found outside the workspace (the current directory when none resolved).
    let probe_ws = ws
        .map(std::path::Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    out.extend(checks::tools(&home, &probe_ws).await);
    out.extend(checks::sandbox(&inputs.sandbox));
    out.extend(checks::mcp(settings.as_ref()).await);
    out
}

/// Provider, model and sandbox as `exec` would use them: from the resolved settings, or
/// (when they did not resolve) the defaults and the user file's sandbox.
fn inputs(
    home: &std::path::Path,
    file: Option<config::FileConfig>,
    settings: Option<&config::Settings>,
) -> Inputs {
    match settings {
        // The settings' warnings repeat what config.project and config.policy report.
        Some(s) => Inputs {
            home: home.to_path_buf(),
            file,
            provider: s.provider,
            model: s.model.clone(),
            base_url: s.base_url.clone(),
            sandbox: s.sandbox.clone(),
        },
        None => {
            let sandbox = file
                .as_ref()
                .and_then(|f| f.sandbox.clone())
                .unwrap_or_default();
            Inputs {
                home: home.to_path_buf(),
                file,
                provider: ProviderName::Local,
                model: codesmith_local::DEFAULT_MODEL.to_string(),
                base_url: None,
                sandbox,
            }
        }
    }
}

/// `network.endpoint`: probed only when a remote provider is configured.
async fn endpoint(inputs: &Inputs) -> Finding {
    let (label, default) = match inputs.provider {
        ProviderName::Openai => ("openai", "https://api.openai.com/v1"),
        ProviderName::Anthropic => ("anthropic", "https://api.anthropic.com"),
        ProviderName::Local => {
            return Finding::new(
                "network.endpoint",
                Status::Skip,
                "no remote provider configured (the provider is local)",
            );
        }
    };
    let url = inputs
        .base_url
        .clone()
        .unwrap_or_else(|| default.to_string());
    net::probe(label, &url).await
}
