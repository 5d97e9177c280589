//! The one judgement of "this reads a secret", for every tool that shows file
//! content: the shell classifier (by path), `read_file` (by path and content),
//! `grep_files` (which withholds such files) and the masking of what reaches
//! the provider when nobody approved the read.
//!
//! A file is a secret by what it is called or where it lies ([`secret_name`],
//! and the credential stores of [`crate::ws_path`]), or by what it holds
//! ([`secret_file`] with content): a private key header anywhere, an
//! `.npmrc`/`.yarnrc` with a registry token, a git `config` with credentials
//! in a URL or an `http.*.extraheader`.
//!
//! Committed templates of dotenv files (`.env.example`, `.env.sample`,
//! `.env.template`, `.env.dist`, `.env.defaults`, `.env.schema`) are not
//! secrets: projects commit them to document the variables they need, so
//! their content is already published with the repository, and reading them
//! is how an agent learns the configuration. Every other `.env*` (`.env`,
//! `.env.local`, `.env.production`, `.env.bak`, `.env~`, `.envrc`) is.

use std::borrow::Cow;

use crate::scrub::{REDACTED, scrub_secrets};

/// What kind of secret a file holds; [`SecretKind::describe`] names it for a
/// person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// A dotenv file (`.env`, `.env.local`, `.envrc`, `NAME.env`).
    DotEnv,
    /// A private key: by name (`id_ed25519`, `*.pem`, `*.key`, `*.p12`) or by
    /// a `-----BEGIN … PRIVATE KEY-----` header in its content.
    PrivateKey,
    /// A credential store (`.netrc`, `.git-credentials`, `.pypirc`,
    /// `.s3cfg`, `.pgpass`, `credentials.json`, a registry token in
    /// `.npmrc`, anything under `.ssh/` or `.aws/`).
    CredentialStore,
    /// A git configuration whose content holds credentials: a URL with
    /// userinfo or an `http.*.extraheader`.
    GitCredentials,
}

impl SecretKind {
    /// A few words for approval reasons and notes: "a dotenv file of secrets".
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::DotEnv => "a dotenv file of secrets",
            SecretKind::PrivateKey => "a private key",
            SecretKind::CredentialStore => "a credential store",
            SecretKind::GitCredentials => "a git configuration with credentials",
        }
    }
}

/// Dotenv templates that are committed documentation, not secrets (see the
/// module documentation).
const TEMPLATES: &[&str] = &[
    "example", "sample", "template", "dist", "defaults", "schema",
];

/// File names (any case) of credential stores, wherever they lie.
const STORE_NAMES: &[&str] = &[
    ".boto",
    ".dockercfg",
    ".git-credentials",
    ".htpasswd",
    ".my.cnf",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".pypirc",
    ".s3cfg",
    ".secrets",
    ".terraformrc",
    ".vault-token",
    "auth.json",
    "credentials",
    "credentials.json",
    "credentials.toml",
    "credentials.yaml",
    "credentials.yml",
    "rclone.conf",
    "secrets.json",
    "secrets.toml",
    "secrets.yaml",
    "secrets.yml",
    "terraform.rc",
];

/// Extensions (any case) of private keys and key stores.
const KEY_EXTENSIONS: &[&str] = &[
    ".jks",
    ".kdbx",
    ".key",
    ".keystore",
    ".p12",
    ".pem",
    ".pfx",
    ".ppk",
];

/// Extensions (any case) of files named for the secrets they hold.
const STORE_EXTENSIONS: &[&str] = &[".tfstate", ".tfstate.backup"];

/// Names whose secrets depend on content: a registry configuration is one
/// only with a token or password in it. Without the content they count (the
/// shell cannot look).
const TOKEN_CONFIGS: &[&str] = &[".npmrc", ".yarnrc", ".yarnrc.yml"];

/// SSH key algorithms, for `id_ALG` names with a suffix (`id_rsa.old`).
const KEY_ALGORITHMS: &[&str] = &["rsa", "dsa", "ecdsa", "ed25519", "ecdsa_sk", "ed25519_sk"];

/// The secret a file called `name` (one path component) holds by its name
/// alone, if any: dotenv files (not their committed templates), private keys
/// (`id_*` other than `.pub`, `*.pem`, `*.key`, …) and credential stores.
/// Registry configurations (`.npmrc`, `.yarnrc.yml`) count here; with their
/// content, [`secret_file`] lets those without a token go.
pub fn secret_name(name: &str) -> Option<SecretKind> {
    if is_dotenv(name) {
        return Some(SecretKind::DotEnv);
    }
    if let Some(rest) = name.strip_prefix("id_")
        && !ends_with_ignore_case(name, ".pub")
        && !rest.is_empty()
    {
        let stem = rest.split('.').next().unwrap_or_default();
        if !rest.contains('.') || KEY_ALGORITHMS.contains(&stem) {
            return Some(SecretKind::PrivateKey);
        }
    }
    if KEY_EXTENSIONS
        .iter()
        .any(|ext| ends_with_ignore_case(name, ext))
    {
        return Some(SecretKind::PrivateKey);
    }
    if STORE_NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
        || TOKEN_CONFIGS.iter().any(|n| name.eq_ignore_ascii_case(n))
        || STORE_EXTENSIONS
            .iter()
            .any(|ext| ends_with_ignore_case(name, ext))
        || (name
            .as_bytes()
            .get(..15)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"service-account"))
            && ends_with_ignore_case(name, ".json"))
    {
        return Some(SecretKind::CredentialStore);
    }
    None
}

/// Decides whether reading `path` reads a secret, and which: the one
/// judgement every tool that shows file content uses.
///
/// `path` is the path as the caller knows it (workspace-relative or
/// absolute, `/`-separated; its last component is the file name).
/// `content` is the file's leading bytes when the caller read them (the file
/// tools read at least the first 64 KiB); `None` judges by path alone, as
/// the shell classifier must.
///
/// - By name: [`secret_name`], and credential stores by where they lie
///   (below `.ssh/`, `.aws/`, `.gnupg/`, `.docker/config.json`, …).
/// - By content: a `-----BEGIN … PRIVATE KEY-----` line (any name), a git
///   `config` with URL userinfo or an `extraheader`.
/// - A registry configuration (`.npmrc`, `.yarnrc`, `.yarnrc.yml`) with
///   content is a secret only when it holds a token, password or `_auth`.
pub fn secret_file(path: &str, content: Option<&[u8]>) -> Option<SecretKind> {
    let name = path.rsplit('/').find(|c| !c.is_empty()).unwrap_or(path);
    if let Some(text) = content {
        if holds_private_key(text) {
            return Some(SecretKind::PrivateKey);
        }
        if TOKEN_CONFIGS.iter().any(|n| name.eq_ignore_ascii_case(n)) {
            return holds_registry_token(text).then_some(SecretKind::CredentialStore);
        }
        if is_git_config(path) && holds_git_credentials(text) {
            return Some(SecretKind::GitCredentials);
        }
    }
    if let Some(kind) = secret_name(name) {
        return Some(kind);
    }
    crate::ws_path::is_credential_component(path).then_some(SecretKind::CredentialStore)
}

/// True when `path` names a git configuration file: `config` or
/// `config.worktree` directly in a `.git` directory or a git directory's
/// `modules/…`/`worktrees/…`, or `.git/config` spelled in any case.
fn is_git_config(path: &str) -> bool {
    let mut parts = path.rsplit('/').filter(|c| !c.is_empty());
    let Some(name) = parts.next() else {
        return false;
    };
    if !name.eq_ignore_ascii_case("config") && !name.eq_ignore_ascii_case("config.worktree") {
        return false;
    }
    path.split('/')
        .any(|c| crate::ws_path::protected_name(c) == Some(".git"))
}

/// True when `text` has a PEM (or PuTTY) private key header anywhere: at the
/// start of a line, indented, or inside a string on one line with escaped
/// line breaks (a service account's JSON key, `"private_key":
/// "-----BEGIN PRIVATE KEY-----\nMII…"`).
fn holds_private_key(text: &[u8]) -> bool {
    text.split(|b| *b == b'\n')
        .any(|line| line.trim_ascii_start().starts_with(b"PuTTY-User-Key-File"))
        || crate::scrub::private_key_header_in(text)
}

/// True when a registry configuration holds a credential: an `_auth`,
/// `_authToken`, `_password`, `npmAuthToken`, `npmAuthIdent` or any
/// `…token`/`…password` key.
fn holds_registry_token(text: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(text).to_ascii_lowercase();
    ["_auth", "token", "password", "authident"]
        .iter()
        .any(|w| lower.contains(w))
}

/// True when a git configuration holds credentials: a URL with userinfo
/// (other than an SSH login name) or an `extraheader`.
fn holds_git_credentials(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    text.to_ascii_lowercase().contains("extraheader")
        || matches!(
            crate::scrub::scrub_urls_only(&text),
            Cow::Owned(ref masked) if masked != text.as_ref()
        )
}

/// `text` (the content of a file [`secret_file`] judged `kind`) with its
/// credential values replaced by [`REDACTED`], for a read nobody approved:
///
/// - a private key: the body of every `BEGIN`/`END` block becomes one
///   `[REDACTED]` line; the rest passes the scrubber;
/// - a git configuration: the scrubber ([`scrub_secrets`]: URL userinfo,
///   `extraheader` and `Authorization` values, token shapes);
/// - dotenv files and credential stores: every value; a line keeps its key
///   and separator (`API_KEY=`, `"auth": `, `password:`), section headers
///   (`[default]`) and blank lines are kept, and a line without a separator
///   (`machine h login u password p`) keeps only its first word. Comments
///   pass the scrubber.
pub fn mask_secret_text(kind: SecretKind, text: &str) -> String {
    match kind {
        SecretKind::GitCredentials => scrub_secrets(text).into_owned(),
        SecretKind::PrivateKey => mask_key_blocks(text),
        SecretKind::DotEnv | SecretKind::CredentialStore => {
            text.split_inclusive('\n').map(mask_value_line).collect()
        }
    }
}

fn mask_key_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    // The text between blocks passes the scrubber as a whole, not line by line: a key
    // whose header is not at the start of its line (a quoted YAML or JSON value) spans
    // several lines there, and only the whole run shows where its body starts and ends.
    let mut between = String::new();
    for line in text.split_inclusive('\n') {
        let bare = line.trim();
        if !inside && bare.starts_with("-----BEGIN ") {
            out.push_str(&scrub_secrets(&std::mem::take(&mut between)));
            inside = true;
            out.push_str(line);
            out.push_str(REDACTED);
            out.push('\n');
        } else if inside && bare.starts_with("-----END ") {
            inside = false;
            out.push_str(line);
        } else if !inside {
            between.push_str(line);
        }
    }
    out.push_str(&scrub_secrets(&between));
    out
}

fn mask_value_line(line: &str) -> String {
    let body = line.trim_end_matches(['\n', '\r']);
    let ending = &line[body.len()..];
    let bare = body.trim();
    if bare.is_empty()
        || (bare.starts_with('[') && bare.ends_with(']'))
        || bare.chars().all(|c| c.is_ascii_punctuation())
    {
        return line.to_string();
    }
    if bare.starts_with(['#', ';']) || bare.starts_with("//") {
        return scrub_secrets(line).into_owned();
    }
    let cut = match body.find(['=', ':']) {
        Some(at) => {
            let after = &body[at + 1..];
            at + 1 + (after.len() - after.trim_start().len())
        }
        None => {
            let lead = body.len() - body.trim_start().len();
            match body[lead..].find(char::is_whitespace) {
                Some(end) => lead + end + 1,
                None => lead,
            }
        }
    };
    format!("{}{REDACTED}{ending}", &body[..cut])
}

/// True when `name` ends with `suffix`, ignoring ASCII case, and has more
/// before it.
pub(crate) fn ends_with_ignore_case(name: &str, suffix: &str) -> bool {
    let (name, suffix) = (name.as_bytes(), suffix.as_bytes());
    name.len() > suffix.len() && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// A dotenv file of secrets (`.env`, `.env.local`, `.env.production`), its
/// backups and relatives (`.env~`, `.env.bak`, `.envrc` and `.envrc.*` of
/// direnv) and `NAME.env` files; not the committed templates ([`TEMPLATES`])
/// nor `.environment` notes.
fn is_dotenv(name: &str) -> bool {
    if let Some(stem) = name.strip_suffix(".env")
        && !stem.is_empty()
    {
        return !TEMPLATES.contains(&stem);
    }
    match name.strip_prefix(".env") {
        Some("") => true,
        Some(rest) => match rest.strip_prefix('.') {
            Some(variant) => !TEMPLATES.contains(&variant),
            None => !rest.starts_with("ironment"),
        },
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_judge_dotenv_keys_and_stores() {
        for (path, kind) in [
            (".env", SecretKind::DotEnv),
            ("app/.env.local", SecretKind::DotEnv),
            (".envrc", SecretKind::DotEnv),
            (".envrc.local", SecretKind::DotEnv),
            ("prod.env", SecretKind::DotEnv),
            ("deploy/id_ed25519", SecretKind::PrivateKey),
            ("keys/id_deploy", SecretKind::PrivateKey),
            ("id_rsa.old", SecretKind::PrivateKey),
            ("tls/server.PEM", SecretKind::PrivateKey),
            ("cert.p12", SecretKind::PrivateKey),
            (".netrc", SecretKind::CredentialStore),
            ("conf/.s3cfg", SecretKind::CredentialStore),
            (".boto", SecretKind::CredentialStore),
            (".my.cnf", SecretKind::CredentialStore),
            (".pgpass", SecretKind::CredentialStore),
            ("x/rclone.conf", SecretKind::CredentialStore),
            ("auth.json", SecretKind::CredentialStore),
            ("credentials", SecretKind::CredentialStore),
            ("gcp/credentials.json", SecretKind::CredentialStore),
            (".terraformrc", SecretKind::CredentialStore),
            (".git-credentials", SecretKind::CredentialStore),
            (".pypirc", SecretKind::CredentialStore),
            ("home/.aws/config", SecretKind::CredentialStore),
            ("backup/.ssh/known_hosts", SecretKind::CredentialStore),
            (".npmrc", SecretKind::CredentialStore),
        ] {
            assert_eq!(secret_file(path, None), Some(kind), "{path}");
        }
        for path in [
            ".env.example",
            ".env.sample",
            ".env.template",
            "deploy/id_ed25519.pub",
            "src/id_map.rs",
            ".environment",
            "README.md",
            "src/config.rs",
            ".git/config",
            "Cargo.toml",
        ] {
            assert_eq!(secret_file(path, None), None, "{path}");
        }
    }

    #[test]
    fn content_decides_keys_registry_tokens_and_git_credentials() {
        let key = b"junk\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n";
        assert_eq!(
            secret_file("notes/deploy.txt", Some(key)),
            Some(SecretKind::PrivateKey)
        );
        let rsa = b"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n";
        assert_eq!(secret_file("a", Some(rsa)), Some(SecretKind::PrivateKey));
        let cert = b"-----BEGIN CERTIFICATE-----\nMIIE\n";
        assert_eq!(secret_file("ca.crt", Some(cert)), None);

        assert_eq!(secret_file(".npmrc", Some(b"registry=https://r/\n")), None);
        assert_eq!(
            secret_file(".npmrc", Some(b"//r/:_authToken=abc\n")),
            Some(SecretKind::CredentialStore)
        );
        assert_eq!(
            secret_file("web/.yarnrc.yml", Some(b"npmAuthToken: x\n")),
            Some(SecretKind::CredentialStore)
        );

        let plain = b"[remote \"origin\"]\n\turl = https://github.com/o/r.git\n";
        assert_eq!(secret_file(".git/config", Some(plain)), None);
        let ssh = b"[remote \"origin\"]\n\turl = ssh://git@github.com/o/r.git\n";
        assert_eq!(secret_file(".git/config", Some(ssh)), None);
        let token = b"[remote \"origin\"]\n\turl = https://ghp_abc@github.com/o/r.git\n";
        assert_eq!(
            secret_file(".git/config", Some(token)),
            Some(SecretKind::GitCredentials)
        );
        let header = b"[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eA==\n";
        assert_eq!(
            secret_file("/w/.GIT/config", Some(header)),
            Some(SecretKind::GitCredentials)
        );
        assert_eq!(
            secret_file(".git/modules/sub/config", Some(token)),
            Some(SecretKind::GitCredentials)
        );
    }

    #[test]
    fn a_key_is_found_and_masked_wherever_its_header_lies() {
        // A service account's JSON key: the whole key on one line, line breaks escaped.
        let json = "{\n  \"type\": \"service_account\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg+kqhkiG9w0BAQ/EFAASC\\nBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"x@y\"\n}\n";
        assert_eq!(
            secret_file("my-project-1234-abcdef.json", Some(json.as_bytes())),
            Some(SecretKind::PrivateKey)
        );
        let masked = mask_secret_text(SecretKind::PrivateKey, json);
        for part in ["MIIEvQIBADANBg+kqhkiG9w0BAQ/EFAASC", "BKcwggSjAgEAAoIBAQC7"] {
            assert!(!masked.contains(part), "{masked}");
            assert!(!scrub_secrets(json).contains(part), "the scrubber: {json}");
        }
        assert!(masked.contains("client_email"), "{masked}");
        // A quoted YAML value spanning lines, its header after the key's name.
        let yaml = "tls:\n  key: \"-----BEGIN RSA PRIVATE KEY-----\n    MIIEo+wIBAAKCAQ/EA1\n    -----END RSA PRIVATE KEY-----\"\n";
        assert_eq!(
            secret_file("values.yaml", Some(yaml.as_bytes())),
            Some(SecretKind::PrivateKey)
        );
        let masked = mask_secret_text(SecretKind::PrivateKey, yaml);
        assert!(!masked.contains("MIIEo+wIBAAKCAQ/EA1"), "{masked}");
        // Words about keys are not keys.
        for text in [
            "see -----BEGIN PRIVATE KEY below\n",
            "-----BEGIN CERTIFICATE-----\nPRIVATE KEY\n",
        ] {
            assert_eq!(secret_file("doc.md", Some(text.as_bytes())), None, "{text}");
        }
    }

    #[test]
    fn masking_keeps_keys_and_drops_values() {
        let env = "# db\nexport DB_PASSWORD=hunter2\nMODE = dev\n\n[section]\n";
        assert_eq!(
            mask_secret_text(SecretKind::DotEnv, env),
            "# db\nexport DB_PASSWORD=[REDACTED]\nMODE = [REDACTED]\n\n[section]\n"
        );
        let netrc = "machine example.com login me password s3cret\n";
        assert_eq!(
            mask_secret_text(SecretKind::CredentialStore, netrc),
            "machine [REDACTED]\n"
        );
        let json = "{\n  \"auths\": {\"r\": {\"auth\": \"dXNlcjpwYXNz\"}}\n}\n";
        let masked = mask_secret_text(SecretKind::CredentialStore, json);
        assert!(!masked.contains("dXNlcjpwYXNz"), "{masked}");
        let key =
            "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB\n-----END OPENSSH PRIVATE KEY-----\n";
        assert_eq!(
            mask_secret_text(SecretKind::PrivateKey, key),
            "-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n-----END OPENSSH PRIVATE KEY-----\n"
        );
        let git = "[remote \"o\"]\n\turl = https://x-access-token:ghs_secret@github.com/o/r\n";
        let masked = mask_secret_text(SecretKind::GitCredentials, git);
        assert!(!masked.contains("ghs_secret"), "{masked}");
        assert!(masked.contains("github.com/o/r"), "{masked}");
    }
}
