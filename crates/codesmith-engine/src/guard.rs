//! The loop guard: stops a model that
//! repeats itself or keeps failing.
//!
//! - The third call in a session with the same tool name and identical
//!   (canonical) arguments is blocked with an explanation.
//! - After 3 consecutive failed calls, the next tool result carries a warning.
//! - After 8 consecutive failures the turn ends with a clear message.

use std::collections::HashMap;

use serde_json::Value;

/// Identical calls allowed before the next one is blocked.
pub(crate) const MAX_IDENTICAL_CALLS: u32 = 2;
/// Consecutive failures after which results carry a warning.
pub(crate) const WARN_AFTER_FAILURES: u32 = 3;
/// Consecutive failures that end the turn.
pub(crate) const STOP_AFTER_FAILURES: u32 = 8;

/// Per-session loop-guard state.
#[derive(Debug, Default)]
pub(crate) struct LoopGuard {
    seen: HashMap<String, u32>,
    consecutive_failures: u32,
}

/// What the guard says about a call about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuardVerdict {
    /// Run it.
    Proceed,
    /// Do not run it; tell the model why.
    Blocked(String),
}

impl LoopGuard {
    /// Records an attempt of `name` with `args` and says whether it may run.
    pub(crate) fn check(&mut self, name: &str, args: &Value) -> GuardVerdict {
        let key = format!("{name}\u{0}{}", canonical(args));
        let count = self.seen.entry(key).or_default();
        *count += 1;
        if *count > MAX_IDENTICAL_CALLS {
            return GuardVerdict::Blocked(format!(
                "Blocked: this is call number {count} of `{name}` with identical arguments in this session, \
                 and repeating it will not change the result. Use what the earlier results said, change the \
                 arguments, or try a different approach."
            ));
        }
        GuardVerdict::Proceed
    }

    /// Records the outcome of a call that ran (or was blocked). Returns a
    /// warning to append to this result once failures pile up.
    pub(crate) fn record(&mut self, ok: bool) -> Option<String> {
        if ok {
            self.consecutive_failures = 0;
            return None;
        }
        self.consecutive_failures += 1;
        (self.consecutive_failures >= WARN_AFTER_FAILURES).then(|| {
            format!(
                "Warning: {} tool calls in a row have failed. Stop and re-read the last errors and hints; \
                 change approach instead of retrying the same thing.",
                self.consecutive_failures
            )
        })
    }

    /// True once the turn must end because of consecutive failures.
    pub(crate) fn must_stop(&self) -> bool {
        self.consecutive_failures >= STOP_AFTER_FAILURES
    }
}

/// Arguments with object keys sorted, so `{"a":1,"b":2}` equals `{"b":2,"a":1}`.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_third_identical_call_is_blocked() {
        let mut g = LoopGuard::default();
        assert_eq!(
            g.check("read_file", &json!({"path": "a", "max_lines": 5})),
            GuardVerdict::Proceed
        );
        assert_eq!(
            g.check("read_file", &json!({"max_lines": 5, "path": "a"})),
            GuardVerdict::Proceed
        );
        assert_eq!(
            g.check("read_file", &json!({"path": "b"})),
            GuardVerdict::Proceed
        );
        assert!(matches!(
            g.check("read_file", &json!({"path": "a", "max_lines": 5})),
            GuardVerdict::Blocked(_)
        ));
    }

    #[test]
    fn failures_warn_at_three_and_stop_at_eight() {
        let mut g = LoopGuard::default();
        assert!(g.record(false).is_none());
        assert!(g.record(false).is_none());
        assert!(g.record(false).is_some());
        assert!(g.record(true).is_none());
        for _ in 0..7 {
            g.record(false);
        }
        assert!(!g.must_stop());
        g.record(false);
        assert!(g.must_stop());
    }
}
