//! The `conclave` binary: a thin shell over [`conclave_server::cli`].

fn main() -> std::process::ExitCode {
    conclave_server::cli::main(conclave_server::providers::ProviderRegistry::builtin())
}
