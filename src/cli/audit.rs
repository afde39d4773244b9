//! `rootfence audit verify|summary|show|report|keygen` (issues 5, 15, 29): thin front ends over the
//! readers and the checkpoint keys in `rootfence::audit`.
//!
//! Exit codes of `verify`: 0 the chain is intact and the log ends with a `session_end`;
//! 1 the chain is broken (tampering or corruption; the first bad record is named);
//! 3 the chain is intact but the log is incomplete (a torn final line, it does not end
//! with a `session_end`, or no signed checkpoint covers that `session_end`); 2 an error
//! (unreadable file, bad arguments). With `--checkpoints`, a contradiction between the log
//! and its signed checkpoints is a break (1).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rootfence::audit::{self, ShowFilter, SummaryOptions, VerifyOptions, checkpoint};

#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain of audit log files (rotated files first; the order is worked
    /// out from the names `<log>.<N>`, so `audit.jsonl*` works).
    ///
    /// With --checkpoints and --pubkey, the log is also checked against its signed
    /// checkpoints: records removed from the end, a rewritten tail, a re-hashed chain and
    /// forged or reordered checkpoints are breaks.
    ///
    /// Exit status: 0 intact, 1 broken (the first bad record is named), 3 intact but
    /// incomplete (torn final line, no final session_end, or a final session_end no
    /// checkpoint covers), 2 error.
    Verify {
        /// Accept a chain that starts after seq 1 (older rotated files were deleted).
        #[arg(long)]
        partial: bool,
        /// Print only problems.
        #[arg(long, short)]
        quiet: bool,
        /// Check the log against this file of signed checkpoints (`[audit]
        /// checkpoint_path`): finds records removed from the end, a rewritten tail and a
        /// re-hashed chain. Needs --pubkey.
        #[arg(long, value_name = "FILE", requires = "pubkey")]
        checkpoints: Option<PathBuf>,
        /// The checkpoint signer's public key (the `.pub` file of `rootfence audit keygen`).
        #[arg(long, value_name = "KEY", requires = "checkpoints")]
        pubkey: Option<PathBuf>,
        /// The log files: the active file and its rotated files.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
    /// Make an Ed25519 key pair for signed checkpoints: FILE (private, mode 0600) and
    /// FILE.pub (public). Keep FILE outside every root and sandbox grant, name it in the
    /// policy's `[audit] checkpoint_key`, and give FILE.pub to whoever verifies.
    Keygen {
        /// The private key file to create (never replaced).
        #[arg(value_name = "FILE")]
        out: PathBuf,
    },
    /// Per session and across them: counts by decision, method and reason, the top tools,
    /// denied URIs and denying rules. Takes the filters of `show`.
    Summary {
        /// How many tools, denied URIs and rules to list.
        #[arg(long, default_value_t = 10, value_name = "N")]
        top: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: Box<audit::Filter>,
        /// The log file (and its rotated files, if wanted).
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
    /// List records readably, with filters; --follow to tail a live log.
    ///
    /// Filters combine (all must hold). A filter on an attribute keeps only the records
    /// that have it: --method tools/call lists decisions on tool calls, not session starts.
    Show {
        #[command(flatten)]
        filter: Box<audit::Filter>,
        /// Print the stored JSON lines (the same as --format json).
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// Output format: text, json (the stored lines), ocsf (each record mapped to OCSF
        /// 1.3, one JSON object per line; docs/audit-schema.md), cef (ArcSight CEF, one line
        /// per record) or csv (RFC 4180 with a header line; docs/siem.md).
        #[arg(long, value_name = "FORMAT", value_parser = ["text", "json", "ocsf", "cef", "csv"])]
        format: Option<String>,
        /// After the last record, keep reading the newest file as the log grows, across
        /// rotations, until interrupted (like tail -F).
        #[arg(long, short = 'f')]
        follow: bool,
        /// The log file (and its rotated files, if wanted).
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
    /// One self-contained HTML file for a reviewer: the chain's verification, a timeline
    /// per session with every denial marked, the top denied paths, tools and rules, and a
    /// table to filter. No network access when opened; fine as an email attachment.
    Report {
        /// The HTML file to write (`-` for stdout).
        #[arg(long, value_name = "OUT", required = true)]
        html: PathBuf,
        #[command(flatten)]
        filter: Box<audit::Filter>,
        /// How many entries each top list shows.
        #[arg(long, default_value_t = 10, value_name = "N")]
        top: usize,
        /// The log files: the active file and its rotated files.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
}

pub fn run(cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = std::io::stderr().lock();
    let code = match cmd {
        AuditCommand::Verify {
            partial,
            quiet,
            checkpoints,
            pubkey,
            files,
        } => {
            let ck = match (checkpoints, pubkey) {
                (Some(file), Some(key)) => {
                    let key = checkpoint::load_public_key(&key)?;
                    Some(
                        checkpoint::Checkpoints::read(&file, &key)
                            .context("cannot read the checkpoints")?,
                    )
                }
                _ => None,
            };
            let r = audit::verify_files_with(&files, VerifyOptions { partial }, ck.as_ref())
                .context("cannot verify the audit log")?;
            verify_output(&r, quiet, &mut out)?
        }
        AuditCommand::Keygen { out: private } => {
            let mut public = private.clone().into_os_string();
            public.push(".pub");
            let public = PathBuf::from(public);
            checkpoint::keygen(&private, &public)?;
            writeln!(
                out,
                "private key: {} (mode 0600: keep it outside every root and sandbox grant)",
                private.display()
            )?;
            writeln!(out, "public key:  {}", public.display())?;
            writeln!(out, "policy:      [audit]")?;
            writeln!(
                out,
                "             checkpoint_key = {:?}",
                private.display().to_string()
            )?;
            writeln!(
                out,
                "verify with: rootfence audit verify --checkpoints <checkpoint file> --pubkey {} <log files>",
                public.display()
            )?;
            ExitCode::SUCCESS
        }
        AuditCommand::Summary {
            top,
            json,
            filter,
            files,
        } => {
            let opts = SummaryOptions {
                top,
                json,
                filter: *filter,
            };
            audit::summarize(&files, &opts, &mut out, &mut err)
                .context("cannot summarize the audit log")?;
            ExitCode::SUCCESS
        }
        AuditCommand::Report {
            html,
            filter,
            top,
            files,
        } => {
            let opts = audit::ReportOptions {
                top,
                filter: *filter,
            };
            let page = audit::report_html(&files, &opts, &mut err)
                .context("cannot build the audit report")?;
            if html.as_os_str() == "-" {
                out.write_all(page.as_bytes())?;
            } else {
                std::fs::write(&html, page.as_bytes())
                    .with_context(|| format!("cannot write the report to {}", html.display()))?;
                writeln!(err, "rootfence: report written to {}", html.display())?;
            }
            ExitCode::SUCCESS
        }
        AuditCommand::Show {
            filter,
            json,
            format,
            follow,
            files,
        } => {
            let format = if json {
                audit::Format::Json
            } else {
                let word = format.as_deref().unwrap_or("text");
                audit::Format::WORDS
                    .iter()
                    .find(|(w, _)| *w == word)
                    .map_or(audit::Format::Text, |(_, f)| *f)
            };
            let filter = ShowFilter {
                filter: *filter,
                format,
                follow,
            };
            match audit::show(&files, &filter, &mut out, &mut err) {
                // `show | head` is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.context("cannot show the audit log")?,
            }
            ExitCode::SUCCESS
        }
    };
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r?,
    }
    Ok(code)
}

fn verify_output(
    r: &audit::VerifyReport,
    quiet: bool,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let ck_broken = r.checkpoints.as_ref().and_then(|c| c.broken.as_ref());
    if let Some(b) = ck_broken {
        writeln!(out, "BROKEN: checkpoint: {b}")?;
    }
    if let Some(b) = &r.broken {
        writeln!(out, "BROKEN: {b}")?;
        writeln!(
            out,
            "  {} records before it are intact{}",
            r.records,
            r.seq_range
                .map(|(a, z)| format!(" (seq {a} to {z})"))
                .unwrap_or_default()
        )?;
        return Ok(ExitCode::from(1));
    }
    if ck_broken.is_some() {
        return Ok(ExitCode::from(1));
    }
    if !quiet {
        for n in r
            .notes
            .iter()
            .chain(r.checkpoints.iter().flat_map(|c| c.notes.iter()))
        {
            writeln!(out, "note: {n}")?;
        }
    }
    let range = r
        .seq_range
        .map(|(a, z)| format!(", seq {a} to {z}"))
        .unwrap_or_default();
    let summary = format!(
        "{} records in {} file{}{range}, {} session{}",
        r.records,
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        r.sessions,
        if r.sessions == 1 { "" } else { "s" },
    );
    if let Some(inc) = &r.incomplete {
        writeln!(out, "INCOMPLETE: {inc}")?;
        writeln!(out, "  chain intact: {summary}")?;
    } else if !quiet {
        writeln!(out, "ok: chain intact: {summary}")?;
    }
    if !quiet {
        if let Some(c) = &r.checkpoints {
            writeln!(
                out,
                "checkpoints: {} of {} signed checkpoints match the log{}",
                c.matched,
                c.total,
                c.covered
                    .map(|s| format!("; covered up to seq {s}"))
                    .unwrap_or_default()
            )?;
        }
        if !r.unended.is_empty() {
            writeln!(
                out,
                "note: {} session{} without session_end (still running or killed): {}",
                r.unended.len(),
                if r.unended.len() == 1 { "" } else { "s" },
                r.unended.join(", ")
            )?;
        }
        if let Some(h) = &r.head {
            writeln!(
                out,
                "head: {h} (keep this elsewhere to detect a later truncation)"
            )?;
        }
    }
    Ok(if r.incomplete.is_some() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}
