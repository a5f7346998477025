//! One file per subcommand.

pub mod attach_mode;
pub mod bench;
pub mod conformance;
pub mod conformance_wire;
pub mod cp;
pub mod create;
pub mod creator;
pub mod ending_signals;
pub mod evidence;
pub mod exec;
pub mod gc;
pub mod image;
pub mod kit;
pub mod ls;
pub mod mcp;
pub mod rm;
pub mod run;
pub mod serve;
pub mod serve_security;
mod shared;
pub mod shell;
pub mod stdin_exec;
pub mod stdin_feed;
pub mod terminal_session;
pub mod tty;
