//! The embedded local model as the `local` provider.

use std::path::PathBuf;
use std::sync::Arc;

use codesmith_protocol::{Event, EventSink};
use codesmith_providers::Provider;

use crate::config::Settings;
use crate::setup::SetupError;

/// Loads the local provider: the default model (fetched and cached on first
/// use) or the GGUF file named by `--model`.
pub(crate) async fn provider(
    resolved: &Settings,
    on_event: &mut EventSink<'_>,
) -> Result<Arc<dyn Provider>, SetupError> {
    let path = if codesmith_local::is_default_model(&resolved.model) {
        let home = resolved.home.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let fetch = tokio::task::spawn_blocking(move || {
            let mut lines = crate::commands::model::Lines::default();
            codesmith_local::ensure_model(&home, &mut |p| {
                if lines.worth_a_line(&p) {
                    let _ = tx.send(crate::commands::model::describe(&p));
                }
            })
        });
        while let Some(line) = rx.recv().await {
            on_event(Event::Notice { message: line });
        }
        match fetch.await {
            Ok(Ok(path)) => path,
            // The download error says itself what failed and the ways out.
            Ok(Err(e @ codesmith_local::LocalError::Download { .. })) => {
                return Err(SetupError::Failed(anyhow::anyhow!("{e}")));
            }
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
    let provider = codesmith_local::LocalProvider::new(resolved.home.clone())
        .with_workspace(resolved.workspace.clone());
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
