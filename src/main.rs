//! The `tdsl` command: parse the command line, run the subcommand, map to an exit code.

fn main() -> std::process::ExitCode {
    tdsl::cli::main()
}
