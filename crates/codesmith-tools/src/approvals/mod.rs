//! Approvals: the session cache and the persistent "always allow" grants.
//!
//! - [`SessionApprovals`]: a denial fingerprints the exact input; an approval of a shell
//!   command fingerprints its arity-aware prefixes, so approving `cargo build` covers
//!   `cargo build --release`. The shell keys are the policy crate's
//!   `denial_fingerprint`/`approval_fingerprint`; other tools use [`exact_fingerprint`].
//! - [`ApprovalStore`]: grants in `$CODESMITH_HOME/approvals.toml`, keyed by canonical
//!   workspace path, mode 0600, written atomically and merged with what is on disk, with
//!   tombstones so a grant removed elsewhere is not resurrected. Only shell prefixes, URL
//!   hosts, patch path sets and single MCP tools (server + tool) persist, never for a `Dangerous` command, and every stored
//!   grant is re-checked against the current request when consulted. A corrupt file
//!   degrades to an empty store with a warning.
//! - Every lock here recovers from poisoning: the data are plain sets with no invariant a
//!   panicking holder could break, and losing them would re-prompt forever.
//!
//! Approval mode `never` overrides every grant: the caller must not consult either cache in
//! that mode.

mod grant;
mod session;
mod store;

pub use grant::{Grant, exact_fingerprint, shell_grant, shell_grant_for};
pub use session::SessionApprovals;
pub use store::{APPROVALS_FILE, ApprovalError, ApprovalStore};
