//! Tool-name repair.
//!
//! A misspelt tool name is resolved by a ladder, each rung demanding a unique
//! registered name: exact → lower-case → hyphens to underscores → CamelCase to
//! snake_case → without a `_tool` suffix → unique prefix. A name no rung
//! resolves gets the registered names within edit distance 3 as suggestions.

/// How a name was resolved, or the suggestions when it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameResolution {
    /// The name is registered as sent.
    Exact(String),
    /// The name was repaired to a registered one.
    Repaired {
        /// The name the model sent.
        from: String,
        /// The registered name it resolved to.
        to: String,
        /// The rung that resolved it.
        how: NameRepair,
    },
    /// No rung resolved it.
    Unknown {
        /// Registered names within edit distance 3, closest first.
        suggestions: Vec<String>,
    },
}

/// The rung of the ladder that resolved a misspelt name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRepair {
    /// Lower-cased (`READ_FILE`).
    Case,
    /// Hyphens, spaces or dots turned into underscores (`read-file`).
    Separators,
    /// CamelCase turned into snake_case (`ReadFile`).
    CamelCase,
    /// A `_tool` suffix dropped (`read_file_tool`).
    Suffix,
    /// Completed as the one registered name it starts (`list`).
    Prefix,
}

impl NameRepair {
    /// What the model is told when the call to `from` ran as `to`: the slip, that it
    /// was repaired, and to use the exact name (one clause, no final period).
    pub fn disclosure(self, from: &str, to: &str) -> String {
        let slip = match self {
            NameRepair::Case => "had the wrong case",
            NameRepair::Separators => {
                "used a hyphen, space or dot where the name has an underscore"
            }
            NameRepair::CamelCase => "was written in CamelCase",
            NameRepair::Suffix => "had a `_tool` suffix",
            NameRepair::Prefix => "was incomplete",
        };
        format!("tool name `{from}` {slip}; repaired to `{to}` — call tools by their exact names")
    }
}

/// The largest edit distance at which a registered name is suggested.
pub const SUGGESTION_DISTANCE: usize = 3;

/// Resolves `name` against the sorted `registered` names.
pub fn resolve_tool_name(name: &str, registered: &[&str]) -> NameResolution {
    if registered.contains(&name) {
        return NameResolution::Exact(name.to_string());
    }
    let lower = name.trim().to_lowercase();
    let underscored = lower.replace(['-', ' ', '.'], "_");
    let snake = camel_to_snake(name.trim()).replace(['-', ' ', '.'], "_");
    let candidates = [
        (lower.clone(), NameRepair::Case),
        (underscored.clone(), NameRepair::Separators),
        (snake.clone(), NameRepair::CamelCase),
        (strip_tool_suffix(&underscored), NameRepair::Suffix),
        (strip_tool_suffix(&snake), NameRepair::Suffix),
    ];
    for (candidate, how) in &candidates {
        if registered.contains(&candidate.as_str()) {
            return repaired(name, candidate, *how);
        }
    }
    if let Some(found) = unique_prefix(&strip_tool_suffix(&snake), registered) {
        return repaired(name, found, NameRepair::Prefix);
    }
    NameResolution::Unknown {
        suggestions: suggestions(&snake, registered),
    }
}

fn repaired(from: &str, to: &str, how: NameRepair) -> NameResolution {
    NameResolution::Repaired {
        from: from.to_string(),
        to: to.to_string(),
        how,
    }
}

fn strip_tool_suffix(name: &str) -> String {
    name.strip_suffix("_tool").unwrap_or(name).to_string()
}

/// `ReadFile` → `read_file`, `grepFiles` → `grep_files`; already-snake text is unchanged.
fn camel_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.extend(c.to_lowercase());
            prev_lower = false;
        } else {
            out.push(c);
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

/// The one registered name that starts with `stem` (at least 3 chars), if exactly one does.
fn unique_prefix<'a>(stem: &str, registered: &[&'a str]) -> Option<&'a str> {
    if stem.len() < 3 {
        return None;
    }
    let mut hits = registered.iter().filter(|r| r.starts_with(stem));
    match (hits.next(), hits.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn suggestions(name: &str, registered: &[&str]) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = registered
        .iter()
        .map(|r| (strsim::levenshtein(name, r), *r))
        .filter(|(d, _)| *d <= SUGGESTION_DISTANCE)
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, r)| r.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &[
        "edit_file",
        "exec_shell",
        "grep_files",
        "list_dir",
        "read_file",
        "write_file",
    ];

    fn to(name: &str) -> Option<String> {
        match resolve_tool_name(name, NAMES) {
            NameResolution::Exact(n) => Some(n),
            NameResolution::Repaired { to, .. } => Some(to),
            NameResolution::Unknown { .. } => None,
        }
    }

    #[test]
    fn each_rung_resolves() {
        assert_eq!(
            resolve_tool_name("read_file", NAMES),
            NameResolution::Exact("read_file".into())
        );
        assert_eq!(to("READ_FILE").as_deref(), Some("read_file"));
        assert_eq!(to("read-file").as_deref(), Some("read_file"));
        assert_eq!(to("ReadFile").as_deref(), Some("read_file"));
        assert_eq!(to("grepFiles").as_deref(), Some("grep_files"));
        assert_eq!(to("read_file_tool").as_deref(), Some("read_file"));
        assert_eq!(to("list").as_deref(), Some("list_dir"));
    }

    #[test]
    fn each_rung_is_named() {
        for (name, how) in [
            ("READ_FILE", NameRepair::Case),
            ("read-file", NameRepair::Separators),
            ("ReadFile", NameRepair::CamelCase),
            ("read_file_tool", NameRepair::Suffix),
            ("list", NameRepair::Prefix),
        ] {
            match resolve_tool_name(name, NAMES) {
                NameResolution::Repaired { how: got, .. } => assert_eq!(got, how, "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_ambiguous_prefix_is_not_guessed() {
        assert_eq!(to("ex"), None);
        assert_eq!(to("e"), None);
    }

    #[test]
    fn unknown_names_get_close_suggestions() {
        match resolve_tool_name("reed_fil", NAMES) {
            NameResolution::Unknown { suggestions } => assert_eq!(suggestions[0], "read_file"),
            other => panic!("expected unknown, got {other:?}"),
        }
        match resolve_tool_name("launch_missiles", NAMES) {
            NameResolution::Unknown { suggestions } => assert!(suggestions.is_empty()),
            other => panic!("expected unknown, got {other:?}"),
        }
    }
}
