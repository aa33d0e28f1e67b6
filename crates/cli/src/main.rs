//! The `abridge` binary: the command line over the built-in methods.

fn main() -> std::process::ExitCode {
    abridge_cli::main_with(abridge::MethodRegistry::builtin())
}
