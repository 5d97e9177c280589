//! Findings and how they are printed: grouped text for a person, one JSON object for CI.
//!
//! # JSON schema (`codesmith doctor --json`, schema version 1)
//!
//! One object on stdout:
//!
//! ```text
//! {
//!   "schema": 1,                          // integer; bumped on incompatible change
//!   "version": "0.1.0",                   // string; codesmith version
//!   "status": "ok" | "warn" | "error",    // string; the worst finding (skip counts as ok)
//!   "counts": {"ok": 3, "warn": 1, "error": 0, "skip": 2},   // integers
//!   "findings": [
//!     {
//!       "id": "config.user",              // string; stable dotted id, `group.name`
//!       "group": "config",                // string; the part before the first dot
//!       "status": "ok" | "warn" | "error" | "skip",
//!       "summary": "...",                 // string; what was found
//!       "hint": "..." | null              // string or null; the concrete next step
//!     }
//!   ]
//! }
//! ```
//!
//! Findings keep the order the checks ran in. `--analyze` never changes this object.

use serde::Serialize;
use serde_json::{Value, json};

/// JSON schema version.
pub(crate) const SCHEMA_VERSION: u64 = 1;

/// How a finding came out. Ordered: `Ok < Skip < Warn < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Works.
    Ok,
    /// Not checked (nothing to check, or it does not apply here).
    Skip,
    /// Works, but something is missing or risky.
    Warn,
    /// Broken: something will fail.
    Error,
}

impl Status {
    /// Lower-case name, as in the JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skip => "skip",
            Status::Warn => "warn",
            Status::Error => "error",
        }
    }
}

/// One result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// Stable dotted id (`keys.openai`).
    pub id: String,
    /// Outcome.
    pub status: Status,
    /// What was found (never a secret).
    pub summary: String,
    /// The concrete next step, when there is one.
    pub hint: Option<String>,
}

impl Finding {
    /// A finding without a hint.
    pub(crate) fn new(id: &str, status: Status, summary: impl Into<String>) -> Self {
        Finding {
            id: id.to_string(),
            status,
            summary: summary.into(),
            hint: None,
        }
    }

    /// The same finding with `hint`.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The group: the id up to the first dot.
    pub(crate) fn group(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }
}

/// The worst status among `findings` (`Ok` when empty); `Skip` counts as `Ok`.
pub(crate) fn overall(findings: &[Finding]) -> Status {
    match findings.iter().map(|f| f.status).max() {
        Some(Status::Skip) | None => Status::Ok,
        Some(s) => s,
    }
}

/// Exit code: 1 when any finding is an error, else 0.
pub(crate) fn exit_code(findings: &[Finding]) -> u8 {
    u8::from(findings.iter().any(|f| f.status == Status::Error))
}

/// The JSON report (see the module docs for the schema).
pub(crate) fn to_json(findings: &[Finding]) -> Value {
    let count = |s: Status| findings.iter().filter(|f| f.status == s).count();
    json!({
        "schema": SCHEMA_VERSION,
        "version": env!("CARGO_PKG_VERSION"),
        "status": overall(findings).as_str(),
        "counts": {
            "ok": count(Status::Ok),
            "warn": count(Status::Warn),
            "error": count(Status::Error),
            "skip": count(Status::Skip),
        },
        "findings": findings.iter().map(|f| json!({
            "id": f.id,
            "group": f.group(),
            "status": f.status.as_str(),
            "summary": f.summary,
            "hint": f.hint,
        })).collect::<Vec<_>>(),
    })
}

fn group_title(group: &str) -> &str {
    match group {
        "version" => "Version",
        "config" => "Configuration",
        "keys" => "API keys",
        "network" => "Network",
        "model" => "Embedded model",
        "tools" => "External tools",
        "sandbox" => "Sandbox",
        "mcp" => "MCP servers",
        other => other,
    }
}

/// The text report: findings grouped under headings in first-seen order, each as
/// `  [status] summary` plus an indented `-> hint`, and a closing tally line.
pub(crate) fn to_text(findings: &[Finding]) -> String {
    let mut groups: Vec<&str> = Vec::new();
    for f in findings {
        if !groups.contains(&f.group()) {
            groups.push(f.group());
        }
    }
    let mut out = String::new();
    for g in groups {
        out.push_str(group_title(g));
        out.push('\n');
        for f in findings.iter().filter(|f| f.group() == g) {
            out.push_str(&format!("  [{:<5}] {}\n", f.status.as_str(), f.summary));
            if let Some(h) = &f.hint {
                out.push_str(&format!("          -> {h}\n"));
            }
        }
    }
    let n = |s: Status| findings.iter().filter(|f| f.status == s).count();
    out.push_str(&format!(
        "\nAll checks complete: {} ok, {} warning(s), {} error(s), {} skipped.\n",
        n(Status::Ok),
        n(Status::Warn),
        n(Status::Error),
        n(Status::Skip)
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> Vec<Finding> {
        vec![
            Finding::new("version", Status::Ok, "codesmith 0.1.0"),
            Finding::new("keys.openai", Status::Warn, "no key").hint("set OPENAI_API_KEY"),
            Finding::new("network.endpoint", Status::Skip, "no remote provider"),
        ]
    }

    /// The `--json` schema: keys and value types CI may rely on.
    #[test]
    fn json_schema_is_stable() {
        let v = to_json(&sample());
        let obj = v.as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["counts", "findings", "schema", "status", "version"]);
        assert!(v["schema"].is_u64());
        assert!(v["version"].is_string());
        assert!(["ok", "warn", "error"].contains(&v["status"].as_str().unwrap()));
        for k in ["ok", "warn", "error", "skip"] {
            assert!(v["counts"][k].is_u64(), "{k}");
        }
        assert_eq!(v["counts"].as_object().unwrap().len(), 4);
        for f in v["findings"].as_array().unwrap() {
            let mut fk: Vec<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
            fk.sort();
            assert_eq!(fk, ["group", "hint", "id", "status", "summary"]);
            assert!(f["id"].is_string() && f["group"].is_string() && f["summary"].is_string());
            assert!(["ok", "warn", "error", "skip"].contains(&f["status"].as_str().unwrap()));
            assert!(f["hint"].is_string() || f["hint"].is_null());
        }
        assert_eq!(v["status"], "warn");
    }

    #[test]
    fn exit_code_follows_errors_only() {
        let mut f = sample();
        assert_eq!(exit_code(&f), 0);
        f.push(Finding::new("config.user", Status::Error, "bad"));
        assert_eq!(exit_code(&f), 1);
        assert_eq!(overall(&f), Status::Error);
    }

    #[test]
    fn text_groups_and_hints() {
        let t = to_text(&sample());
        assert!(
            t.starts_with("Version\n  [ok   ] codesmith 0.1.0\nAPI keys\n"),
            "{t}"
        );
        assert!(t.contains("          -> set OPENAI_API_KEY\n"), "{t}");
        assert!(t.contains("All checks complete: 1 ok, 1 warning(s), 0 error(s), 1 skipped."));
    }
}
