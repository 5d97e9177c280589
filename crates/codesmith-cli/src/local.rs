//! The embedded local model as the `local` provider.

use std::path::PathBuf;
use std::sync::Arc;

use codesmith_protocol::Event;
use codesmith_providers::Provider;

use crate::config::Resolved;
use crate::setup::SetupError;

/// Loads the local provider: the default model (fetched and cached on first
/// use) or the GGUF file named by `--model`.
pub async fn provider(
    resolved: &Resolved,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<Arc<dyn Provider>, SetupError> {
    let path = if codesmith_local::is_default_model(&resolved.model) {
        let home = resolved.home.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let fetch = tokio::task::spawn_blocking(move || {
            let mut last_step = None;
            codesmith_local::ensure_model(&home, &mut |p| {
                let step = quarter_step(&p);
                if step.is_none() || step != last_step {
                    last_step = step;
                    let _ = tx.send(crate::commands::model::describe(&p));
                }
            })
        });
        while let Some(line) = rx.recv().await {
            on_event(Event::Notice { message: line });
        }
        match fetch.await {
            Ok(Ok(path)) => path,
            Ok(Err(e)) => {
                return Err(SetupError::Failed(anyhow::anyhow!(
                    "cannot prepare the embedded model: {e}"
                )));
            }
            Err(e) => {
                return Err(SetupError::Failed(anyhow::anyhow!(
                    "the model fetch task failed: {e}"
                )));
            }
        }
    } else {
        let path = PathBuf::from(&resolved.model);
        if !path.is_file() {
            return Err(SetupError::Usage(anyhow::anyhow!(
                "--model {:?} is not a GGUF file; for the local provider name a .gguf path, or omit --model to use \
                 the embedded default",
                resolved.model
            )));
        }
        path
    };
    let provider = codesmith_local::LocalProvider::new(resolved.home.clone());
    let loader = provider.clone();
    let loaded = tokio::task::spawn_blocking(move || loader.preload(&path.to_string_lossy())).await;
    match loaded {
        Ok(Ok(())) => Ok(Arc::new(provider)),
        Ok(Err(e)) => Err(SetupError::Failed(anyhow::anyhow!(
            "cannot load the local model: {e}"
        ))),
        Err(e) => Err(SetupError::Failed(anyhow::anyhow!(
            "the model load task failed: {e}"
        ))),
    }
}

/// For long steps (extraction, conversion), which quarter of the work `p`
/// reports, so only one notice per quarter is shown; `None` for the others.
fn quarter_step(p: &codesmith_local::FetchProgress) -> Option<(u8, u64)> {
    use codesmith_local::FetchProgress as P;
    let quarter = |done: u64, total: u64| done.saturating_mul(4).checked_div(total).unwrap_or(4);
    match p {
        P::Extracting { done, total } => Some((0, quarter(*done, *total))),
        P::Converting { done, total } => Some((1, quarter(*done as u64, *total as u64))),
        _ => None,
    }
}
