//! Reading log files for the readers: lines with their numbers and offsets, the torn final
//! line reported as such, and records parsed for `summary` and `show`.
//!
//! Nothing here trusts the file: a malformed line is reported and skipped, never a panic.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::chain;
use super::event::Event;

/// Read buffer: large, because the readers stream logs of millions of lines.
const READ_BUF: usize = 1 << 20;

/// One line of a log file.
#[derive(Debug)]
pub(crate) enum Item<'a> {
    /// A complete line (without its `\n`).
    Line { no: u64, bytes: &'a [u8] },
    /// Bytes after the last `\n`: a write cut short.
    Torn {
        no: u64,
        offset: u64,
        bytes: &'a [u8],
    },
}

/// Streams the lines of one file.
pub(crate) struct Lines {
    reader: BufReader<File>,
    buf: Vec<u8>,
    no: u64,
    offset: u64,
}

impl Lines {
    pub fn open(path: &Path) -> io::Result<Lines> {
        Ok(Lines {
            reader: BufReader::with_capacity(READ_BUF, File::open(path)?),
            buf: Vec::with_capacity(1024),
            no: 0,
            offset: 0,
        })
    }

    pub fn next_item(&mut self) -> io::Result<Option<Item<'_>>> {
        self.buf.clear();
        let n = self.reader.read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.no += 1;
        let offset = self.offset;
        self.offset += n as u64;
        Ok(Some(if self.buf.last() == Some(&b'\n') {
            Item::Line {
                no: self.no,
                bytes: &self.buf[..n - 1],
            }
        } else {
            Item::Torn {
                no: self.no,
                offset,
                bytes: &self.buf[..],
            }
        }))
    }
}

/// A parsed record, for `summary` and `show`.
#[derive(Debug)]
pub(crate) struct Record {
    pub seq: u64,
    pub ts: String,
    pub ts_micros: Option<i64>,
    pub session: String,
    pub event_name: String,
    /// `None` for an event this version does not know.
    pub event: Option<Event>,
}

/// Reads every record of `files` (in the order given), calling `f` with the record and its
/// raw line. Malformed and torn lines are skipped, named with their place on `err` once the
/// files are read, and returned.
pub(crate) fn for_each_record(
    files: &[PathBuf],
    mut f: impl FnMut(&Record, &[u8]),
    err: &mut dyn Write,
) -> io::Result<Vec<String>> {
    let mut warnings = Vec::new();
    for path in files {
        let mut lines = Lines::open(path).map_err(|e| with_path(path, e))?;
        while let Some(item) = lines.next_item().map_err(|e| with_path(path, e))? {
            match item {
                Item::Torn { no, offset, bytes } => warnings.push(format!(
                    "{}: line {no} is incomplete ({} bytes at offset {offset}): a write was \
                     cut short (crash or full disk); skipped",
                    path.display(),
                    bytes.len()
                )),
                Item::Line { no, bytes } => match parse_record(bytes) {
                    Ok(rec) => f(&rec, bytes),
                    Err(why) => warnings.push(invalid_line(path, no, &why)),
                },
            }
        }
    }
    for w in &warnings {
        writeln!(err, "rootfence: warning: {}", super::show::disp(w))?;
    }
    Ok(warnings)
}

/// The warning for line `no` of `path`, which is not a record.
pub(crate) fn invalid_line(path: &Path, no: u64, why: &str) -> String {
    format!(
        "{}: line {no} is not a valid record ({why}); skipped",
        path.display()
    )
}

pub(crate) fn parse_record(line: &[u8]) -> Result<Record, String> {
    let env = chain::parse_envelope(line).map_err(str::to_owned)?;
    if env.v != super::SCHEMA_VERSION {
        return Err(format!(
            "schema version {} is not supported by this rootfence",
            env.v
        ));
    }
    let body = env.body(line);
    let event = Event::from_body(env.event, &body).map_err(|e| e.to_string())?;
    Ok(Record {
        seq: env.seq,
        ts: env.ts.to_owned(),
        ts_micros: super::time::parse_rfc3339(env.ts),
        session: env.session.to_owned(),
        event_name: env.event.to_owned(),
        event,
    })
}

pub(crate) fn with_path(path: &Path, e: io::Error) -> io::Error {
    let file = super::show::disp_path(path);
    io::Error::new(e.kind(), format!("{file}: {e}"))
}
