//! One module per sub-command.

pub mod doctor;
pub mod exec;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod policy;
pub mod sandbox;
pub mod sessions;
pub mod tool;
pub mod verify;

use crate::args::Command;
use crate::exit::Exit;

/// Runs a parsed sub-command.
pub async fn run(command: Command) -> Exit {
    match command {
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
        Command::Memory { command } => memory::run(command).await,
    }
}
