//! `rootfence completions <shell>` and `rootfence man`: shell completion scripts and man
//! pages generated from the clap definition, so they never drift from the real options.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// `rootfence completions <shell>`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Install, for example:
  rootfence completions bash > ~/.local/share/bash-completion/completions/rootfence
  rootfence completions zsh  > ~/.zfunc/_rootfence      # with fpath+=(~/.zfunc) in .zshrc
  rootfence completions fish > ~/.config/fish/completions/rootfence.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `rootfence man`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  rootfence man | man -l -
  rootfence man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write rootfence.1 and one page per subcommand (rootfence-wrap.1, ...) into DIR
    /// instead of printing rootfence.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "rootfence", &mut out);
    write_stdout(&out)
}

pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
            rootfence::stderr_line!("rootfence: man pages written to {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .context("cannot render the man page")?;
            write_stdout(&out)
        }
    }
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}
