//! The `marvin` command line; see [`marvin::cli`].

fn main() {
    std::process::exit(marvin::cli::main());
}
