//! The verdict ledger: `$CODESMITH_HOME/evolution/verdicts.jsonl`, one JSON
//! object per verdict.
//!
//! Writing is best effort: a failure is logged on stderr and swallowed, so
//! the ledger never breaks the engine. Reading skips lines that do not parse
//! (a line cut short by a crash must not hide the rest).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One ledger line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// RFC 3339 time in UTC, whole seconds.
    pub timestamp: String,
    /// `verified_pass`, `verified_fail`, `verify_error` or `unsubstantiated`.
    pub verdict: String,
    /// The claim sentence, verbatim.
    pub claim: String,
    /// The replayed command, when there was one.
    pub command: Option<String>,
    /// The replay's exit code, when it ran to completion.
    pub exit_code: Option<i32>,
    /// The model that made the claim.
    pub model: String,
}

/// Counts per verdict read from the ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerdictStats {
    /// Claims the replay confirmed (exit code 0).
    pub verified_pass: u64,
    /// Claims the replay contradicted (non-zero exit code).
    pub verified_fail: u64,
    /// Replays that could not run (timeout, denial, tool unavailable).
    pub verify_error: u64,
    /// Claims with no verification command behind them.
    pub unsubstantiated: u64,
    /// Lines that did not parse or named an unknown verdict (skipped).
    #[serde(skip)]
    pub skipped_lines: u64,
}

impl VerdictStats {
    /// verified_pass / (verified_pass + verified_fail), in 0.0..=1.0;
    /// `None` when no claim was checked by a replay. Errors and
    /// unsubstantiated claims are outside the denominator on purpose: they
    /// are a different failure than a claim the world contradicted.
    pub fn claim_match_rate(&self) -> Option<f64> {
        let checked = self.verified_pass + self.verified_fail;
        (checked > 0).then(|| self.verified_pass as f64 / checked as f64)
    }

    /// All verdicts counted.
    pub fn total(&self) -> u64 {
        self.verified_pass + self.verified_fail + self.verify_error + self.unsubstantiated
    }

    fn count(&mut self, verdict: &str) {
        match verdict {
            "verified_pass" => self.verified_pass += 1,
            "verified_fail" => self.verified_fail += 1,
            "verify_error" => self.verify_error += 1,
            "unsubstantiated" => self.unsubstantiated += 1,
            _ => self.skipped_lines += 1,
        }
    }
}

/// The ledger file under `home` (`$CODESMITH_HOME`).
pub fn ledger_path(home: &Path) -> PathBuf {
    home.join("evolution").join("verdicts.jsonl")
}

/// Appends `entry` as one line. Never fails the task: a write error comes back as the
/// notice that says what could not be recorded (the caller shows it as an event; a
/// library never writes to the terminal, which the full-screen UI owns).
pub fn append(home: &Path, entry: &LedgerEntry) -> Option<String> {
    try_append(home, entry).err().map(|e| {
        format!(
            "could not record the verdict in {}: {e}; check that the directory is writable",
            ledger_path(home).display()
        )
    })
}

fn try_append(home: &Path, entry: &LedgerEntry) -> std::io::Result<()> {
    let path = ledger_path(home);
    if let Some(dir) = path.parent() {
        codesmith_tools::private::create_dir_all(dir)?;
    }
    let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut file = codesmith_tools::private::open_options()
        .create(true)
        .append(true)
        .open(&path)?;
    // One write call per line: concurrent sessions interleave whole lines.
    file.write_all(line.as_bytes())
}

/// Reads every well-formed entry of the ledger under `home`; malformed
/// lines are skipped. A missing ledger is empty.
///
/// # Errors
/// Any I/O error other than the file not existing.
pub fn read_entries(home: &Path) -> std::io::Result<(Vec<LedgerEntry>, u64)> {
    let text = match std::fs::read(ledger_path(home)) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let mut entries = Vec::new();
    let mut skipped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<LedgerEntry>(line) {
            Ok(entry) => entries.push(entry),
            Err(_) => skipped += 1,
        }
    }
    Ok((entries, skipped))
}

/// Counts per verdict over the ledger under `home`.
///
/// # Errors
/// Any I/O error other than the file not existing.
pub fn read_stats(home: &Path) -> std::io::Result<VerdictStats> {
    let (entries, skipped) = read_entries(home)?;
    let mut stats = VerdictStats {
        skipped_lines: skipped,
        ..VerdictStats::default()
    };
    for entry in &entries {
        stats.count(&entry.verdict);
    }
    Ok(stats)
}

/// The current time as RFC 3339 UTC with whole seconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(verdict: &str) -> LedgerEntry {
        LedgerEntry {
            timestamp: now_rfc3339(),
            verdict: verdict.into(),
            claim: "all tests pass".into(),
            command: Some("cargo test".into()),
            exit_code: Some(0),
            model: "m".into(),
        }
    }

    #[test]
    fn entries_round_trip_and_count() {
        let home = tempfile::tempdir().unwrap();
        for v in [
            "verified_pass",
            "verified_pass",
            "verified_fail",
            "verify_error",
            "unsubstantiated",
        ] {
            append(home.path(), &entry(v));
        }
        let stats = read_stats(home.path()).unwrap();
        assert_eq!(
            (
                stats.verified_pass,
                stats.verified_fail,
                stats.verify_error,
                stats.unsubstantiated
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(stats.total(), 5);
        let rate = stats.claim_match_rate().unwrap();
        assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let home = tempfile::tempdir().unwrap();
        append(home.path(), &entry("verified_fail"));
        let path = ledger_path(home.path());
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"timestamp\": \"cut sh\n\nnot json\n");
        std::fs::write(&path, text).unwrap();
        append(home.path(), &entry("verified_pass"));
        let stats = read_stats(home.path()).unwrap();
        assert_eq!((stats.verified_pass, stats.verified_fail), (1, 1));
        assert_eq!(stats.skipped_lines, 2);
        assert_eq!(stats.claim_match_rate(), Some(0.5));
    }

    #[test]
    fn no_checked_claims_has_no_rate() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(read_stats(home.path()).unwrap(), VerdictStats::default());
        append(home.path(), &entry("unsubstantiated"));
        append(home.path(), &entry("verify_error"));
        assert_eq!(read_stats(home.path()).unwrap().claim_match_rate(), None);
    }

    #[test]
    fn a_write_failure_is_swallowed() {
        let home = tempfile::tempdir().unwrap();
        // `evolution` is a file, so the directory cannot be created.
        std::fs::write(home.path().join("evolution"), "x").unwrap();
        append(home.path(), &entry("verified_pass"));
        // Reading reports the broken layout instead of pretending it is empty.
        assert!(read_stats(home.path()).is_err());
    }
}
