//! `release`: whether a newer CodeSmith release exists.
//!
//! The release host is `CODESMITH_RELEASE_URL`, else the URL the install script recorded
//! in `$CODESMITH_HOME/release-url`. Its `LATEST` file (written by `scripts/release.sh`)
//! names the newest version. With no host known, or a host that does not answer within
//! [`super::net::STAGE_TIMEOUT`] (offline), the check is left out silently.

use std::path::Path;

use super::net::STAGE_TIMEOUT;
use super::report::{Finding, Status};

/// The environment variable naming the release host.
pub(crate) const RELEASE_URL_ENV: &str = "CODESMITH_RELEASE_URL";
/// Longest `LATEST` body read, in bytes.
const MAX_LATEST_BYTES: usize = 256;

/// The `release` finding, or nothing when no release host is known or reachable.
pub(crate) async fn check(home: &Path) -> Option<Finding> {
    let base = release_url(home)?;
    let latest = fetch_latest(&base).await?;
    let current = env!("CARGO_PKG_VERSION");
    Some(match (version_key(&latest), version_key(current)) {
        (Some(l), Some(c)) if l > c => Finding::new(
            "release",
            Status::Warn,
            format!("a newer release exists: {latest} (this is {current}), at {base}"),
        )
        .hint(format!(
            "install it, verified against its SHA-256 manifest: sh install.sh --base-url {base}"
        )),
        (Some(_), Some(_)) => Finding::new(
            "release",
            Status::Ok,
            format!("codesmith {current} is the latest release at {base}"),
        ),
        _ => Finding::new(
            "release",
            Status::Warn,
            format!("{base}/LATEST does not name a version ({latest:?})"),
        )
        .hint(format!(
            "check {RELEASE_URL_ENV} (or $CODESMITH_HOME/release-url): it should be the directory scripts/release.sh wrote"
        )),
    })
}

fn release_url(home: &Path) -> Option<String> {
    let from_env = std::env::var(RELEASE_URL_ENV).ok();
    let from_file = || std::fs::read_to_string(home.join("release-url")).ok();
    let url = from_env.or_else(from_file)?;
    let url = url.trim().trim_end_matches('/').to_string();
    (url.starts_with("https://") || url.starts_with("http://")).then_some(url)
}

async fn fetch_latest(base: &str) -> Option<String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(STAGE_TIMEOUT)
        .timeout(STAGE_TIMEOUT)
        .build()
        .ok()?;
    let response = client.get(format!("{base}/LATEST")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.bytes().await.ok()?;
    let body = body.get(..body.len().min(MAX_LATEST_BYTES))?;
    let line = String::from_utf8_lossy(body)
        .lines()
        .next()?
        .trim()
        .to_string();
    (!line.is_empty()).then_some(line)
}

/// `1.2.3` as comparable numbers; `None` when a part is not a number.
fn version_key(version: &str) -> Option<Vec<u64>> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    core.split('.').map(|part| part.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(version_key("0.10.0") > version_key("0.9.9"));
        assert!(version_key("v1.0.0") > version_key("0.99.0"));
        assert_eq!(version_key("0.1.0-rc1"), version_key("0.1.0"));
        assert_eq!(version_key("latest"), None);
    }
}
