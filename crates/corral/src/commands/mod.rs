//! One file per subcommand.

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
pub mod lifecycle;
pub mod logs;
pub mod ls;
pub mod mcp;
pub mod preview;
pub mod ps;
pub mod rm;
pub mod run;
pub mod serve;
mod shared;
pub mod start;
mod table;
