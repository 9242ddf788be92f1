//! What the binary says about itself besides --help: shell completions and man pages, generated
//! from the same clap definitions as --help (and `--version`, `args::VERSION`), so packaged docs
//! never drift from the binary they ship with.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode as ProcessExit;

use anyhow::Context;
use clap_complete::Shell;
use hive_orc_compactor::exit::ExitCode;

use super::args::Docs;

/// Prints or writes what `docs` asks for; `cmd` is the whole command line's definition.
pub fn run(docs: &Docs, cmd: clap::Command) -> ProcessExit {
    let result = match docs {
        Docs::Completions { shell } => completions(*shell, cmd),
        Docs::Man { out_dir: None } => man_page(cmd),
        Docs::Man { out_dir: Some(dir) } => man_pages(cmd, dir),
    };
    match result {
        Ok(()) => ProcessExit::SUCCESS,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", chain.join(": "));
            ProcessExit::from(ExitCode::Failed.code() as u8)
        }
    }
}

fn completions(shell: Shell, mut cmd: clap::Command) -> anyhow::Result<()> {
    // Rendered first: clap_complete panics when its writer fails (e.g. `| head`).
    let mut script = Vec::new();
    let name = cmd.get_name().to_owned();
    clap_complete::generate(shell, &mut cmd, name, &mut script);
    to_stdout(&script)
}

fn man_page(cmd: clap::Command) -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page)?;
    to_stdout(&page)
}

fn man_pages(cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the directory {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir)
        .with_context(|| format!("cannot write man pages to {}", dir.display()))
}

fn to_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::cli::args::{Cli, VERSION};

    fn subcommands() -> Vec<String> {
        Cli::command()
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect()
    }

    #[test]
    fn completions_name_every_subcommand_and_flag() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut script = Vec::new();
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "hive-orc-compactor",
                &mut script,
            );
            let script = String::from_utf8(script).unwrap();
            for name in subcommands()
                .iter()
                .map(String::as_str)
                .chain(["min-age", "dry-run"])
            {
                assert!(script.contains(name), "{shell} completions lack {name}");
            }
        }
    }

    #[test]
    fn man_pages_cover_every_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        man_pages(Cli::command(), dir.path()).unwrap();
        let main = std::fs::read_to_string(dir.path().join("hive-orc-compactor.1")).unwrap();
        assert!(main.contains("Exit codes"));
        for name in subcommands() {
            let page = dir.path().join(format!("hive-orc-compactor-{name}.1"));
            assert!(page.exists(), "no man page for {name}");
            assert!(
                main.contains(&name.replace('-', "\\-")),
                "main page lacks {name}"
            );
        }
        let compact =
            std::fs::read_to_string(dir.path().join("hive-orc-compactor-compact.1")).unwrap();
        assert!(compact.contains("\\-\\-dry\\-run"));
    }

    #[test]
    fn version_is_the_crate_version() {
        Cli::command().debug_assert();
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")));
        assert_eq!(Cli::command().get_version(), Some(VERSION));
    }
}
