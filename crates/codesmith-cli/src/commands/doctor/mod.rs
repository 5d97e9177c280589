//! `codesmith doctor`: deterministic self-checks, each finding with a status and a
//! concrete next step (seed 002, "Genome Replication"), plus an optional advisory
//! analysis by the configured model (`--analyze`, seed 002, "From Experience to the
//! Closed Loop") that only explains and never runs anything.
//!
//! Exit code: 1 when any finding is an error, else 0. `--json` prints the object
//! documented in [`report`]; the analysis never changes it (in JSON mode it goes to stderr).

pub mod advisory;
pub mod analyze;
pub mod checks;
pub mod net;
pub mod probe;
pub mod report;

use std::process::ExitCode;

use crate::args::{DoctorArgs, ModelArgs, ProviderName};
use crate::config;
use crate::exit::Exit;
use checks::Inputs;
use report::{Finding, Status};

/// Runs `codesmith doctor`.
pub async fn run(args: DoctorArgs) -> Exit {
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

/// Runs every check, in a fixed order.
pub async fn collect(args: &DoctorArgs) -> Vec<Finding> {
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
    out.push(checks::project_config(ws));
    out.push(checks::policy(&home, ws));
    out.push(checks::sources(&home, ws));
    let inputs = inputs(&home, ws, file, &mut out);
    out.extend(checks::keys(&inputs));
    out.extend(checks::config_mode(&home, inputs.file.as_ref()));
    out.push(endpoint(&inputs).await);
    out.push(checks::embedded_model(&inputs).await);
    out.extend(checks::tools(&home).await);
    out.extend(checks::sandbox(&inputs.sandbox));
    out.extend(checks::mcp(inputs.file.as_ref(), ws).await);
    out
}

/// Resolves provider, model and sandbox as `exec` would; a resolution error becomes a
/// `config.resolve` finding and the defaults are checked instead.
fn inputs(
    home: &std::path::Path,
    workspace: Option<&std::path::Path>,
    file: Option<config::FileConfig>,
    out: &mut Vec<Finding>,
) -> Inputs {
    let none = ModelArgs {
        provider: None,
        model: None,
        base_url: None,
        approval: None,
    };
    let resolved = if file.is_some() && workspace.is_some() {
        Some(config::resolve(workspace, &none, None))
    } else {
        None
    };
    match resolved {
        Some(Ok(r)) => {
            // r.warnings repeat what config.project and config.policy already report.
            Inputs {
                home: home.to_path_buf(),
                file,
                provider: r.provider,
                model: r.model,
                base_url: r.base_url,
                sandbox: r.sandbox,
            }
        }
        other => {
            if let Some(Err(e)) = other {
                out.push(
                    Finding::new("config.resolve", Status::Error, format!("{e:#}"))
                        .hint("fix the value named above in config.toml or the environment"),
                );
            }
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
