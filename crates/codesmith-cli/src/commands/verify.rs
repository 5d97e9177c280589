//! `codesmith verify stats [--json]`: the claim verifier's ledger, read back.

use codesmith_engine::verify::VerdictStats;
use codesmith_engine::verify::ledger::{ledger_path, read_stats};
use serde_json::json;

use crate::args::VerifyCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith verify ...`.
pub(crate) fn run(command: VerifyCommand) -> Exit {
    match command {
        VerifyCommand::Stats(args) => stats(args.json),
    }
}

fn stats(json: bool) -> Exit {
    let home = match config::home_dir() {
        Ok(h) => h,
        Err(e) => return usage(e),
    };
    let stats = match read_stats(&home) {
        Ok(s) => s,
        Err(e) => {
            return Exit::failed(anyhow::anyhow!(
                "cannot read the verdict ledger {}: {e}",
                ledger_path(&home).display()
            ));
        }
    };
    if json {
        println!(
            "{}",
            codesmith_policy::json_terminal_safe(&stats_json(&stats).to_string())
        );
    } else {
        // Commands in the ledger came from a model: shown, never acted on.
        print!("{}", codesmith_policy::terminal_safe(&stats_text(&stats)));
    }
    if stats.skipped_lines > 0 {
        eprintln!(
            "codesmith: skipped {} malformed line(s) in {}",
            stats.skipped_lines,
            ledger_path(&home).display()
        );
    }
    Exit::Ok
}

/// The `--json` object: the four counts and the rate (null when undefined).
pub(crate) fn stats_json(stats: &VerdictStats) -> serde_json::Value {
    json!({
        "verified_pass": stats.verified_pass,
        "verified_fail": stats.verified_fail,
        "verify_error": stats.verify_error,
        "unsubstantiated": stats.unsubstantiated,
        "claim_match_rate": stats.claim_match_rate(),
    })
}

/// The text report: one line per verdict, then the rate.
pub(crate) fn stats_text(stats: &VerdictStats) -> String {
    let rate = match stats.claim_match_rate() {
        Some(r) => format!(
            "{:.1}% ({} of {} replayed claims held)",
            r * 100.0,
            stats.verified_pass,
            stats.verified_pass + stats.verified_fail
        ),
        None => "none (no claim has been checked by a replay yet)".to_string(),
    };
    format!(
        "verified_pass    {}\nverified_fail    {}\nverify_error     {}\nunsubstantiated  {}\nclaim_match_rate {rate}\n",
        stats.verified_pass, stats.verified_fail, stats.verify_error, stats.unsubstantiated
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_five_keys_and_null_rate() {
        let v = stats_json(&VerdictStats::default());
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 5);
        for k in [
            "verified_pass",
            "verified_fail",
            "verify_error",
            "unsubstantiated",
            "claim_match_rate",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert!(v["claim_match_rate"].is_null());
    }

    #[test]
    fn the_rate_is_pass_over_checked() {
        let stats = VerdictStats {
            verified_pass: 3,
            verified_fail: 1,
            verify_error: 5,
            unsubstantiated: 7,
            ..VerdictStats::default()
        };
        assert_eq!(stats_json(&stats)["claim_match_rate"], 0.75);
        let text = stats_text(&stats);
        assert!(
            text.contains("75.0%") && text.contains("unsubstantiated  7"),
            "{text}"
        );
    }
}
