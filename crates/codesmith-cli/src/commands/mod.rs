//! One module per sub-command.

pub(crate) mod approvals;
pub(crate) mod config;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod policy;
pub(crate) mod sandbox;
pub(crate) mod sessions;
pub(crate) mod skills;
pub(crate) mod slop;
pub(crate) mod tool;
pub(crate) mod trust;
pub(crate) mod verify;

use crate::args::{Command, UiArgs};
use crate::exit::Exit;

/// Runs a parsed sub-command; none opens the terminal UI with `ui`.
pub(crate) async fn run(command: Option<Command>, ui: UiArgs) -> Exit {
    let Some(command) = command else {
        return crate::tui::run(ui, crate::tui::Start::New).await;
    };
    match command {
        Command::Resume(args) => crate::tui::run(args, crate::tui::Start::Latest).await,
        Command::Exec(args) => exec::run(args).await,
        Command::Tool(args) => tool::run(args).await,
        Command::Policy { command } => policy::run(command),
        Command::Verify { command } => verify::run(command),
        Command::Model { command } => model::run(command).await,
        Command::Sandbox { command } => match sandbox::run(command) {
            Ok(code) => Exit::Code(code),
            Err(exit) => exit,
        },
        Command::Mcp(args) => mcp::run(args).await,
        Command::Sessions { command } => sessions::run(command).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::Config { command } => config::run(command),
        Command::Memory { command } => memory::run(command).await,
        Command::Skills { command } => skills::run(command),
        Command::Slop { command } => slop::run(command),
        Command::Trust { what } => trust::run(what),
        Command::Approvals { command } => approvals::run(command),
    }
}
