//! The built-in tool set, as the engine, `codesmith tool` and the MCP server register it.

use std::sync::Arc;

use crate::fetch::{FetchConfig, FetchUrl};
use crate::{Registry, Tool};

/// Every built-in tool, with `fetch_url` configured by `fetch` (network policy,
/// address policy, resolver). Sorted by name once registered.
pub fn builtin_tools(fetch: FetchConfig) -> Vec<Arc<dyn Tool>> {
    let mut tools = crate::files::file_tools();
    tools.extend(crate::shell::shell_tools());
    tools.push(Arc::new(FetchUrl::new(fetch)));
    tools.push(Arc::new(crate::memory::Remember));
    tools.push(Arc::new(crate::memory::Recall));
    tools.push(Arc::new(crate::skills::SkillTool));
    tools.push(Arc::new(crate::slop::SlopTool));
    tools
}

/// A registry holding [`builtin_tools`].
pub fn builtin_registry(fetch: FetchConfig) -> Registry {
    let mut registry = Registry::new();
    for tool in builtin_tools(fetch) {
        registry.register(tool);
    }
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_complete_sorted_and_byte_stable() {
        let a = builtin_registry(FetchConfig::default());
        let names = a.names();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for expected in [
            "apply_patch",
            "edit_file",
            "exec_shell",
            "fetch_url",
            "read_file",
            "retrieve_tool_result",
            "skill",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        let b = builtin_registry(FetchConfig::default());
        assert_eq!(
            serde_json::to_string(&a.specs()).ok(),
            serde_json::to_string(&b.specs()).ok()
        );
    }
}
