//! rootfence's own stdin and stdout (the host side) as async streams.
//!
//! tokio's `stdin()`/`stdout()` do every read and write on a blocking thread pool, which adds a
//! thread hop to each message. Hosts give a server pipes (Python's asyncio, most SDKs) or unix
//! socket pairs (Node's `child_process`, hence Electron hosts), and both can be driven by the
//! reactor directly, so that is what rootfence does; anything else (a terminal, a file,
//! `/dev/null`) falls back to tokio's blocking streams.
//!
//! stdout goes non-blocking only if it is not the same pipe as stderr (`2>&1`): stderr shares
//! the file description and must stay blocking for diagnostics and the server's stderr.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tokio::io::{AsyncRead, AsyncWrite};

/// The host's input stream.
pub type HostReader = Box<dyn AsyncRead + Send + Unpin>;
/// The host's output stream.
pub type HostWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// What kind of file a descriptor is, and which inode.
fn describe(fd: &OwnedFd) -> io::Result<(std::fs::FileType, (u64, u64))> {
    let meta = File::from(fd.try_clone()?).metadata()?;
    Ok((meta.file_type(), (meta.dev(), meta.ino())))
}

/// rootfence's stdin and stdout as async streams.
pub fn host_streams() -> io::Result<(HostReader, HostWriter)> {
    let stdin = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = io::stdout().as_fd().try_clone_to_owned()?;
    let stderr_inode = io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| describe(&fd))
        .ok()
        .map(|(_, inode)| inode);

    let (in_type, _) = describe(&stdin)?;
    let reader: HostReader = if in_type.is_fifo() {
        Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?)
    } else if in_type.is_socket() {
        Box::new(unix_stream(stdin)?)
    } else {
        Box::new(tokio::io::stdin())
    };

    let (out_type, out_inode) = describe(&stdout)?;
    let shared_with_stderr = stderr_inode == Some(out_inode);
    let writer: HostWriter = if out_type.is_fifo() && !shared_with_stderr {
        Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?)
    } else if out_type.is_socket() && !shared_with_stderr {
        Box::new(unix_stream(stdout)?)
    } else {
        Box::new(tokio::io::stdout())
    };
    Ok((reader, writer))
}

fn unix_stream(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
}
