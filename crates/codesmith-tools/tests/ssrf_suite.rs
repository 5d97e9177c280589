//! The ssrfcheck corpus (shared/suites/ssrf-ssrfcheck) against checks 1–5.
//!
//! ssrfcheck prepends `https://` to inputs without a scheme; so do we when
//! the text does not parse as an absolute URL on its own. Check 6 (DNS) is not
//! exercised here: no name is resolved and nothing is sent.
//!
//! Every should-not-pass entry must be refused. Some of them are URL hygiene
//! rather than SSRF (user info in front of a public host such as
//! `http://userid:password@example.com`, hosts made only of dots); check 1
//! refuses those too (credentials in URLs, backslash or whitespace in the
//! authority, hostless URLs), so no exception list is needed.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use codesmith_policy::{AddressPolicy, NetworkPolicy};
use codesmith_tools::fetch::url_checks::{UrlCheck, check_url};

fn data_dir() -> Option<PathBuf> {
    codesmith_testkit::suite_dir("ssrf-ssrfcheck/tests/data")
}

fn load(dir: &std::path::Path, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn check(raw: &str) -> Result<(), UrlCheck> {
    let policy = NetworkPolicy::default();
    let addresses = AddressPolicy::new();
    let as_is = raw.contains("://") || url::Url::parse(raw).is_ok();
    let candidate = if as_is {
        raw.to_string()
    } else {
        format!("https://{raw}")
    };
    check_url(&candidate, &policy, &addresses)
        .map(|_| ())
        .map_err(|r| r.check)
}

#[test]
fn every_should_not_pass_case_is_refused() {
    let Some(dir) = data_dir() else { return };
    let cases = load(&dir, "should-not-pass.json");
    let mut by_check: BTreeMap<&str, usize> = BTreeMap::new();
    let mut passed = Vec::new();
    for raw in &cases {
        match check(raw) {
            Err(g) => {
                *by_check.entry(g.name()).or_default() += 1;
                if std::env::var_os("SSRF_SUITE_VERBOSE").is_some() {
                    eprintln!("{:<18} {raw:?}", g.name());
                }
            }
            Ok(()) => passed.push(raw.as_str()),
        }
    }
    eprintln!(
        "should-not-pass: {} cases, {} refused {:?}, {} passed",
        cases.len(),
        cases.len() - passed.len(),
        by_check,
        passed.len()
    );
    assert!(passed.is_empty(), "not refused: {passed:#?}");
}

#[test]
fn should_pass_and_public_ips_are_not_refused_by_address_checks() {
    let Some(dir) = data_dir() else { return };
    let mut total = 0;
    let mut refused_other = Vec::new();
    for name in ["should-pass.json", "valid-ips-list.json"] {
        for raw in load(&dir, name) {
            total += 1;
            match check(&raw) {
                Ok(()) => {}
                Err(UrlCheck::Localhost | UrlCheck::IpLiteral | UrlCheck::RestrictedRange) => {
                    panic!("{name}: address checks refused {raw:?}")
                }
                Err(g) => refused_other.push((raw, g)),
            }
        }
    }
    eprintln!(
        "should-pass + valid-ips: {total} cases, 0 refused by address checks, {} refused by other checks: {refused_other:?}",
        refused_other.len()
    );
    assert!(refused_other.is_empty(), "{refused_other:?}");
}
