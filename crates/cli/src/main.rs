//! latch-cli: see the `cli` library crate.

fn main() {
    std::process::exit(cli::run());
}
