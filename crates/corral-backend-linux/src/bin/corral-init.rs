//! corral-init: PID 1 of a linux sandbox. Started by the linux backend
//! only; see `corral_backend_linux::init`.

fn main() {
    std::process::exit(corral_backend_linux::init::main());
}
