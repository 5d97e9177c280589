//! Secret scrubber for error texts from HTTP services, and the filter that keeps secrets
//! out of the environment of the commands the model runs.
//!
//! An error body from a remote service may echo the
//! request's credentials; before such text reaches the model, the transcript
//! or a log, `Bearer …` tokens and API-key-shaped strings become
//! [`REDACTED`]. Pure and allocation-light; text without anything to redact
//! comes back unchanged.

use std::borrow::Cow;

/// The replacement for every secret.
pub const REDACTED: &str = "[REDACTED]";

/// Prefixes of well-known API key formats, with the minimum number of
/// characters that must follow the prefix.
const KEY_PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 12),
    ("sk_test_", 12),
    ("rk_live_", 12),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("hf_", 20),
    ("gsk_", 20),
    ("eyJ", 20),
];

/// Names whose value (after `=` or `:`) is a secret.
const SECRET_NAMES: &[&str] = &[
    "api_key",
    "apikey",
    "api-key",
    "x-api-key",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "secret",
    "password",
    "passwd",
    "token",
    "auth_token",
    "private_key",
];

fn is_run_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '~' | '+' | '/')
}

/// Byte ranges of maximal runs of token characters.
fn runs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_run_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

fn has_known_prefix(run: &str) -> bool {
    KEY_PREFIXES
        .iter()
        .any(|(p, min)| run.strip_prefix(p).is_some_and(|rest| rest.len() >= *min))
}

/// A long mixed-case alphanumeric string: upper, lower and digit, 32+ chars of
/// `[A-Za-z0-9_-]`. Lowercase hex digests and UUIDs do not qualify.
fn is_high_entropy(run: &str) -> bool {
    let b = run.as_bytes();
    b.len() >= 32
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        && b.iter().any(u8::is_ascii_uppercase)
        && b.iter().any(u8::is_ascii_lowercase)
        && b.iter().any(u8::is_ascii_digit)
}

fn is_scheme_word(run: &str) -> bool {
    run.eq_ignore_ascii_case("bearer") || run.eq_ignore_ascii_case("basic")
}

fn is_secret_name(run: &str) -> bool {
    let lower = run.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|n| {
        lower == *n || lower.ends_with(&format!("_{n}")) || lower.ends_with(&format!("-{n}"))
    }) || ["authtoken", "authident", "_auth", "_password"]
        .iter()
        .any(|s| lower.ends_with(s))
}

/// True when the text between a name and a value is an assignment:
/// optional quote, spaces, `=` or `:`, spaces, optional quote.
fn is_assignment_gap(gap: &str) -> bool {
    let g = gap.trim_start_matches(['"', '\'']).trim();
    let Some(rest) = g.strip_prefix(['=', ':']) else {
        return false;
    };
    rest.trim().trim_start_matches(['"', '\'']).is_empty()
}

/// Schemes whose userinfo is a login name (`ssh://git@host`): only a password
/// after `:` is a secret there.
const LOGIN_SCHEMES: &[&str] = &["ssh", "git+ssh", "ssh+git", "sftp", "git"];

/// Byte ranges of the credentials in URL userinfo: the password of
/// `scheme://user:PASSWORD@host`, and a userinfo without a password in any
/// other scheme than SSH's (`https://TOKEN@github.com`), where a user name
/// alone is often the token itself.
fn url_credentials(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("://") {
        let colon_slash = from + at;
        let start = colon_slash + 3;
        let scheme_start = text[..colon_slash]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')))
            .map_or(0, |i| i + 1);
        let scheme = text[scheme_start..colon_slash].to_ascii_lowercase();
        let auth_end = text[start..]
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .map_or(text.len(), |i| start + i);
        let authority = &text[start..auth_end];
        if let Some(atsign) = authority.rfind('@')
            && atsign > 0
        {
            match authority[..atsign].find(':') {
                Some(colon) if colon + 1 < atsign => {
                    out.push((start + colon + 1, start + atsign));
                }
                Some(_) => {}
                None if !scheme.is_empty() && !LOGIN_SCHEMES.contains(&scheme.as_str()) => {
                    out.push((start, start + atsign));
                }
                None => {}
            }
        }
        from = start;
    }
    out
}

/// Byte ranges of the values of git's `http.*.extraheader` settings, as
/// `git config --list` prints them (`http.extraheader=AUTHORIZATION: basic …`)
/// and as a config file holds them (`extraheader = …`): the rest of the line.
fn extraheader_values(text: &str) -> Vec<(usize, usize)> {
    const KEY: &[u8] = b"extraheader";
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + KEY.len() <= bytes.len() {
        if !bytes[i..i + KEY.len()].eq_ignore_ascii_case(KEY) {
            i += 1;
            continue;
        }
        let mut j = i + KEY.len();
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t') {
            j += 1;
        }
        if bytes.get(j) == Some(&b'=') {
            j += 1;
            while j < bytes.len() && matches!(bytes[j], b' ' | b'\t') {
                j += 1;
            }
            let end = text[j..].find(['\n', '\r']).map_or(text.len(), |e| j + e);
            if end > j {
                out.push((j, end));
            }
            i = end;
        } else {
            i = j;
        }
    }
    out
}

/// The PEM headers in `text` that open a private key block: for each
/// `-----BEGIN LABEL-----` whose label holds `PRIVATE KEY` (`RSA PRIVATE
/// KEY`, `OPENSSH PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, `PGP PRIVATE KEY
/// BLOCK`), the byte offset just past its closing `-----`. A header is found
/// wherever it lies: at the start of a line, indented, or inside a quoted
/// string whose line breaks are escaped (`"-----BEGIN PRIVATE KEY-----\nMII…"`).
fn private_key_headers(text: &[u8]) -> impl Iterator<Item = usize> + '_ {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(at) = text
            .get(from..)?
            .windows(BEGIN.len())
            .position(|w| w == BEGIN)
        {
            let label = from + at + BEGIN.len();
            from = label;
            // A label is short and on one line; its end is the next `-----`.
            let window = &text[label..text.len().min(label + 80)];
            let Some(close) = window.windows(5).position(|w| w == b"-----") else {
                continue;
            };
            let name = &window[..close];
            if !name.contains(&b'\n') && name.windows(11).any(|w| w == b"PRIVATE KEY") {
                return Some(label + close + 5);
            }
        }
        None
    })
}

/// True when `text` holds a PEM private key header anywhere
/// (see [`private_key_headers`]).
pub(crate) fn private_key_header_in(text: &[u8]) -> bool {
    private_key_headers(text).next().is_some()
}

/// Byte ranges of the bodies of PEM private key blocks: from just after the
/// `-----BEGIN … PRIVATE KEY-----` header (and its line break, when the
/// header ends its line) to the start of the next `-----END` (or the end of
/// the text). A key inside a one-line string (`\n` escapes) has its body
/// masked within that line.
fn private_key_bodies(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut last_end = 0;
    for header_end in private_key_headers(text.as_bytes()) {
        if header_end < last_end {
            continue;
        }
        let rest = &text[header_end..];
        let body = header_end
            + if rest.starts_with("\r\n") {
                2
            } else {
                usize::from(rest.starts_with('\n'))
            };
        let end = text[body..]
            .find("-----END")
            .map_or(text.len(), |e| body + e);
        if end > body {
            out.push((body, end));
        }
        last_end = end;
    }
    out
}

/// `text` with every range replaced by [`REDACTED`]; ranges may overlap.
fn redact_ranges(text: &str, mut ranges: Vec<(usize, usize)>) -> String {
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in ranges {
        if e <= last {
            continue;
        }
        let s = s.max(last);
        out.push_str(&text[last..s]);
        out.push_str(REDACTED);
        last = e;
    }
    out.push_str(&text[last..]);
    out
}

/// Only the URL rule of [`scrub_secrets`]: the credentials in URL userinfo
/// replaced. Borrowed when there are none.
pub(crate) fn scrub_urls_only(text: &str) -> Cow<'_, str> {
    let ranges = url_credentials(text);
    if ranges.is_empty() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(redact_ranges(text, ranges))
    }
}

/// Replaces `Bearer`/`Basic` credentials and other `Authorization` header
/// values, git's `extraheader` values, API-key-shaped strings, values
/// assigned to secret-looking names (`api_key=…`, `"token": "…"`,
/// `_authToken=…`), the credentials in URL userinfo (`postgres://user:…@host`,
/// `https://…@github.com`; an SSH login name stays) and the bodies of PEM
/// private key blocks with [`REDACTED`]. Returns the input borrowed when
/// nothing matched.
pub fn scrub_secrets(text: &str) -> Cow<'_, str> {
    let mut ranges = url_credentials(text);
    if text.len() >= 11 {
        ranges.extend(extraheader_values(text));
        ranges.extend(private_key_bodies(text));
    }
    if ranges.is_empty() {
        return scrub_tokens(text);
    }
    let out = redact_ranges(text, ranges);
    Cow::Owned(scrub_tokens(&out).into_owned())
}

/// Names of environment variables that hold credentials (any case): containing `KEY`,
/// `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL`, `COOKIE`,
/// `DATABASE_URL` or `WEBHOOK`; ending in `_PAT`, `_AUTH` or `_DSN`; or with a word (between `_`, `-`
/// or `.`) `PASS` or `PWD` other than the working-directory variables `PWD` and `OLDPWD`
/// (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `SENTRY_DSN`, `MYSQL_PWD`, `REDIS_PASS`, ...).
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "COOKIE",
        "DATABASE_URL",
        // Incoming-webhook URLs (Slack, Discord, Teams) are bearer secrets.
        "WEBHOOK",
    ]
    .iter()
    .any(|w| upper.contains(w))
        || ["_PAT", "_AUTH", "_DSN"].iter().any(|s| upper.ends_with(s))
        || upper == "PAT"
        || upper == "DSN"
        || (upper != "PWD"
            && upper != "OLDPWD"
            && upper
                .split(['_', '-', '.'])
                .any(|w| w == "PASS" || w == "PWD"))
}

/// True when an environment variable must not reach a command the model runs (where it
/// could print it into the transcript): a secret name ([`is_secret_env_name`]), or a value
/// the scrubber would redact — a token shape (`ghp_…`, `sk-…`, `xox…`, `hf_…`, `AKIA…`),
/// `Bearer …`, or a URL with a password in its userinfo.
pub fn is_secret_env(name: &str, value: &str) -> bool {
    is_secret_env_name(name) || matches!(scrub_secrets(value), Cow::Owned(_))
}

fn scrub_tokens(text: &str) -> Cow<'_, str> {
    let runs = runs(text);
    let mut redact = vec![false; runs.len()];
    for (i, &(s, e)) in runs.iter().enumerate() {
        let run = &text[s..e];
        if has_known_prefix(run) || is_high_entropy(run) {
            redact[i] = true;
        }
        let Some(&(ns, ne)) = runs.get(i + 1) else {
            continue;
        };
        let gap = &text[e..ns];
        let scheme_then_token =
            is_scheme_word(run) && !gap.is_empty() && gap.chars().all(char::is_whitespace);
        let assigned_secret =
            is_secret_name(run) && is_assignment_gap(gap) && !is_scheme_word(&text[ns..ne]);
        if scheme_then_token || assigned_secret {
            redact[i + 1] = true;
        }
        // `Authorization: token abc` (GitHub's scheme), `Authorization: abc`.
        if run.eq_ignore_ascii_case("authorization") && gap.trim() == ":" {
            let value = &text[ns..ne];
            let scheme = is_scheme_word(value) || value.eq_ignore_ascii_case("token");
            match runs.get(i + 2) {
                Some(&(vs, _)) if scheme && text[ne..vs].chars().all(char::is_whitespace) => {
                    redact[i + 2] = true;
                }
                _ if !scheme => redact[i + 1] = true,
                _ => {}
            }
        }
    }
    if !redact.contains(&true) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (&(s, e), _) in runs.iter().zip(&redact).filter(|(_, r)| **r) {
        out.push_str(&text[last..s]);
        out.push_str(REDACTED);
        last = e;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_redacted() {
        let t = "401: invalid header Authorization: Bearer abc.DEF-123_xyz~+/ given";
        assert_eq!(
            scrub_secrets(t),
            "401: invalid header Authorization: Bearer [REDACTED] given"
        );
        assert_eq!(scrub_secrets("bearer   tok123"), "bearer   [REDACTED]");
        assert_eq!(scrub_secrets("Basic dXNlcjpwYXNz"), "Basic [REDACTED]");
    }

    #[test]
    fn key_shaped_strings_are_redacted() {
        let cases = [
            "Incorrect API key provided: sk-proj-AbCdEf1234567890abcdef.",
            "bad key sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "token ghp_ABCDEFGHIJKLMNOPQRSTuvwxyz0123456789 expired",
            "key AKIAIOSFODNN7EXAMPLE denied",
            "key=AIzaSyA-1234567890abcdefghijklmnopqrstu",
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
            "opaque 4fT9kQ2zLm8Xc7Vb1Nw3Pq6Rs5Ty0UaZ trailing",
        ];
        for c in cases {
            let out = scrub_secrets(c);
            assert!(out.contains(REDACTED), "{c} -> {out}");
            assert!(!out.contains("1234567890abc"), "{c} -> {out}");
        }
    }

    #[test]
    fn assigned_secrets_are_redacted() {
        assert_eq!(
            scrub_secrets("url?api_key=hunter2&x=1"),
            "url?api_key=[REDACTED]&x=1"
        );
        assert_eq!(
            scrub_secrets(r#"{"x-api-key": "short1", "model": "m"}"#),
            r#"{"x-api-key": "[REDACTED]", "model": "m"}"#
        );
        assert_eq!(
            scrub_secrets("OPENAI_API_KEY=abc"),
            "OPENAI_API_KEY=[REDACTED]"
        );
        assert_eq!(scrub_secrets("password: p4ss"), "password: [REDACTED]");
    }

    #[test]
    fn url_passwords_are_redacted() {
        assert_eq!(
            scrub_secrets("connect postgres://app:hunter2@db:5432/x failed"),
            "connect postgres://app:[REDACTED]@db:5432/x failed"
        );
        // A user name alone in an HTTP URL is often the token itself; an
        // SSH login name is not a secret.
        assert_eq!(
            scrub_secrets("https://user@example.com/a:b@c"),
            "https://[REDACTED]@example.com/a:b@c"
        );
        assert_eq!(
            scrub_secrets("origin\thttps://ghtoken123@github.com/o/r.git (fetch)"),
            "origin\thttps://[REDACTED]@github.com/o/r.git (fetch)"
        );
        assert_eq!(
            scrub_secrets("url = ssh://git@github.com/o/r.git"),
            "url = ssh://git@github.com/o/r.git"
        );
        assert_eq!(
            scrub_secrets("ssh://git:pw@host/x"),
            "ssh://git:[REDACTED]@host/x"
        );
    }

    #[test]
    fn git_credentials_in_config_output_are_redacted() {
        let listed = "user.name=Dev\nremote.origin.url=https://oauth2:glpat-secret@gitlab.com/o/r.git\n\
                      http.https://github.com/.extraheader=AUTHORIZATION: basic eC1hY2Nlc3M=\n\
                      core.bare=false\n";
        let out = scrub_secrets(listed);
        assert!(!out.contains("glpat-secret"), "{out}");
        assert!(!out.contains("eC1hY2Nlc3M"), "{out}");
        assert!(out.contains("user.name=Dev"), "{out}");
        assert!(out.contains("core.bare=false"), "{out}");
        assert_eq!(
            scrub_secrets("\textraheader = Authorization: token abc123\n"),
            "\textraheader = [REDACTED]\n"
        );
        assert_eq!(
            scrub_secrets("Authorization: token abc123"),
            "Authorization: token [REDACTED]"
        );
        assert_eq!(
            scrub_secrets("//registry.npmjs.org/:_authToken=abc"),
            "//registry.npmjs.org/:_authToken=[REDACTED]"
        );
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert_eq!(
            scrub_secrets(key),
            "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]-----END RSA PRIVATE KEY-----\n"
        );
    }

    #[test]
    fn secret_environment_by_name_and_by_value() {
        for (n, v) in [
            ("OPENAI_API_KEY", "x"),
            ("GITLAB_PAT", "x"),
            ("NPM_AUTH", "x"),
            ("SENTRY_DSN", "x"),
            ("DATABASE_URL", "sqlite:x"),
            ("MY_DB", "postgres://u:pw@h/db"),
            ("GH", "ghp_ABCDEFGHIJKLMNOPQRSTuvwxyz0123456789"),
            ("X", "sk-proj-AbCdEf1234567890abcdef"),
            ("SLACK", "xoxb-1234567890-abcdefghij"),
            ("HF", "hf_ABCDEFGHIJKLMNOPQRSTUVWX"),
            ("AWS", "AKIAIOSFODNN7EXAMPLE"),
            ("HDR", "Bearer abc.def"),
            ("MYSQL_PWD", "x"),
            ("REDIS_PASS", "x"),
            ("SMTP_PASS_FILE_CONTENT", "x"),
            ("GPG_PASSPHRASE", "x"),
            ("SESSION_COOKIE", "x"),
        ] {
            assert!(is_secret_env(n, v), "{n}={v}");
        }
        for (n, v) in [
            ("PATH", "/usr/local/bin:/usr/bin:/root/.cargo/bin"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("TERM", "xterm-256color"),
            ("CARGO_TARGET_DIR", "/work/target-shared"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("LS_COLORS", "rs=0:di=01;34:ln=01;36"),
            ("PWD", "/work"),
            ("OLDPWD", "/"),
            ("SSH_ASKPASS", "/usr/bin/ssh-askpass"),
            ("PASSAGE_DIR", "/x"),
        ] {
            assert!(!is_secret_env(n, v), "{n}={v}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for t in [
            "404 Not Found: model gpt-4o-mini does not exist",
            "commit 3f1c2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a is lowercase hex",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "use sk-learn for that; the token is invalid",
            "rate limited, retry after 20s",
            "",
        ] {
            assert!(matches!(scrub_secrets(t), Cow::Borrowed(_)), "{t}");
        }
    }
}
