//! The `corral` command.

fn main() {
    let code = corral::main_with_args(std::env::args_os().collect());
    std::process::exit(code);
}
