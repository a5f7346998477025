//! Hostile rows of the network allowlist and the image store: a denied
//! connection is refused at once, a destination that can never be reached
//! is refused at create, and an image stays whole under the sandboxes
//! that run on it.

#[path = "images.rs"]
mod images;
#[path = "net.rs"]
mod net;
