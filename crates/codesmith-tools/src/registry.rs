//! The tool registry: a catalogue sorted by name, with deferred tools appended on demand.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use codesmith_protocol::ToolSpec;

use crate::Tool;

/// Which tools are deferred and which of them were activated, in activation order.
#[derive(Default)]
pub(crate) struct Deferral {
    pub(crate) deferred: BTreeSet<&'static str>,
    /// Names appended to the catalogue's tail, in order: activated deferred tools and
    /// tools added after the registry was built ([`LateTools`]).
    pub(crate) activated: Vec<&'static str>,
    /// Tools added after the registry was built (an MCP server's new tools).
    pub(crate) late: BTreeMap<&'static str, Arc<dyn Tool>>,
    /// Every name registered in the registries sharing this state (late ones aside): a
    /// late tool never takes one of them.
    pub(crate) registered: BTreeSet<&'static str>,
    /// Whether `tool_search` is registered, so a deferred late tool can be found.
    pub(crate) searchable: bool,
}

impl std::fmt::Debug for Deferral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferral")
            .field("deferred", &self.deferred)
            .field("activated", &self.activated)
            .field("late", &self.late.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Adds tools to a registry (and its clones) after it was built: each is appended at the
/// catalogue's tail, so the request only grows (as activating a deferred tool does).
/// Subagent registries made before ([`Registry::filtered`]) do not see them.
#[derive(Clone)]
pub struct LateTools(SharedDeferral);

impl std::fmt::Debug for LateTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LateTools")
    }
}

/// Where [`LateTools::add`] put a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateAdded {
    /// Appended to the catalogue's tail.
    Catalogue,
    /// Deferred: `tool_search` finds and loads it.
    Deferred,
}

impl LateTools {
    /// Adds `tool`: appended to the catalogue's tail, or, with `defer`, deferred (found
    /// and loaded by `tool_search`, as deferred start-up tools are).
    ///
    /// Errors (nothing changes): its registered name is taken (by a start-up tool, a
    /// built-in or another late tool), or `defer` is asked of a registry without
    /// `tool_search`. The message names the tool and why.
    pub fn add(&self, tool: Arc<dyn Tool>, defer: bool) -> Result<LateAdded, String> {
        let mut d = lock(&self.0);
        let name = tool.name();
        if d.late.contains_key(name) || d.registered.contains(name) {
            return Err(format!(
                "the name `{name}` is already taken by another tool"
            ));
        }
        if defer {
            if !d.searchable {
                return Err(format!(
                    "`{name}` would be deferred (the session holds more MCP tools than \
                     mcp_defer_threshold), but this session has no tool_search to load it; \
                     a new session defers it"
                ));
            }
            d.late.insert(name, tool);
            d.deferred.insert(name);
            return Ok(LateAdded::Deferred);
        }
        d.late.insert(name, tool);
        d.activated.push(name);
        Ok(LateAdded::Catalogue)
    }
}

/// Activation state shared by a registry, its clones and its `tool_search`.
pub(crate) type SharedDeferral = Arc<Mutex<Deferral>>;

pub(crate) fn lock(d: &SharedDeferral) -> MutexGuard<'_, Deferral> {
    d.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Registered tools, keyed and iterated by name (so the catalogue is sorted and byte-stable).
///
/// A deferred tool is registered (callable once activated, known to name repair) but not
/// sent: the catalogue is the resident tools sorted by name, then the activated deferred
/// tools in the order they were activated, so activating a tool only appends to it.
/// Clones share the activation state.
#[derive(Default, Clone)]
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<dyn Tool>>,
    deferral: SharedDeferral,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a tool, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name();
        self.tools.insert(name, tool);
        let mut d = lock(&self.deferral);
        d.deferred.remove(name);
        d.registered.insert(name);
    }

    /// Adds a deferred tool: callable only after `tool_search` activated it. Call
    /// [`Registry::enable_tool_search`] once every tool is registered.
    pub fn register_deferred(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name();
        self.tools.insert(name, tool);
        let mut d = lock(&self.deferral);
        d.deferred.insert(name);
        d.registered.insert(name);
    }

    /// Registers `tool_search` over the deferred tools, when there are any.
    pub fn enable_tool_search(&mut self) {
        let entries: Vec<(&'static str, &'static str)> = lock(&self.deferral)
            .deferred
            .iter()
            .filter_map(|n| self.tools.get(n).map(|t| (*n, t.description())))
            .collect();
        if entries.is_empty() {
            return;
        }
        let search = crate::deferred::ToolSearch::new(entries, self.deferral.clone());
        self.tools
            .insert(crate::deferred::TOOL_SEARCH, Arc::new(search));
        let mut d = lock(&self.deferral);
        d.searchable = true;
        d.registered.insert(crate::deferred::TOOL_SEARCH);
    }

    /// True when `name` is deferred and not activated: the model has not seen its schema.
    pub fn is_dormant(&self, name: &str) -> bool {
        let d = lock(&self.deferral);
        d.deferred.contains(name) && !d.activated.contains(&name)
    }

    /// Activates deferred tools by name (unknown, resident and already active names are
    /// skipped); returns the newly activated ones.
    pub fn activate(&self, names: &[String]) -> Vec<&'static str> {
        crate::deferred::activate(&self.deferral, names)
    }

    /// A new registry holding the tools `keep` accepts, with activation state of its own:
    /// its deferred tools start dormant again, and activating one never changes this
    /// registry's catalogue. `tool_search` is rebuilt over the kept deferred tools (and
    /// left out when none is kept). Subagents get their tool surface this way.
    pub fn filtered(&self, keep: impl Fn(&dyn Tool) -> bool) -> Registry {
        let deferred = lock(&self.deferral).deferred.clone();
        let mut out = Registry::new();
        for (name, tool) in &self.tools {
            if *name == crate::deferred::TOOL_SEARCH || !keep(tool.as_ref()) {
                continue;
            }
            if deferred.contains(name) {
                out.register_deferred(Arc::clone(tool));
            } else {
                out.register(Arc::clone(tool));
            }
        }
        out.enable_tool_search();
        out
    }

    /// The handle that appends tools to this registry (and its clones) later.
    pub fn late_tools(&self) -> LateTools {
        LateTools(self.deferral.clone())
    }

    /// The tool named exactly `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .get(name)
            .cloned()
            .or_else(|| lock(&self.deferral).late.get(name).cloned())
    }

    /// Registered names (deferred and late ones included), sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let late: Vec<&'static str> = lock(&self.deferral).late.keys().copied().collect();
        let mut names: Vec<&'static str> = self.tools.keys().copied().chain(late).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The catalogue sent to the model: resident tools sorted by name, then activated
    /// deferred tools in activation order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let d = lock(&self.deferral);
        let spec = |t: &Arc<dyn Tool>| ToolSpec {
            name: t.name().to_string(),
            description: t.description().to_string(),
            input_schema: t.input_schema(),
        };
        self.tools
            .iter()
            .filter(|(n, _)| !d.deferred.contains(*n))
            .map(|(_, t)| spec(t))
            .chain(
                d.activated
                    .iter()
                    .filter_map(|n| self.tools.get(n).or_else(|| d.late.get(n)))
                    .map(spec),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::FetchConfig;

    #[test]
    fn deferred_tools_are_sent_only_once_activated_and_only_appended() {
        let mut r = Registry::new();
        let mut tools = crate::builtin_tools(FetchConfig::default()).into_iter();
        let (a, b) = (tools.next(), tools.next());
        let (Some(a), Some(b)) = (a, b) else {
            panic!("builtin tools missing");
        };
        let (na, nb) = (a.name(), b.name());
        for t in tools {
            r.register(t);
        }
        r.register_deferred(a);
        r.register_deferred(b);
        r.enable_tool_search();
        let before = serde_json::to_string(&r.specs()).unwrap_or_default();
        assert!(before.contains("\"tool_search\""));
        assert!(r.is_dormant(na) && r.is_dormant(nb));
        assert!(
            r.names().contains(&na),
            "deferred names stay known to name repair"
        );
        assert_eq!(r.activate(&[nb.to_string(), "nope".into()]), vec![nb]);
        assert!(r.activate(&[nb.to_string()]).is_empty());
        let after = serde_json::to_string(&r.specs()).unwrap_or_default();
        let head = before.strip_suffix(']').unwrap_or_default();
        assert!(after.starts_with(head) && after.len() > before.len());
        assert!(!r.is_dormant(nb) && r.is_dormant(na));
        let specs = r.specs();
        assert_eq!(specs.last().map(|s| s.name.as_str()), Some(nb));
        let empty = Registry::new();
        let mut empty2 = empty.clone();
        empty2.enable_tool_search();
        assert!(empty2.get(crate::deferred::TOOL_SEARCH).is_none());
    }

    #[test]
    fn a_late_tool_never_takes_a_registered_name_and_defers_like_start_up_tools() {
        let mut r = Registry::new();
        let mut tools = crate::builtin_tools(FetchConfig::default()).into_iter();
        let (Some(a), Some(b), Some(c)) = (tools.next(), tools.next(), tools.next()) else {
            panic!("builtin tools missing");
        };
        let (nb, nc) = (b.name(), c.name());
        r.register(a.clone());
        let late = r.late_tools();
        // The registered name is taken: refused, the catalogue unchanged.
        let before = serde_json::to_string(&r.specs()).unwrap_or_default();
        let e = late.add(a.clone(), false).err().unwrap_or_default();
        assert!(e.contains("already taken"), "{e}");
        // Deferring needs tool_search; without it the tool is refused.
        assert!(
            late.add(b.clone(), true)
                .err()
                .unwrap_or_default()
                .contains("tool_search")
        );
        assert_eq!(
            serde_json::to_string(&r.specs()).unwrap_or_default(),
            before
        );
        // Appended, then refused a second time under the same name.
        assert_eq!(late.add(c.clone(), false), Ok(LateAdded::Catalogue));
        assert!(late.add(c, false).is_err());
        assert_eq!(r.specs().last().map(|s| s.name.as_str()), Some(nc));
        // With tool_search, a deferred late tool is sent only once a search loads it.
        let mut r2 = Registry::new();
        r2.register_deferred(a);
        r2.enable_tool_search();
        let late2 = r2.late_tools();
        assert_eq!(late2.add(b, true), Ok(LateAdded::Deferred));
        assert!(r2.is_dormant(nb));
        assert!(!r2.specs().iter().any(|s| s.name == nb));
        assert_eq!(r2.activate(&[nb.to_string()]), vec![nb]);
        assert_eq!(r2.specs().last().map(|s| s.name.as_str()), Some(nb));
    }
}
