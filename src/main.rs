//! The `marvin` command line; see [`marvin::main`].

fn main() {
    std::process::exit(marvin::main());
}
