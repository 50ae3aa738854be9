//! dbduel's entry point: parse, run, exit with the code the run earned. Nothing else.

fn main() {
    std::process::exit(dbduel::cli::main());
}
