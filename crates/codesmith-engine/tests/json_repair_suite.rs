//! Scores the argument repair ladder on the peer JSON-repair vectors in
//! `../shared/suites/json-repair/` (jsonrepair for JS, json_repair for Python,
//! jsonrepair-rs). The libraries disagree by design, so each source is scored
//! on its own. The ladder is deliberately conservative: where it cannot
//! produce the library's value it should refuse (the call is then not run and
//! the model is told why), because a wrong argument executed is worse than a
//! missing one. Text that ends before its JSON does is never completed, so
//! every vector that needs closing counts as refused.
//!
//! Outcomes per vector: `correct` (same value, or refused where the library
//! errors), `refused` (no value where the library repairs), `wrong` (a value
//! different from the library's, or a value where the library errors).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use codesmith_engine::repair::args::{RepairPolicy, repair_arguments};
use serde_json::Value;

#[derive(Default, Debug)]
struct Score {
    correct: usize,
    refused: usize,
    wrong: usize,
    wrong_inputs: Vec<String>,
}

impl Score {
    fn judge(&mut self, input: &str, expected: Option<Value>) {
        let got = repair_arguments(input, RepairPolicy::RepairAllowed)
            .ok()
            .map(|(v, _)| v);
        match (got, expected) {
            (None, None) => self.correct += 1,
            (None, Some(_)) => self.refused += 1,
            (Some(g), Some(e)) if g == e => self.correct += 1,
            (Some(_), _) => {
                self.wrong += 1;
                self.wrong_inputs.push(input.chars().take(80).collect());
            }
        }
    }

    fn total(&self) -> usize {
        self.correct + self.refused + self.wrong
    }

    fn report(&self, name: &str) {
        println!(
            "{name}: {} vectors, {} correct, {} refused, {} wrong",
            self.total(),
            self.correct,
            self.refused,
            self.wrong
        );
        for w in &self.wrong_inputs {
            println!("  wrong: {w:?}");
        }
    }
}

fn suite() -> Option<PathBuf> {
    codesmith_testkit::suite_dir("json-repair")
}

fn lines(path: PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn score_js(dir: &std::path::Path) -> Score {
    let mut score = Score::default();
    for v in lines(dir.join("derived/jsonrepair_js.vectors.jsonl")) {
        let input = v["input"].as_str().unwrap();
        let expected = match v["kind"].as_str() {
            Some("error") => None,
            _ => serde_json::from_str(v["expected"].as_str().unwrap()).ok(),
        };
        score.judge(input, expected);
    }
    score
}

fn score_py(dir: &std::path::Path) -> Score {
    let mut score = Score::default();
    for v in lines(dir.join("derived/json_repair_py.vectors.jsonl")) {
        let Some(input) = v["input"].as_str() else {
            continue;
        };
        let expected = match v["expected_kind"].as_str() {
            Some("object") => Some(v["expected"].clone()),
            _ => match v["expected"].as_str() {
                Some("") | None => None,
                Some(text) => serde_json::from_str(text).ok(),
            },
        };
        score.judge(input, expected);
    }
    let valid: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("json_repair-py/tests/valid.json")).unwrap(),
    )
    .unwrap();
    let invalid = std::fs::read_to_string(dir.join("json_repair-py/tests/invalid.json")).unwrap();
    score.judge(&invalid, Some(valid));
    score
}

fn score_rs(dir: &std::path::Path) -> Score {
    let mut score = Score::default();
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("jsonrepair-rs/tests/fixtures/parity_cases.json"))
            .unwrap(),
    )
    .unwrap();
    for case in doc["cases"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let expected = case["expected"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok());
        score.judge(input, expected);
    }
    score
}

#[test]
fn ladder_scores_on_peer_vectors() {
    let Some(dir) = suite() else { return };
    let scores = [
        ("jsonrepair (js)", score_js(&dir)),
        ("json_repair (py)", score_py(&dir)),
        ("jsonrepair-rs", score_rs(&dir)),
    ];
    for (name, score) in &scores {
        score.report(name);
        assert!(score.total() > 0, "{name}: no vectors read");
        // Conservative by design: wrong repairs must stay rare (under 5% of vectors).
        assert!(
            score.wrong * 20 < score.total(),
            "{name}: too many wrong repairs: {score:?}"
        );
    }
}
