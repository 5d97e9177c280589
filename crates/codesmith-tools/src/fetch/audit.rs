//! The network audit log: one JSON line per outbound request in
//! `$CODESMITH_HOME/audit.log` (every outbound call leaves a line).

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use codesmith_policy::scrub_secrets;
use serde_json::json;
use url::Url;

/// File name of the audit log under the CodeSmith home.
pub const AUDIT_FILE: &str = "audit.log";

/// The audit log path for a home.
pub fn audit_path(home: &Path) -> PathBuf {
    home.join(AUDIT_FILE)
}

/// The URL as logged: user info dropped, secrets in the rest scrubbed.
fn loggable(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    scrub_secrets(u.as_str()).into_owned()
}

/// One outbound request about to be sent.
#[derive(Debug, Clone, Copy)]
pub struct AuditEntry<'a> {
    /// The tool sending it.
    pub tool: &'a str,
    /// HTTP method.
    pub method: &'a str,
    /// Target URL of this hop.
    pub url: &'a Url,
    /// The address the connection is pinned to.
    pub ip: IpAddr,
    /// Policy decision text (`allow` or `ask`).
    pub decision: &'a str,
    /// Redirect hop, 0 for the first request.
    pub hop: usize,
}

/// Appends one line:
/// `{"ts":SECS,"tool":..,"method":..,"url":..,"host":..,"ip":..,"decision":..,"hop":N}`.
/// Creates the home directory and file when missing.
pub fn append(home: &Path, entry: &AuditEntry<'_>) -> std::io::Result<()> {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let line = json!({
        "ts": ts,
        "tool": entry.tool,
        "method": entry.method,
        "url": loggable(entry.url),
        "host": entry.url.host_str().unwrap_or(""),
        "ip": entry.ip.to_string(),
        "decision": entry.decision,
        "hop": entry.hop,
    });
    crate::private::create_dir_all(home)?;
    let mut f = crate::private::open_options()
        .create(true)
        .append(true)
        .open(audit_path(home))?;
    // One write call per line so concurrent appenders do not interleave.
    f.write_all(format!("{line}\n").as_bytes())
}
