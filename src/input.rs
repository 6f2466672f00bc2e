//! Reading the files a user names — `.tool` files (and the callees they reach), `--args`,
//! `--vars`, `--mock` and trace files: only regular files, and at most
//! [`MAX_INPUT_BYTES`].
//!
//! The file is opened without blocking (`O_NONBLOCK`, so that opening a FIFO with no
//! writer returns at once) and its type is checked on the open handle before a byte is
//! read: a FIFO, a socket or a device (`/dev/zero`, also through a symbolic link) is an
//! [`InputError::NotRegular`], never a hang or an endless read. Every reader of user files
//! goes through [`read_bytes`] or [`read_text`].

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

/// The largest input file read: 256 MiB. A larger file is an [`InputError::TooLarge`].
pub(crate) const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Why an input file could not be read.
#[derive(Debug)]
pub enum InputError {
    /// Opening or reading failed (no such file, permission denied, …).
    Io(std::io::Error),
    /// The path names something other than a regular file: a folder, a FIFO, a socket or
    /// a device. The field says which.
    NotRegular(&'static str),
    /// The file is larger than the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The file is not valid UTF-8: the first bad byte is at this offset.
    NotUtf8 {
        /// The byte offset of the first invalid sequence.
        at: usize,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io(e) => write!(f, "{e}"),
            InputError::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            InputError::TooLarge { limit } => {
                write!(f, "it is larger than {} MiB, the most an input file may hold", limit >> 20)
            }
            InputError::NotUtf8 { at } => write!(f, "it is not valid UTF-8 (byte {at})"),
        }
    }
}

impl std::error::Error for InputError {}

impl From<InputError> for std::io::Error {
    fn from(e: InputError) -> std::io::Error {
        match e {
            InputError::Io(e) => e,
            InputError::NotUtf8 { .. } => std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
            other => std::io::Error::other(other.to_string()),
        }
    }
}

/// Opens `path` for reading if it is a regular file (following symbolic links).
fn open_regular(path: &Path) -> Result<File, InputError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading blocks until a writer comes, unless non-blocking.
        options.custom_flags(nix::libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(InputError::Io)?;
    let kind = file.metadata().map_err(InputError::Io)?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(InputError::NotRegular(describe(kind)))
}

fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// The bytes of a regular file of at most [`MAX_INPUT_BYTES`].
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    read_bytes_capped(path, MAX_INPUT_BYTES)
}

/// The bytes of a regular file of at most `limit` bytes (a smaller cap than
/// [`MAX_INPUT_BYTES`], for files that are small by nature, such as a token file).
pub(crate) fn read_bytes_capped(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    // One byte past the limit tells a file of exactly the limit from a larger one, and a
    // file that grows while it is read is still bounded.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The text of a regular UTF-8 file of at most [`MAX_INPUT_BYTES`].
pub(crate) fn read_text(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read_bytes(path)?).map_err(|e| InputError::NotUtf8 { at: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("a.json");
        std::fs::write(&file, "{}").expect("write");
        assert_eq!(read_text(&file).expect("regular"), "{}");
        assert!(matches!(read_text(dir.path()), Err(InputError::NotRegular("a folder"))));
        assert!(matches!(read_text(Path::new("/dev/zero")), Err(InputError::NotRegular("a device"))));
        assert!(matches!(read_text(&dir.path().join("missing")), Err(InputError::Io(_))));
        std::fs::write(&file, b"{\"a\": \"\xff\"}").expect("write");
        assert!(matches!(read_text(&file), Err(InputError::NotUtf8 { at: 7 })));
        std::fs::write(&file, "x".repeat(11)).expect("write");
        assert!(matches!(read_bytes_capped(&file, 10), Err(InputError::TooLarge { limit: 10 })));
        assert_eq!(read_bytes_capped(&file, 11).expect("at the limit").len(), 11);
    }
}
