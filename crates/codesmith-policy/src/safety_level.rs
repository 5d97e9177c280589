//! The four command safety levels.

use serde::Serialize;

/// How much harm a shell command can do, ordered from least to most.
///
/// The level of a compound command is the maximum over its parts
/// (`Ord` is derived, so use `.max()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyLevel {
    /// Reads only: listing, searching, printing, status queries.
    Safe,
    /// Writes, but only inside the workspace (builds, tests, edits, commits).
    WorkspaceSafe,
    /// Ask a person first: unknown commands, network access, writes outside
    /// the workspace, destructive history operations, elevated privileges.
    /// Serialized `requires_approval`, as before.
    #[serde(rename = "requires_approval")]
    Ask,
    /// Refused outright: the five catastrophic literals and anything piped
    /// into a shell interpreter.
    Dangerous,
}

impl SafetyLevel {
    /// The snake_case name used in JSON reports: `safe`, `workspace_safe`,
    /// `requires_approval` or `dangerous`.
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyLevel::Safe => "safe",
            SafetyLevel::WorkspaceSafe => "workspace_safe",
            SafetyLevel::Ask => "requires_approval",
            SafetyLevel::Dangerous => "dangerous",
        }
    }
}

impl std::fmt::Display for SafetyLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::SafetyLevel::*;

    #[test]
    fn levels_are_ordered_and_combine_by_max() {
        assert!(Safe < WorkspaceSafe && WorkspaceSafe < Ask);
        assert!(Ask < Dangerous);
        assert_eq!(
            [Safe, Dangerous, WorkspaceSafe].into_iter().max(),
            Some(Dangerous)
        );
        assert_eq!(Ask.as_str(), "requires_approval");
    }

    #[test]
    fn serialized_names_match_as_str() {
        for level in [Safe, WorkspaceSafe, Ask, Dangerous] {
            assert_eq!(
                serde_json::to_value(level).ok(),
                Some(serde_json::Value::from(level.as_str()))
            );
        }
    }
}
