//! corral-init: PID 1 of a linux sandbox. Started by the linux backend
//! only; see `corral_backend_linux::init`.

fn main() {
    // The same binary forwards a sandbox's preview ports (see
    // `corral_backend_linux::preview`).
    if let Some(code) = corral_backend_linux::preview::forwarder_main() {
        std::process::exit(code);
    }
    // And finishes destroyed sandboxes after their destroy answered (see
    // `corral_backend_linux::reaper_main`).
    if let Some(code) = corral_backend_linux::reaper_main() {
        std::process::exit(code);
    }
    std::process::exit(corral_backend_linux::init::main());
}
