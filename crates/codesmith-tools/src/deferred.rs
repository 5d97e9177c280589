//! `tool_search`: finds deferred tools by BM25 over their names and descriptions and
//! activates them (their schemas are appended to the catalogue's tail).
//!
//! Ranking is Okapi BM25 (k1 = 1.2, b = 0.75) over lower-cased alphanumeric tokens; a
//! tool's name is split on `_`, `-` and `__` so `mcp__github__list_issues` matches
//! "issues". Ties keep name order.

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::registry::{SharedDeferral, lock};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// The tool's name.
pub const TOOL_SEARCH: &str = "tool_search";
/// Default number of tools one search activates.
pub const DEFAULT_LIMIT: usize = 3;
/// Most tools one search may activate.
pub const MAX_LIMIT: usize = 10;
/// The meta key listing what a search activated (read back when a session resumes).
pub const ACTIVATED_KEY: &str = "activated";

/// Finds and activates deferred tools.
pub struct ToolSearch {
    entries: Vec<(&'static str, &'static str)>,
    description: &'static str,
    deferral: SharedDeferral,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl ToolSearch {
    pub(crate) fn new(
        mut entries: Vec<(&'static str, &'static str)>,
        deferral: SharedDeferral,
    ) -> Self {
        entries.sort();
        let mut text = String::from(
            "Finds tools that are available but not loaded yet, and loads them: their full schemas are added \
             to your tools and stay for the rest of the session. Call it before using any tool listed below. \
             Arguments: `query` (words describing the task or the tool's name), `limit` (optional, default 3, \
             at most 10). Example: {\"query\": \"list github issues\", \"limit\": 2}.\nDeferred tools:",
        );
        for (name, description) in &entries {
            text.push_str("\n- ");
            text.push_str(name);
            text.push_str(": ");
            text.push_str(&blurb(description));
        }
        ToolSearch {
            entries,
            description: Box::leak(text.into_boxed_str()),
            deferral,
        }
    }
}

/// The first line of `description`, at most 80 characters.
fn blurb(description: &str) -> String {
    let line = description.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        out.push('…');
    }
    out
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// BM25 scores of `docs` for `query`, one per document.
pub fn bm25(query: &str, docs: &[String]) -> Vec<f64> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let docs: Vec<Vec<String>> = docs.iter().map(|d| tokens(d)).collect();
    let n = docs.len() as f64;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut df: HashMap<&str, f64> = HashMap::new();
    for d in &docs {
        let mut seen: Vec<&str> = d.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for t in seen {
            *df.entry(t).or_default() += 1.0;
        }
    }
    let q = tokens(query);
    docs.iter()
        .map(|d| {
            let len = d.len() as f64;
            q.iter()
                .map(|term| {
                    let tf = d.iter().filter(|t| *t == term).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let nq = df.get(term.as_str()).copied().unwrap_or(0.0);
                    let idf = ((n - nq + 0.5) / (nq + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                })
                .sum()
        })
        .collect()
}

pub(crate) fn activate(deferral: &SharedDeferral, names: &[String]) -> Vec<&'static str> {
    let mut d = lock(deferral);
    let mut added = Vec::new();
    for name in names {
        let Some(n) = d.deferred.get(name.as_str()).copied() else {
            continue;
        };
        if !d.activated.contains(&n) {
            d.activated.push(n);
            added.push(n);
        }
    }
    added
}

#[async_trait]
impl Tool for ToolSearch {
    fn name(&self) -> &'static str {
        TOOL_SEARCH
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing the tool you need."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                          "description": "How many tools to load (default 3)."}
            },
            "required": ["query"]
        })
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    async fn call(&self, _ctx: &ToolContext, args: Value) -> ToolOutcome {
        let Some(query) = args
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                "`tool_search` needs a non-empty `query` string.",
                "Send {\"query\": \"words describing the tool\", \"limit\": 3}.",
            ));
        };
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
        // The deferred tools of the start, then those a server added later (not in this
        // description, which stays byte-stable).
        let mut entries = self.entries.clone();
        {
            let d = lock(&self.deferral);
            entries.extend(
                d.late
                    .iter()
                    .filter(|(n, _)| {
                        d.deferred.contains(*n) && !self.entries.iter().any(|e| e.0 == **n)
                    })
                    .map(|(n, t)| (*n, t.description())),
            );
        }
        let docs: Vec<String> = entries
            .iter()
            .map(|(n, d)| format!("{} {d}", n.replace("__", " ")))
            .collect();
        let scores = bm25(query, &docs);
        let mut ranked: Vec<(usize, f64)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let chosen: Vec<String> = ranked
            .iter()
            .take(limit)
            .map(|(i, _)| entries[*i].0.to_string())
            .collect();
        if chosen.is_empty() {
            return Err(Refusal::new(
                ErrorCode::NoMatch,
                format!("No deferred tool matches `{query}`."),
                "Try other words, e.g. a word from the tool names listed in the tool_search description.",
            ));
        }
        activate(&self.deferral, &chosen);
        let lines: Vec<String> = chosen
            .iter()
            .map(|n| {
                let d = entries.iter().find(|(e, _)| e == n).map_or("", |(_, d)| d);
                format!("{n}: {}", blurb(d))
            })
            .collect();
        Ok(ToolOutput::new(format!(
            "Loaded (callable from now on):\n{}",
            lines.join("\n")
        ))
        .with(ACTIVATED_KEY, chosen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_the_matching_document() {
        let docs = vec![
            "mcp github list issues List the issues of a repository".to_string(),
            "mcp github create pull request Opens a pull request".to_string(),
            "mcp slack post message Posts to a channel".to_string(),
        ];
        let s = bm25("list issues", &docs);
        assert!(s[0] > s[1] && s[1] == 0.0 && s[2] == 0.0, "{s:?}");
        let s = bm25("pull request", &docs);
        assert!(s[1] > 0.0 && s[0] == 0.0);
    }
}
