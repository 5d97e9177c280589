//! The deterministic checks. Each returns findings; none prints, none changes anything
//! (except the probe cache under `$CODESMITH_HOME`).

use std::path::{Path, PathBuf};

use codesmith_local::fetch::{CONVERTED_FILE, MODEL_SHA256, ORIGINAL_FILE, models_dir};

use super::probe::{self, ProbeCache};
use super::report::{Finding, Status};
use crate::args::ProviderName;
use crate::config::{self, FileConfig, SandboxSection, Settings};

/// What the checks look at, gathered once.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
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
pub(crate) fn version() -> Finding {
    Finding::new(
        "version",
        Status::Ok,
        format!("codesmith {}", env!("CARGO_PKG_VERSION")),
    )
}

/// `config.user`: the user config parses.
pub(crate) fn user_config(home: &Path) -> (Finding, Option<FileConfig>) {
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

/// `config.project`: the project config parses and only tightens. Read by the same
/// project layer that resolution uses, so what it reports ignored is what is ignored.
pub(crate) fn project_config(workspace: Option<&Path>, home: &Path) -> Finding {
    let Some(ws) = workspace else {
        return Finding::new("config.project", Status::Skip, "no workspace to check");
    };
    let layer = config::ProjectLayer::load(ws, home);
    let Some(path) = layer.path else {
        return Finding::new(
            "config.project",
            Status::Ok,
            "no project config (.codesmith/config.toml)",
        );
    };
    if layer.notes.is_empty() {
        return Finding::new(
            "config.project",
            Status::Ok,
            format!("{} parses", path.display()),
        );
    }
    Finding::new("config.project", Status::Warn, layer.notes.join("; ")).hint(
        "move these keys to the user config $CODESMITH_HOME/config.toml (a project may only \
         tighten `approval` and `sandbox`), or fix the file's TOML",
    )
}

/// `config.policy`: the exec-policy rule files parse (read as resolution reads them).
pub(crate) fn policy(home: &Path, workspace: Option<&Path>) -> Finding {
    let Some(ws) = workspace else {
        return Finding::new("config.policy", Status::Skip, "no workspace to check");
    };
    let project = config::project_dir(ws, home).map(|d| d.join("policy.toml"));
    if !home.join("policy.toml").is_file() && !project.is_some_and(|p| p.is_file()) {
        return Finding::new(
            "config.policy",
            Status::Ok,
            "no exec-policy rule files (built-in rules apply)",
        );
    }
    let mut notes = Vec::new();
    match config::load_rules(home, ws, &mut notes) {
        Err(e) => Finding::new("config.policy", Status::Error, format!("{e:#}")).hint(
            "fix policy.toml (user: $CODESMITH_HOME/policy.toml, project: .codesmith/policy.toml)",
        ),
        Ok(_) if !notes.is_empty() => Finding::new("config.policy", Status::Warn, notes.join("; "))
            .hint("remove the ignored rules, or move allow rules to the user policy.toml"),
        Ok(_) => Finding::new("config.policy", Status::Ok, "exec-policy rule files parse"),
    }
}

/// `config.sources`: every effective value and the layer that set it (as `codesmith
/// config show` prints them; secrets redacted).
pub(crate) fn sources(settings: Option<&Settings>) -> Finding {
    let Some(settings) = settings else {
        return Finding::new(
            "config.sources",
            Status::Skip,
            "the configuration did not resolve (see the findings above)",
        );
    };
    let parts: Vec<String> = config::show(settings)
        .iter()
        .map(|s| format!("{} = {} ({})", s.key, s.value, s.origin))
        .collect();
    Finding::new("config.sources", Status::Ok, parts.join("; "))
}

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// `keys.openai` and `keys.anthropic`: where a key would come from (values never shown).
pub(crate) fn keys(inputs: &Inputs) -> Vec<Finding> {
    keys_with(inputs, &env_set)
}

/// [`keys`] with `is_set(NAME)` standing for "the environment variable NAME is set and not
/// blank". The variables are the ones the client reads for the endpoint, in its order
/// (`config::key_vars`), so the first source listed is the one that wins.
fn keys_with(inputs: &Inputs, is_set: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let file = inputs.file.clone().unwrap_or_default();
    let vendors = [
        (ProviderName::Openai, "openai", file.openai.as_ref()),
        (
            ProviderName::Anthropic,
            "anthropic",
            file.anthropic.as_ref(),
        ),
    ];
    vendors
        .into_iter()
        .map(|(name, label, section)| {
            let id = format!("keys.{label}");
            let selected = inputs.provider == name;
            let endpoint = if selected {
                inputs.base_url.as_deref()
            } else {
                None
            };
            let vars = config::key_vars(name, endpoint);
            let mut found: Vec<String> = vars
                .iter()
                .filter(|v| is_set(v))
                .map(|v| format!("${v}"))
                .collect();
            if section
                .and_then(|s| s.api_key.as_deref())
                .is_some_and(|k| !k.trim().is_empty())
            {
                found.push(format!("[{label}] api_key in config.toml"));
            }
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
pub(crate) async fn embedded_model(inputs: &Inputs) -> Finding {
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
pub(crate) async fn tools(home: &Path, workspace: &Path) -> Vec<Finding> {
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
        let f = match probe::resolve(candidates, &mut cache, workspace).await {
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

/// `sandbox.*`: what really happens to shell commands on this machine, item by item.
///
/// - `sandbox.bwrap`: bubblewrap missing (install it), installed but unable to create its
///   namespaces here (a container or kernel setting), or working (with or without a user
///   namespace).
/// - `sandbox.backend`: the effective backend and what `required` makes of it: commands
///   isolated, refused (`DENIED`), or run bare.
/// - `sandbox.caps`, `.userns`, `.git_readonly`, `.masks`, `.host_sockets`, `.bounds`:
///   the self-test's items, observed by running a probe under the backend.
/// - `sandbox.dumpable`: whether this process is non-dumpable.
pub(crate) fn sandbox(section: &SandboxSection) -> Vec<Finding> {
    use codesmith_tools::sandbox::{BwrapProbe, probe};
    let mut out = Vec::new();
    if cfg!(target_os = "linux") {
        out.push(match probe() {
            BwrapProbe::NotInstalled => Finding::new(
                "sandbox.bwrap",
                Status::Warn,
                "bwrap is not installed: shell commands cannot be isolated",
            )
            .hint("apt-get install bubblewrap (or dnf install bubblewrap)"),
            BwrapProbe::Broken { program, reason } => Finding::new(
                "sandbox.bwrap",
                Status::Warn,
                format!(
                    "bwrap is installed ({}) but does not work here: {reason}",
                    program.display()
                ),
            )
            .hint(
                "the host forbids the namespaces bwrap needs (often a container without \
                 --privileged or with a seccomp profile, or kernel.unprivileged_userns_clone=0 \
                 for a non-root user); run codesmith where namespaces are allowed",
            ),
            BwrapProbe::Works { program, features } => Finding::new(
                "sandbox.bwrap",
                Status::Ok,
                format!(
                    "bwrap works ({}): capabilities dropped, {}",
                    program.display(),
                    if features.userns {
                        "user namespace with an unprivileged uid"
                    } else {
                        "no user namespace here (the kernel or container forbids it)"
                    }
                ),
            ),
        });
    }
    let name = section.backend.as_deref().unwrap_or("auto");
    let required = section.required_in_sessions();
    let net = if section.network.unwrap_or(false) {
        "network allowed"
    } else {
        "network off"
    };
    let backend = match codesmith_tools::sandbox::backend_from_name(name) {
        Err(e) => {
            out.push(
                Finding::new(
                    "sandbox.backend",
                    Status::Error,
                    format!("[sandbox] backend = {name:?}: {e}"),
                )
                .hint("install bubblewrap, or set [sandbox] backend = \"auto\" or \"none\" in config.toml"),
            );
            out.push(dumpable());
            return out;
        }
        Ok(b) => b,
    };
    out.push(if backend.isolates() {
        Finding::new(
            "sandbox.backend",
            Status::Ok,
            format!(
                "backend {} isolates shell commands (workspace writable, system read-only, {net})",
                backend.name()
            ),
        )
    } else if required {
        Finding::new(
            "sandbox.backend",
            Status::Error,
            format!(
                "backend {} does not isolate and [sandbox] required = true: exec_shell and \
                 task_shell_start refuse every command (DENIED)",
                backend.name()
            ),
        )
        .hint("install bubblewrap (apt-get install bubblewrap), or set required = false under [sandbox] in config.toml")
    } else {
        Finding::new(
            "sandbox.backend",
            Status::Warn,
            format!(
                "backend {} does not isolate: shell commands run with your full permissions",
                backend.name()
            ),
        )
        .hint("install bubblewrap (apt-get install bubblewrap) so the `auto` backend isolates; set [sandbox] required = true to refuse unconfined runs")
    });
    if backend.isolates() {
        match codesmith_tools::sandbox::self_test(backend.as_ref()) {
            Ok(items) => {
                for item in items {
                    // A user namespace is extra depth; the host may forbid it.
                    let failing = if item.id == "userns" {
                        Status::Warn
                    } else {
                        Status::Error
                    };
                    let f = Finding::new(
                        &format!("sandbox.{}", item.id),
                        if item.holds { Status::Ok } else { failing },
                        item.detail,
                    );
                    out.push(if item.holds {
                        f
                    } else {
                        f.hint(self_test_hint(item.id))
                    });
                }
            }
            Err(e) => out.push(
                Finding::new(
                    "sandbox.selftest",
                    Status::Error,
                    format!("the sandbox self-test did not run: {e}"),
                )
                .hint("run `codesmith sandbox run -- true` to see the error"),
            ),
        }
    }
    out.push(exposure(section, backend));
    out.push(dumpable());
    out
}

/// `sandbox.exposure`: the host uid commands run as and how much they see, from the same
/// command line the backend builds ([`codesmith_tools::sandbox::explain`]).
fn exposure(
    section: &SandboxSection,
    backend: std::sync::Arc<dyn codesmith_tools::sandbox::Backend>,
) -> Finding {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let extra = match section.extra(home.as_deref()) {
        Ok(e) => e,
        Err(e) => {
            return Finding::new("sandbox.exposure", Status::Error, e.to_string())
                .hint("fix [sandbox] read, write or env in config.toml");
        }
    };
    let workspace = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .unwrap_or_else(|_| std::path::PathBuf::from("/"));
    let sandbox = codesmith_tools::sandbox::Sandbox::new(backend, section.network.unwrap_or(false))
        .with_extra(extra.clone());
    let scope = codesmith_tools::sandbox::Scope {
        workspace: workspace.clone(),
        cwd: workspace,
        user_home: home,
        codesmith_home: None,
        network: sandbox.network,
        extra,
    };
    match codesmith_tools::sandbox::explain(&sandbox, &scope) {
        Ok(e) if e.isolates => Finding::new(
            "sandbox.exposure",
            if e.host_uid == 0 {
                Status::Error
            } else {
                Status::Ok
            },
            format!(
                "commands run as host uid {}, see {} mounted paths (nothing else), get {} \
                 environment variables ({}), and {} system calls are refused",
                e.host_uid,
                e.paths.len(),
                e.env.len(),
                e.env.join(" "),
                e.syscalls_refused.len() + e.syscalls_refused_with_arguments.len()
            ),
        )
        .hint("`codesmith sandbox explain` lists every path with its access"),
        Ok(e) => Finding::new(
            "sandbox.exposure",
            Status::Warn,
            format!(
                "commands see everything your user can (uid {}); they get {} environment \
                 variables ({})",
                e.host_uid,
                e.env.len(),
                e.env.join(" ")
            ),
        )
        .hint("install bubblewrap so commands see only the sandbox's allowlist"),
        Err(e) => Finding::new(
            "sandbox.exposure",
            Status::Error,
            format!("the sandbox cannot be set up here: {e}"),
        )
        .hint("run `codesmith sandbox explain` to see the error"),
    }
}

fn self_test_hint(id: &str) -> &'static str {
    match id {
        "userns" => {
            "the kernel or container forbids user namespaces; capabilities are still dropped"
        }
        "bounds" => {
            "run as root with a writable cgroup (v1 pids/memory, or v2 with delegation), or as a non-root user"
        }
        _ => {
            "this bwrap does not hold here; report it, and set [sandbox] required = true to refuse commands meanwhile"
        }
    }
}

/// `sandbox.dumpable`: the harness is non-dumpable, so a command run bare as another user
/// cannot read its environment (keys) through `/proc`.
fn dumpable() -> Finding {
    if codesmith_tools::sandbox::is_non_dumpable() {
        Finding::new(
            "sandbox.dumpable",
            Status::Ok,
            "codesmith is non-dumpable: its /proc environ and memory are readable by root only",
        )
    } else {
        Finding::new(
            "sandbox.dumpable",
            Status::Warn,
            "codesmith could not mark itself non-dumpable",
        )
        .hint("only Linux supports prctl(PR_SET_DUMPABLE); keep keys out of the environment of untrusted commands")
    }
}

/// `keys.config_mode`: a `config.toml` that holds an API key is readable by its owner only
/// (mode 0600).
pub(crate) fn config_mode(home: &Path, file: Option<&FileConfig>) -> Option<Finding> {
    use std::os::unix::fs::PermissionsExt;
    let file = file?;
    let has_key = [file.openai.as_ref(), file.anthropic.as_ref()]
        .iter()
        .flatten()
        .any(|s| s.api_key.as_deref().is_some_and(|k| !k.trim().is_empty()));
    if !has_key {
        return None;
    }
    let path = home.join("config.toml");
    let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
    Some(if mode & 0o077 == 0 {
        Finding::new(
            "keys.config_mode",
            Status::Ok,
            format!("config.toml holds a key and is private (mode {mode:o})"),
        )
    } else {
        Finding::new(
            "keys.config_mode",
            Status::Warn,
            format!(
                "config.toml holds an API key and is readable by others (mode {mode:o})"
            ),
        )
        .hint(format!(
            "chmod 600 {} — or better, move the key to the environment (OPENAI_API_KEY / ANTHROPIC_API_KEY)",
            path.display()
        ))
    })
}

/// `mcp.NAME`: each configured MCP server starts and lists its tools (`mcp.servers`
/// skipped when none is configured or the configuration did not resolve).
pub(crate) async fn mcp(settings: Option<&Settings>) -> Vec<Finding> {
    let Some(settings) = settings.filter(|s| !s.mcp_servers.is_empty()) else {
        return vec![Finding::new(
            "mcp.servers",
            Status::Skip,
            "no MCP servers configured",
        )];
    };
    let start = crate::setup::mcp_servers(settings).await;
    start
        .servers
        .iter()
        .map(|s| {
            let id = format!("mcp.{}", s.name);
            match (&s.error, s.state) {
                (Some(e), _) => Finding::new(&id, Status::Error, format!("does not start: {e}"))
                    .hint("run its command by hand (or open its url) to see why, or set enabled = false under [mcp_servers]"),
                (None, "disabled") => Finding::new(&id, Status::Skip, "disabled"),
                (None, _) => Finding::new(&id, Status::Ok, format!("starts with {} tools", s.tools.len())),
            }
        })
        .collect()
}

/// `raw` as doctor prints it: no userinfo, every query value `[REDACTED]` (only the names
/// shown), no fragment; a URL that does not parse is not printed at all.
fn shown_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        return "(a URL that does not parse)".into();
    };
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let names: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
    url.set_query(None);
    url.set_fragment(None);
    let mut shown = url.to_string();
    if !names.is_empty() {
        let pairs: Vec<String> = names
            .iter()
            .map(|k| format!("{k}={}", codesmith_policy::REDACTED))
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    codesmith_policy::scrub_secrets(&shown).into_owned()
}

/// The `web_search` tool: its backend when one is configured, else how to enable it.
pub(crate) fn web_search(settings: Option<&Settings>) -> Finding {
    match settings.and_then(|s| s.web_search.as_ref()) {
        Some(w) => Finding::new(
            "web_search",
            Status::Ok,
            format!(
                "{} at {} (calls go through the [network] policy)",
                w.backend.name(),
                shown_url(w.url.as_str())
            ),
        ),
        None => Finding::new(
            "web_search",
            Status::Skip,
            "no [web_search] backend configured: the web_search tool is not offered",
        )
        .hint(
            "add [web_search] backend = \"searxng\" with url = \"http://HOST:PORT\" (a SearXNG \
             instance with format=json enabled) to config.toml, or backend = \"brave\" (key in \
             BRAVE_API_KEY) or \"tavily\" (key in TAVILY_API_KEY)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_url_is_shown_without_credentials() {
        let shown = shown_url(
            "http://user:SuperSecret1@127.0.0.1:8888/search?token=SuperSecret2&k=SuperSecret3#x",
        );
        assert_eq!(
            shown,
            "http://127.0.0.1:8888/search?token=[REDACTED]&k=[REDACTED]"
        );
        assert_eq!(shown_url("https://s.example/"), "https://s.example/");
        assert!(!shown_url("not a url SuperSecret").contains("Secret"));
    }

    fn inputs(provider: ProviderName, base_url: Option<&str>) -> Inputs {
        Inputs {
            home: PathBuf::from("/nonexistent"),
            file: None,
            provider,
            model: "m".into(),
            base_url: base_url.map(str::to_string),
            sandbox: SandboxSection::default(),
        }
    }

    fn openai(found: &[Finding]) -> &Finding {
        found
            .iter()
            .find(|f| f.id == "keys.openai")
            .expect("keys.openai")
    }

    #[test]
    fn a_deepseek_endpoint_lists_its_own_variable_first() {
        let both = |v: &str| v == "OPENAI_API_KEY" || v == "DEEPSEEK_API_KEY";
        let found = keys_with(
            &inputs(ProviderName::Openai, Some("https://api.deepseek.com")),
            &both,
        );
        let f = openai(&found);
        assert_eq!(f.status, Status::Ok);
        assert!(
            f.summary.contains("used: $DEEPSEEK_API_KEY"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn openais_endpoint_does_not_count_a_deepseek_key() {
        let deepseek_only = |v: &str| v == "DEEPSEEK_API_KEY";
        let found = keys_with(
            &inputs(ProviderName::Openai, Some("https://api.openai.com/v1")),
            &deepseek_only,
        );
        let f = openai(&found);
        assert_eq!(f.status, Status::Error, "{}", f.summary);
    }
}
