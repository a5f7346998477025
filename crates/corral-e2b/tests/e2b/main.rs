//! corral-e2b over the memory backend, spoken to with a hyper client.

mod attach;
mod control;
mod envd;
mod fsmove;
mod gzip;
mod harness;
mod pooled;
mod ports;
mod pty;
mod restart;
mod tables;
mod watch;
