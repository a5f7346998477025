//! corral-e2b over the memory backend, spoken to with a hyper client.

mod control;
mod envd;
mod fsmove;
mod gzip;
mod harness;
mod ports;
mod tables;
mod watch;
