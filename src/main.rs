//! The `tdsl` command: parse the command line, run the subcommand, map to an exit code.

/// mimalloc, not glibc's allocator: on a 40,000-step file the language server spent a third
/// of its time in glibc coalescing freed blocks (`malloc_consolidate`, `unlink_chunk`), a
/// share that grew with the heap (issue 28; `docs/performance.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tdsl::cli::main()
}
