//! Where each effective setting came from, as `git config --show-origin` tells it.

use std::collections::BTreeMap;
use std::fmt;

/// The layer that set an effective value. Layers, lowest first: the built-in default,
/// the user config, the project config (which may only tighten), the environment,
/// then the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// No layer set it: the built-in default.
    Default,
    /// `$CODESMITH_HOME/config.toml`.
    User,
    /// `<workspace>/.codesmith/config.toml`, which raised a safety setting.
    ProjectTightened,
    /// `<workspace>/.codesmith/config.toml`, trusted on this machine (its hooks).
    ProjectTrusted,
    /// The named environment variable.
    Env(&'static str),
    /// The named command-line flag (`--model`).
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::User => f.write_str("user"),
            Origin::ProjectTightened => f.write_str("project (tightened)"),
            Origin::ProjectTrusted => f.write_str("project (trusted)"),
            Origin::Env(name) => write!(f, "env {name}"),
            Origin::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// The origin of every effective value, by dotted config key (`sandbox.required`,
/// `openai.base_url`). A key that no layer set is [`Origin::Default`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Origins(BTreeMap<String, Origin>);

impl Origins {
    /// Records that `key` came from `origin` (a later call for the same key wins:
    /// call it in layer order, lowest first).
    pub(crate) fn set(&mut self, key: impl Into<String>, origin: Origin) {
        self.0.insert(key.into(), origin);
    }

    /// Records `origin` for `key` when `present` (the layer set it).
    pub(crate) fn set_if(&mut self, present: bool, key: impl Into<String>, origin: Origin) {
        if present {
            self.set(key, origin);
        }
    }

    /// The origin of `key`; [`Origin::Default`] when no layer set it.
    pub(crate) fn of(&self, key: &str) -> Origin {
        self.0.get(key).copied().unwrap_or(Origin::Default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_read_as_git_config_show_origin_does() {
        assert_eq!(Origin::Default.to_string(), "default");
        assert_eq!(Origin::User.to_string(), "user");
        assert_eq!(Origin::ProjectTightened.to_string(), "project (tightened)");
        assert_eq!(
            Origin::Env("OPENAI_BASE_URL").to_string(),
            "env OPENAI_BASE_URL"
        );
        assert_eq!(Origin::Flag("--model").to_string(), "flag --model");
    }

    #[test]
    fn a_later_layer_wins_and_an_unset_key_is_default() {
        let mut origins = Origins::default();
        origins.set("approval", Origin::User);
        origins.set_if(false, "approval", Origin::Flag("--approval"));
        assert_eq!(origins.of("approval"), Origin::User);
        origins.set("approval", Origin::ProjectTightened);
        assert_eq!(origins.of("approval"), Origin::ProjectTightened);
        assert_eq!(origins.of("max_turns"), Origin::Default);
    }
}
