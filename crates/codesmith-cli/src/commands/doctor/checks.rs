//! The deterministic checks. Each returns findings; none prints, none changes anything
//! (except the probe cache under `$CODESMITH_HOME`).

use std::path::{Path, PathBuf};

use codesmith_local::fetch::{CONVERTED_FILE, MODEL_SHA256, ORIGINAL_FILE, models_dir};

use super::probe::{self, ProbeCache};
use super::report::{Finding, Status};
use crate::args::ProviderName;
use crate::config::{self, FileConfig, SandboxSection};

/// What the checks look at, gathered once.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `$CODESMITH_HOME`.
    pub home: PathBuf,
    /// The user config, when it parsed (missing: default).
    pub file: Option<FileConfig>,
    /// The provider `exec` would use.
    pub provider: ProviderName,
    /// Its model name.
    pub model: String,
    /// Its endpoint (remote providers).
    pub base_url: Option<String>,
    /// The effective sandbox settings.
    pub sandbox: SandboxSection,
}

/// `version`.
pub fn version() -> Finding {
    Finding::new(
        "version",
        Status::Ok,
        format!("codesmith {}", env!("CARGO_PKG_VERSION")),
    )
}

/// `config.user`: the user config parses.
pub fn user_config(home: &Path) -> (Finding, Option<FileConfig>) {
    let path = home.join("config.toml");
    if !path.exists() {
        let f = Finding::new(
            "config.user",
            Status::Ok,
            format!("no user config at {} (defaults apply)", path.display()),
        )
        .hint(format!(
            "to use a hosted model, create {} with e.g. provider = \"openai\"",
            path.display()
        ));
        return (f, Some(FileConfig::default()));
    }
    match config::read_user_config(home) {
        Ok(file) => (Finding::new("config.user", Status::Ok, format!("{} parses", path.display())), Some(file)),
        Err(e) => (
            Finding::new("config.user", Status::Error, format!("{e:#}"))
                .hint("fix the key or line named above (unknown keys are rejected), or move the file away"),
            None,
        ),
    }
}

/// `config.project`: the project config parses and only tightens.
pub fn project_config(workspace: Option<&Path>) -> Finding {
    let Some(ws) = workspace else {
        return Finding::new("config.project", Status::Skip, "no workspace to check");
    };
    let path = ws.join(".codesmith").join("config.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Finding::new(
            "config.project",
            Status::Ok,
            "no project config (.codesmith/config.toml)",
        );
    };
    match toml::from_str::<toml::Table>(&text) {
        Err(e) => Finding::new(
            "config.project",
            Status::Warn,
            format!("{} does not parse and is ignored: {e}", path.display()),
        )
        .hint("fix the TOML syntax; until then the project settings do not apply"),
        Ok(table) => {
            let ignored: Vec<&str> = table
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "approval" && *k != "sandbox")
                .collect();
            if ignored.is_empty() {
                Finding::new(
                    "config.project",
                    Status::Ok,
                    format!("{} parses", path.display()),
                )
            } else {
                Finding::new("config.project", Status::Warn, format!("{} sets {} which a project config may not set (ignored)", path.display(), ignored.join(", ")))
                    .hint("move these keys to the user config $CODESMITH_HOME/config.toml; a project may only tighten `approval` and `sandbox`")
            }
        }
    }
}

/// `config.policy`: the exec-policy rule files parse.
pub fn policy(home: &Path, workspace: Option<&Path>) -> Finding {
    let read = |p: PathBuf| std::fs::read_to_string(p).ok();
    let user = read(home.join("policy.toml"));
    let project = workspace.and_then(|w| read(w.join(".codesmith").join("policy.toml")));
    if user.is_none() && project.is_none() {
        return Finding::new(
            "config.policy",
            Status::Ok,
            "no exec-policy rule files (built-in rules apply)",
        );
    }
    match codesmith_policy::Rules::from_sources(user.as_deref(), project.as_deref()) {
        Err(e) => Finding::new(
            "config.policy",
            Status::Error,
            format!("exec-policy rules are invalid: {e}"),
        )
        .hint(
            "fix policy.toml (user: $CODESMITH_HOME/policy.toml, project: .codesmith/policy.toml)",
        ),
        Ok((_, notes)) if !notes.is_empty() => {
            Finding::new("config.policy", Status::Warn, notes.join("; "))
                .hint("remove the ignored rules, or move allow rules to the user policy.toml")
        }
        Ok(_) => Finding::new("config.policy", Status::Ok, "exec-policy rule files parse"),
    }
}

/// `config.sources`: which file or variable set each value.
pub fn sources(home: &Path, workspace: Option<&Path>) -> Finding {
    let mut parts = Vec::new();
    let user = std::fs::read_to_string(home.join("config.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok());
    let project = workspace
        .and_then(|w| std::fs::read_to_string(w.join(".codesmith").join("config.toml")).ok())
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok());
    if let Some(t) = &user {
        leaves("", t, &mut |k, v| {
            parts.push(format!("{k} = {v} (user config)"))
        });
    }
    if let Some(t) = &project {
        leaves("", t, &mut |k, v| {
            let allowed = k == "approval" || k.starts_with("sandbox.");
            let note = if allowed {
                "project config, tightening only"
            } else {
                "project config, ignored"
            };
            parts.push(format!("{k} = {v} ({note})"));
        });
    }
    for var in [
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "CODESMITH_STREAM_IDLE_TIMEOUT_SECS",
    ] {
        if let Ok(v) = std::env::var(var).map(|v| v.trim().to_string()).as_deref()
            && !v.is_empty()
        {
            parts.push(format!("{var} = {v} (environment)"));
        }
    }
    let has = |key: &str| user.as_ref().is_some_and(|t| t.contains_key(key));
    for (key, default) in [("provider", "local"), ("approval", "suggest")] {
        if !has(key) {
            parts.push(format!("{key} = {default} (default)"));
        }
    }
    Finding::new("config.sources", Status::Ok, parts.join("; "))
}

/// Calls `f(dotted_key, display_value)` for every leaf of `table`; secrets are hidden.
fn leaves(prefix: &str, table: &toml::Table, f: &mut dyn FnMut(&str, String)) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => leaves(&key, t, f),
            _ if k.contains("key") || k.contains("token") || k.contains("secret") => {
                f(&key, "(set, hidden)".into())
            }
            toml::Value::String(s) => f(&key, format!("{s:?}")),
            other => f(&key, other.to_string()),
        }
    }
}

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// `keys.openai` and `keys.anthropic`: where a key would come from (values never shown).
pub fn keys(inputs: &Inputs) -> Vec<Finding> {
    let file = inputs.file.clone().unwrap_or_default();
    let vendors = [
        (
            ProviderName::Openai,
            "openai",
            &["OPENAI_API_KEY", "DEEPSEEK_API_KEY"][..],
            file.openai.as_ref(),
        ),
        (
            ProviderName::Anthropic,
            "anthropic",
            &["ANTHROPIC_API_KEY"][..],
            file.anthropic.as_ref(),
        ),
    ];
    vendors
        .into_iter()
        .map(|(name, label, vars, section)| {
            let id = format!("keys.{label}");
            let mut found: Vec<String> = vars
                .iter()
                .filter(|v| env_set(v))
                .map(|v| format!("${v}"))
                .collect();
            if section
                .and_then(|s| s.api_key.as_deref())
                .is_some_and(|k| !k.trim().is_empty())
            {
                found.push(format!("[{label}] api_key in config.toml"));
            }
            let selected = inputs.provider == name;
            let hint = format!(
                "export {}=... (or set [{label}] api_key in $CODESMITH_HOME/config.toml)",
                vars[0]
            );
            if !found.is_empty() {
                let shadow = if found.len() > 1 {
                    format!(" (used: {}, which wins over the rest)", found[0])
                } else {
                    String::new()
                };
                return Finding::new(
                    &id,
                    Status::Ok,
                    format!("{label} key present from {}{shadow}", found.join(", ")),
                );
            }
            if !selected {
                return Finding::new(
                    &id,
                    Status::Skip,
                    format!(
                        "no {label} key (not needed: the provider is {})",
                        crate::setup::provider_label(inputs.provider)
                    ),
                )
                .hint(format!("to use {label}: {hint}"));
            }
            let custom = inputs
                .base_url
                .as_deref()
                .is_some_and(|u| !u.contains("api.openai.com") && !u.contains("api.anthropic.com"));
            if name == ProviderName::Openai && custom {
                Finding::new(
                    &id,
                    Status::Warn,
                    format!("no {label} key; the custom endpoint may not need one"),
                )
                .hint(format!("if the endpoint asks for a key: {hint}"))
            } else {
                Finding::new(
                    &id,
                    Status::Error,
                    format!("no {label} key, and {label} is the configured provider"),
                )
                .hint(hint)
            }
        })
        .collect()
}

/// `model.embedded`: the cached default model, its digest checked (never downloaded).
pub async fn embedded_model(inputs: &Inputs) -> Finding {
    let id = "model.embedded";
    let uses_it = inputs.provider == ProviderName::Local;
    if uses_it && !codesmith_local::is_default_model(&inputs.model) {
        let p = PathBuf::from(&inputs.model);
        return if p.is_file() {
            Finding::new(
                id,
                Status::Ok,
                format!("local model file {} exists", p.display()),
            )
        } else {
            Finding::new(
                id,
                Status::Error,
                format!("local model file {} does not exist", p.display()),
            )
            .hint("set model to an existing GGUF file, or remove it to use the default model")
        };
    }
    let dir = models_dir(&inputs.home);
    let (original, converted) = (dir.join(ORIGINAL_FILE), dir.join(CONVERTED_FILE));
    let absent = if uses_it { Status::Warn } else { Status::Skip };
    if !original.is_file() && !converted.is_file() {
        return Finding::new(
            id,
            absent,
            format!(
                "embedded model not cached in {} (downloaded on first use)",
                dir.display()
            ),
        )
        .hint("run `codesmith model fetch` to download and verify it now");
    }
    if !original.is_file() {
        return Finding::new(
            id,
            Status::Ok,
            format!(
                "converted model present at {} (original not kept, digest not checked)",
                converted.display()
            ),
        );
    }
    let path = original.clone();
    let digest =
        tokio::task::spawn_blocking(move || codesmith_local::fetch::file_sha256(&path)).await;
    match digest {
        Ok(Ok(d)) if d == MODEL_SHA256 => {
            let conv = if converted.is_file() {
                "converted copy present"
            } else {
                "conversion pending (done on first use)"
            };
            Finding::new(
                id,
                Status::Ok,
                format!("embedded model cached, SHA-256 verified; {conv}"),
            )
        }
        Ok(Ok(d)) => Finding::new(
            id,
            if uses_it { Status::Error } else { Status::Warn },
            format!(
                "{} has SHA-256 {d}, expected {MODEL_SHA256}",
                original.display()
            ),
        )
        .hint(format!(
            "delete {} and run `codesmith model fetch`",
            original.display()
        )),
        Ok(Err(e)) => Finding::new(
            id,
            Status::Warn,
            format!("cannot hash {}: {e}", original.display()),
        )
        .hint("check the file's permissions, or delete it and run `codesmith model fetch`"),
        Err(e) => Finding::new(id, Status::Warn, format!("hashing failed: {e}")),
    }
}

fn install_hint(linux: &str, mac: &str, windows: &str) -> String {
    if cfg!(target_os = "macos") {
        mac.to_string()
    } else if cfg!(windows) {
        windows.to_string()
    } else {
        linux.to_string()
    }
}

/// `tools.*`: external programs, probed (and cached under `$CODESMITH_HOME`).
pub async fn tools(home: &Path) -> Vec<Finding> {
    let mut cache = ProbeCache::load(home);
    let specs: [(&str, &[&str], Status, String); 5] = [
        (
            "tools.python",
            &["python3", "python", "py -3"],
            Status::Warn,
            install_hint(
                "sudo apt install python3 (Debian/Ubuntu) or your distribution's python3 package",
                "brew install python@3.12",
                "winget install Python.Python.3.12",
            ),
        ),
        (
            "tools.rustfmt",
            &["rustfmt"],
            Status::Warn,
            "rustup component add rustfmt".to_string(),
        ),
        (
            "tools.bwrap",
            &["bwrap"],
            if cfg!(target_os = "linux") {
                Status::Warn
            } else {
                Status::Skip
            },
            install_hint(
                "sudo apt install bubblewrap (or dnf install bubblewrap)",
                "not available on macOS",
                "not available on Windows",
            ),
        ),
        (
            "tools.git",
            &["git"],
            Status::Warn,
            install_hint(
                "sudo apt install git",
                "xcode-select --install (or brew install git)",
                "winget install Git.Git",
            ),
        ),
        (
            "tools.rg",
            &["rg"],
            Status::Skip,
            install_hint(
                "optional: sudo apt install ripgrep",
                "optional: brew install ripgrep",
                "optional: winget install BurntSushi.ripgrep.MSVC",
            ),
        ),
    ];
    let mut out = Vec::new();
    for (id, candidates, missing, hint) in specs {
        let f = match probe::resolve(candidates, &mut cache).await {
            Some(r) => Finding::new(
                id,
                Status::Ok,
                format!("{} -> {} ({})", r.candidate, r.version, r.path.display()),
            ),
            None => Finding::new(
                id,
                missing,
                format!("none of {} answers `--version`", candidates.join(", ")),
            )
            .hint(hint),
        };
        out.push(f);
    }
    cache.save(home);
    out
}

/// `sandbox.backend`: the configured backend exists and whether it truly isolates.
pub fn sandbox(section: &SandboxSection) -> Finding {
    let id = "sandbox.backend";
    let name = section.backend.as_deref().unwrap_or("auto");
    let required = section.required.unwrap_or(false);
    match codesmith_tools::sandbox::backend_from_name(name) {
        Err(e) => Finding::new(id, Status::Error, format!("[sandbox] backend = {name:?}: {e}"))
            .hint("install bubblewrap, or set [sandbox] backend = \"auto\" or \"none\" in config.toml"),
        Ok(b) if b.isolates() => {
            let net = if section.network.unwrap_or(false) { "network allowed" } else { "network off" };
            Finding::new(id, Status::Ok, format!("backend {} isolates shell commands (workspace writable, rest read-only, {net})", b.name()))
        }
        Ok(b) if required => Finding::new(id, Status::Error, format!("backend {} does not isolate, but [sandbox] required = true: shell commands will be refused", b.name()))
            .hint("install bubblewrap (Linux) so `auto` finds it, or set required = false"),
        Ok(b) => Finding::new(id, Status::Warn, format!("backend {} does not isolate: shell commands run with your full permissions", b.name()))
            .hint("install bubblewrap (Linux: sudo apt install bubblewrap) so the `auto` backend isolates; set [sandbox] required = true to refuse unconfined runs"),
    }
}

/// `mcp.servers`: MCP client servers are not configurable yet.
pub fn mcp() -> Finding {
    Finding::new(
        "mcp.servers",
        Status::Skip,
        "no MCP servers configured (MCP client support is not configurable yet)",
    )
}
