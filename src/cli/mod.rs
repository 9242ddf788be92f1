//! The command-line wing of the binary: what a user types turned into what the engine runs.
//! `args` defines the commands and flags (clap), `parse` checks their values, `settings` reads
//! the TOML config file, `layouts` makes `compact`'s row orders and codecs, `options` resolves
//! flags, environment and config file into the engine's option structs, `on_yarn` makes the
//! job of `compact --on-yarn` (and the settings file its tasks read), and `docs` prints
//! completions and man pages. The engine (the library crate) knows nothing of any of it.

mod args;
mod docs;
mod layouts;
mod on_yarn;
mod options;
mod parse;
mod settings;

use std::process::ExitCode as ProcessExit;

use clap::{ArgMatches, CommandFactory, FromArgMatches};

pub use args::{Cli, Command, Global, LogFormat};
pub use options::{CommandOptions, IcebergOptions, Options};

/// The command line, parsed; exits as clap does on a usage error, `--help` or `--version`.
pub fn parse() -> (Cli, ArgMatches) {
    let matches = Cli::command().get_matches();
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => (cli, matches),
        Err(e) => e.exit(),
    }
}

/// `completions` and `man`: printed from the same definitions as `--help`.
pub fn print_docs(docs: &args::Docs) -> ProcessExit {
    docs::run(docs, Cli::command())
}
