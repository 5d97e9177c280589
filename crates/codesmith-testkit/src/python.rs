//! The Python interpreter that has the MCP SDK, for tests that drive CodeSmith with the
//! SDK's client or run one of its servers.

use std::path::PathBuf;

/// The virtual environment `scripts/dev-setup.sh` installs the Python MCP SDK into:
/// `<repository>/target/mcp-venv` (under `target/`, whatever `CARGO_TARGET_DIR` says, so a
/// fresh clone finds it beside the sources).
pub fn mcp_venv() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // crates/codesmith-testkit → the repository root.
    let root = manifest
        .parent()
        .and_then(|p| p.parent())
        .map_or_else(|| manifest.clone(), PathBuf::from);
    root.join("target").join("mcp-venv")
}

/// The interpreter to run MCP SDK code with: the virtual environment's `python3` when
/// [`mcp_venv`] exists, else `python3` from `PATH` (which may have the SDK in the user's
/// site-packages).
pub fn mcp_python() -> PathBuf {
    let venv = mcp_venv().join("bin").join("python3");
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}
