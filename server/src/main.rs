//! The `conclave` binary: a thin shell over [`conclave_server::cli`] with the built-in
//! providers.

fn main() -> std::process::ExitCode {
    conclave_server::cli::main(conclave_providers::builtin(conclave_server::SECRET_VARIABLES))
}
