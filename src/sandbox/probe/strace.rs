//! Reading an strace log (`strace -f -y` around the launcher): every failed syscall with
//! its path and flags after the launcher's `landlock_restrict_self`, the denials Landlock
//! reports as `EACCES` (files, TCP) or `EPERM` (scopes); syscalls it does not govern are
//! ignored.

use super::*;

/// Parses an strace log written with `-f -y` (see [`prepare_traced`]).
pub fn parse_strace_log(text: &str) -> Findings {
    let mut findings = Findings::default();
    let mut pending: BTreeMap<String, String> = BTreeMap::new();
    for raw in text.lines() {
        let (pid, rest) = split_pid(raw);
        let line = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_owned(), head.to_owned());
            continue;
        } else if let Some(after) = rest.strip_prefix("<... ") {
            // `<... openat resumed>, O_RDONLY) = -1 EACCES (...)`
            let Some((_, tail)) = after.split_once(" resumed>") else {
                continue;
            };
            match pending.remove(pid) {
                Some(head) => format!("{head}{tail}"),
                None => continue,
            }
        } else {
            rest.to_owned()
        };
        if line.starts_with("landlock_restrict_self(") && line.ends_with("= 0") {
            // Everything before this line was the launcher setting up, unconfined.
            findings = Findings {
                restricted: true,
                ..Findings::default()
            };
            continue;
        }
        parse_syscall(&line, &mut findings);
    }
    findings
}

pub(super) fn split_pid(line: &str) -> (&str, &str) {
    let trimmed = line.trim_start();
    match trimmed.find(|c: char| !c.is_ascii_digit()) {
        Some(0) | None => ("", trimmed),
        Some(i) => (&trimmed[..i], trimmed[i..].trim_start()),
    }
}

pub(super) fn parse_syscall(line: &str, findings: &mut Findings) {
    let Some(open) = line.find('(') else { return };
    let name = &line[..open];
    // strace pads short calls: `mkdir("/x", 0777)     = -1 EACCES (...)`.
    let Some(eq) = line.rfind(" = ") else {
        return;
    };
    let result = &line[eq + 3..];
    let denied = result.starts_with("-1 EACCES") || result.starts_with("-1 EPERM");
    if !denied {
        return;
    }
    let Some(args) = line[open + 1..eq].trim_end().strip_suffix(')') else {
        return;
    };
    let (strings, dirfds) = scan_args(args);
    let need = |flags: &str| {
        if ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
            .iter()
            .any(|f| flags.contains(f))
        {
            Need::Write
        } else {
            Need::Read
        }
    };
    let mut add = |path: Option<PathBuf>, need: Need| {
        if let Some(path) = path {
            findings.push(Denial {
                path,
                need,
                op: name.to_owned(),
            });
        }
    };
    // Paths of *at syscalls are relative to the directory descriptor printed by `-y` as
    // `3</dir>` or `AT_FDCWD</cwd>`.
    let at = |i: usize| -> Option<PathBuf> {
        let p = PathBuf::from(strings.get(i)?);
        let p = if p.is_absolute() {
            p
        } else {
            dirfds.get(i).cloned().flatten()?.join(p)
        };
        Some(normalized(&p))
    };
    match name {
        "open" | "creat" | "openat" | "openat2" => add(at(0), need(args)),
        "execve" | "execveat" => add(at(0), Need::Exec),
        "mkdir" | "mkdirat" | "mknod" | "mknodat" | "unlink" | "unlinkat" | "rmdir"
        | "truncate" => add(at(0), Need::Write),
        "rename" | "renameat" | "renameat2" | "link" | "linkat" => {
            add(at(0), Need::Write);
            add(at(1), Need::Write);
        }
        "symlink" | "symlinkat" => add(at(1), Need::Write),
        "connect" => findings.connect_ports.extend(tcp_port(args)),
        "bind" => findings.bind_ports.extend(tcp_port(args)),
        "kill" | "tkill" | "tgkill" => findings.signals += 1,
        // stat, access, chmod, chown, readlink, ...: not governed by Landlock.
        _ => {}
    }
}

/// The quoted strings of an argument list, each with the directory of the descriptor
/// argument right before it (`-y` form), if any.
pub(super) fn scan_args(args: &str) -> (Vec<OsString>, Vec<Option<PathBuf>>) {
    let bytes = args.as_bytes();
    let mut strings = Vec::new();
    let mut dirs = Vec::new();
    let mut last_dir: Option<PathBuf> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let (s, next) = unquote(bytes, i + 1);
                strings.push(OsString::from_vec(s));
                dirs.push(last_dir.take());
                i = next;
                // Skip strace's `...` truncation marker.
                while i < bytes.len() && bytes[i] == b'.' {
                    i += 1;
                }
            }
            // `3</dir>` or `AT_FDCWD</dir>`: a path up to the matching `>`.
            b'<' => match args[i + 1..].find('>') {
                Some(len) => {
                    let p = &args[i + 1..i + 1 + len];
                    if p.starts_with('/') {
                        last_dir = Some(PathBuf::from(p));
                    }
                    i += len + 2;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    (strings, dirs)
}

/// Decodes an strace-quoted string starting after its opening quote; returns the bytes
/// and the index after the closing quote.
pub(super) fn unquote(b: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' => return (out, i + 1),
            b'\\' if i + 1 < b.len() => {
                i += 1;
                match b[i] {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'v' => out.push(0x0b),
                    b'f' => out.push(0x0c),
                    b'x' if i + 2 < b.len() => {
                        let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                        if let Ok(v) = u8::from_str_radix(hex, 16) {
                            out.push(v);
                            i += 2;
                        }
                    }
                    d @ b'0'..=b'7' => {
                        let mut v = u32::from(d - b'0');
                        let mut n = 1;
                        while n < 3 && i + 1 < b.len() && (b'0'..=b'7').contains(&b[i + 1]) {
                            i += 1;
                            v = v * 8 + u32::from(b[i] - b'0');
                            n += 1;
                        }
                        out.push(v as u8);
                    }
                    other => out.push(other),
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out, i)
}

/// The TCP port of an `AF_INET`/`AF_INET6` sockaddr as strace prints it.
pub(super) fn tcp_port(args: &str) -> Option<u16> {
    if !(args.contains("AF_INET") || args.contains("AF_INET6")) {
        return None;
    }
    let i = args.find("port=htons(")? + "port=htons(".len();
    let end = args[i..].find(')')? + i;
    args[i..end].parse().ok()
}
