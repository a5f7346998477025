//! The command line's integration tests, one binary: argument handling,
//! the commands, how `run` and `exec` end (`endings`), refusals of bad
//! input (`refusals`), the `corral` label of each front (`labels`), stdin
//! forwarding (`stdin_forwarding`), terminals driven through a pty
//! (`terminal`), gc, the kit, MCP, the remote backend, `corral serve`, the
//! wire conformance from the command line, and the hostile suite through
//! the real binary (`hostile`). The shared fixtures are `serve_support`
//! and `pty_support`.

mod pty_support;
mod serve_support;

mod args_in_process;
mod bench_cli;
mod bench_e2b;
mod binds;
mod cli;
mod conformance_wire;
mod docs_cli;
mod endings;
mod gc;
mod hostile;
mod image_pull;
mod kit_cli;
mod labels;
mod manage;
mod mcp;
mod refusals;
mod remote;
mod run_flags;
mod serve;
mod serve_tls;
mod stdin_forwarding;
mod terminal;
