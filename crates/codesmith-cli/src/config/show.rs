//! Every effective setting with its origin: what `codesmith config show` and
//! `codesmith doctor` print. Secrets (API keys, MCP header and environment values) are
//! shown only as set or not set; a secret inside any other value (a URL's userinfo, an
//! argument) is redacted.

use serde_json::{Value, json};

use super::{Origin, Settings};
use crate::args::ProviderName;

/// What a redacted secret shows in place of its value.
pub(super) const REDACTED: &str = "<redacted>";

/// One effective value: its dotted config key, its value (as JSON: a string, number,
/// boolean, array or null for "not set") and the layer that set it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shown {
    /// Dotted key as written in config.toml (`sandbox.required`, `openai.base_url`).
    pub key: String,
    /// The effective value; secrets are [`REDACTED`].
    pub value: Value,
    /// The layer it came from.
    pub origin: Origin,
}

impl Shown {
    /// `origin<TAB>key = value`, the shape of `git config --show-origin`'s lines.
    pub(crate) fn line(&self, origin_width: usize) -> String {
        let value = match &self.value {
            Value::Null => "(not set)".to_string(),
            other => other.to_string(),
        };
        let origin = self.origin.to_string();
        format!("{origin:<origin_width$}  {} = {value}", self.key)
    }

    /// `{"key": ..., "value": ..., "origin": ...}`.
    pub(crate) fn to_json(&self) -> Value {
        json!({"key": self.key, "value": self.value, "origin": self.origin.to_string()})
    }
}

/// Every effective value of `settings`, in a fixed order (the order of the README's
/// Configuration section), with its origin. Keys of the other vendor are left out.
pub(crate) fn show(settings: &Settings) -> Vec<Shown> {
    let mut out = Vec::new();
    let mut add = |key: &str, value: Value| {
        out.push(Shown {
            key: key.to_string(),
            value,
            origin: settings.origins.of(key),
        });
    };
    let s = settings;
    add("home", json!(s.home.display().to_string()));
    add("workspace", json!(s.workspace.display().to_string()));
    add("provider", json!(crate::setup::provider_label(s.provider)));
    add("model", json!(s.model));
    let vendor = crate::setup::provider_label(s.provider);
    let default_url = match s.provider {
        ProviderName::Openai => Some(codesmith_providers::DEFAULT_OPENAI_BASE_URL),
        ProviderName::Anthropic => Some(codesmith_providers::DEFAULT_ANTHROPIC_BASE_URL),
        ProviderName::Local => None,
    };
    if let Some(default_url) = default_url {
        let url = s.base_url.as_deref().unwrap_or(default_url);
        add(&format!("{vendor}.base_url"), json!(url));
        let key = s.api_key.as_ref().map(|_| json!(REDACTED));
        add(&format!("{vendor}.api_key"), key.unwrap_or(Value::Null));
        add(&format!("{vendor}.images"), json!(s.images));
    }
    if s.provider == ProviderName::Openai {
        use codesmith_providers::ReasoningReplay;
        let replay = match s.reasoning_replay {
            ReasoningReplay::Auto => "auto",
            ReasoningReplay::Always => "always",
            ReasoningReplay::Never => "never",
        };
        add("openai.reasoning_replay", json!(replay));
        add(
            "openai.prompt_cache_key",
            s.prompt_cache_key
                .map_or(json!("vendor default"), |b| json!(b)),
        );
    }
    add("approval", json!(s.approval.as_str()));
    add("max_turns", json!(s.max_turns));
    let window = match s.context.source {
        codesmith_engine::WindowSource::Table => {
            json!(format!("{} (built-in table)", s.context.window))
        }
        codesmith_engine::WindowSource::Guess => json!(format!("{} (a guess)", s.context.window)),
        _ => json!(s.context.window),
    };
    add("context_window", window);
    add("compact_at", json!(s.context.compact_at_percent));
    add("stream_idle_timeout_secs", json!(s.idle_timeout.as_secs()));
    add(
        "max_output_tokens",
        match crate::setup::max_tokens(s) {
            Some(n) => json!(n),
            None => json!("provider default"),
        },
    );
    add(
        "sandbox.backend",
        json!(s.sandbox.backend.as_deref().unwrap_or("auto")),
    );
    add("sandbox.required", json!(s.sandbox.required_in_sessions()));
    add("sandbox.network", json!(s.sandbox.network.unwrap_or(false)));
    add(
        "sandbox.read",
        json!(s.sandbox.read.clone().unwrap_or_default()),
    );
    add(
        "sandbox.write",
        json!(s.sandbox.write.clone().unwrap_or_default()),
    );
    add(
        "sandbox.env",
        json!(s.sandbox.env.clone().unwrap_or_default()),
    );
    let network = &s.network;
    let network_origin = |key: &str, set: bool| Shown {
        key: key.to_string(),
        value: Value::Null,
        origin: if set {
            settings.origins.of("network")
        } else {
            Origin::Default
        },
    };
    for (key, set, value) in [
        (
            "network.default",
            network.default.is_some(),
            json!(s.fetch.policy.default_decision().as_str()),
        ),
        (
            "network.allow",
            !network.allow.is_empty(),
            json!(network.allow),
        ),
        (
            "network.deny",
            !network.deny.is_empty(),
            json!(network.deny),
        ),
        (
            "network.trusted_fakeip_cidrs",
            !network.trusted_fakeip_cidrs.is_empty(),
            json!(network.trusted_fakeip_cidrs),
        ),
    ] {
        out.push(Shown {
            value,
            ..network_origin(key, set)
        });
    }
    let mut add = |key: &str, value: Value| {
        out.push(Shown {
            key: key.to_string(),
            value,
            origin: settings.origins.of(key),
        });
    };
    add("verification.result_claims", json!(s.verify_claims));
    add("verification.slop", json!(s.slop_from_verdicts));
    add("trust.read", json!(s.trust_read));
    add("early_start", json!(s.early_start));
    add(
        "web_search.backend",
        s.web_search.as_ref().map_or(json!("none"), |w| {
            json!(format!("{} at {}", w.backend.name(), w.url))
        }),
    );
    add("snapshots.enabled", json!(s.snapshots));
    add("mcp_defer_threshold", json!(s.mcp_defer_threshold));
    add("agents.model", json!(s.agents.model));
    add("agents.max_turns", json!(s.agents.max_turns));
    add("agents.max_wall_secs", json!(s.agents.max_wall.as_secs()));
    let u = s.utility.as_ref();
    add(
        "utility_model.provider",
        json!(u.map(|u| crate::setup::provider_label(u.provider))),
    );
    add("utility_model.model", json!(u.map(|u| u.model.clone())));
    add(
        "utility_model.base_url",
        json!(u.and_then(|u| u.base_url.clone())),
    );
    add(
        "utility_model.api_key_env",
        json!(u.and_then(|u| u.api_key_env.clone())),
    );
    let notify = &s.notifications;
    add(
        "notifications.when",
        json!(match notify.when {
            super::NotifyWhen::Unfocused => "unfocused",
            super::NotifyWhen::Always => "always",
            super::NotifyWhen::Never => "never",
        }),
    );
    add(
        "notifications.method",
        json!(match notify.method {
            super::NotifyMethod::Bell => "bell",
            super::NotifyMethod::Osc9 => "osc9",
            super::NotifyMethod::Osc777 => "osc777",
        }),
    );
    for (name, server) in &s.mcp_servers {
        let origin = settings.origins.of(&format!("mcp_servers.{name}"));
        let mut item = |field: &str, value: Value| {
            out.push(Shown {
                key: format!("mcp_servers.{name}.{field}"),
                value,
                origin,
            });
        };
        if let Some(url) = &server.url {
            item("url", json!(url));
        } else {
            item("command", json!(server.command));
            if !server.args.is_empty() {
                item("args", json!(redact_flag_values(&server.args)));
            }
        }
        for header in server.headers.keys() {
            item(&format!("headers.{header}"), json!(REDACTED));
        }
        for var in server.env.keys() {
            item(&format!("env.{var}"), json!(REDACTED));
        }
        if let Some(var) = &server.bearer_token_env_var {
            item("bearer_token_env_var", json!(var));
        }
        item("enabled", json!(server.enabled.unwrap_or(true)));
        item("trusted", json!(server.trusted.unwrap_or(false)));
        if server.url.is_none() {
            item("trusted_cwd", json!(server.is_trusted_cwd()));
        }
    }
    for event in codesmith_tools::hooks::HookEvent::ALL {
        let hooks: Vec<Value> = s
            .hooks
            .all()
            .iter()
            .filter(|h| h.event == event)
            .map(|h| {
                json!({
                    "matcher": h.matcher_text(),
                    "command": redact_flag_values(&h.command),
                    "timeout_secs": h.timeout.as_secs(),
                    "env": h.env,
                    "source": match h.source {
                        codesmith_tools::hooks::HookSource::User => "user",
                        codesmith_tools::hooks::HookSource::Project => "project",
                    },
                })
            })
            .collect();
        if !hooks.is_empty() {
            out.push(Shown {
                key: format!("hooks.{}", event.as_str()),
                value: Value::Array(hooks),
                origin: settings.origins.of(&format!("hooks.{}", event.as_str())),
            });
        }
    }
    // A secret can hide in any value a user writes, not only in the fields named for
    // one: a password in a base URL's or an MCP URL's userinfo, a key in its query, a
    // token among an MCP server's arguments. Every shown string is scrubbed.
    for shown in &mut out {
        scrub_value(&mut shown.value);
    }
    out
}

/// `args` with the value after a flag named for a secret (`--token X`, `--api-key X`,
/// `--password X`: the names [`codesmith_policy::is_secret_env_name`] takes for one)
/// replaced by [`REDACTED`]: a value of no known token shape in its own argument is
/// found by no scrubber, only by the flag in front of it.
fn redact_flag_values(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        if std::mem::take(&mut hide_next) {
            out.push(REDACTED.to_string());
            continue;
        }
        if let Some(name) = arg.strip_prefix('-') {
            let name = name.trim_start_matches('-');
            hide_next = !name.is_empty()
                && !name.contains('=')
                && codesmith_policy::is_secret_env_name(name);
        }
        out.push(arg.clone());
    }
    out
}

/// Replaces what [`codesmith_policy::scrub_secrets`] takes for a secret in every string
/// of `value` (arrays and objects walked).
fn scrub_value(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(clean) = codesmith_policy::scrub_secrets(text) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(map) => map.values_mut().for_each(scrub_value),
        _ => {}
    }
}

/// The text of `codesmith config show`: one line per value, origins in one column.
pub(crate) fn to_text(shown: &[Shown]) -> String {
    let width = shown
        .iter()
        .map(|s| s.origin.to_string().len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for s in shown {
        text.push_str(&s.line(width));
        text.push('\n');
    }
    text
}
