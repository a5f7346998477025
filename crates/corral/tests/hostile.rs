//! Hostile cases through the real command line: each row is an attack and
//! the refusal corral must answer it with. One module per area.

#[path = "hostile/lifetime.rs"]
mod lifetime;
