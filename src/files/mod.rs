//! The file store behind the file functions (`list_files`, `read_file`, `read_files`,
//! `list_file_versions`, `describe_version`; SPEC §4.5).
//!
//! A host hands the engine a [`FileStore`]: a small interface that lists one directory,
//! reads one file (at one version) and lists a file's versions. Everything the functions
//! promise on top of that — path confinement, glob matching, sorting and the 50-entry cap,
//! UTF-8 decoding, the size limit, version look-up — lives here once, in [`ops`], so every
//! store behaves the same and a host's own store gets it for free.
//!
//! Two stores come with the crate: [`MemoryStore`] (for embedding and tests) and
//! [`LocalStore`] (a directory on disk, with versions from git when the directory is inside
//! a git work tree).
//!
//! **Confinement** happens in two places. [`StorePath::parse`] turns the text a program
//! gives into a normalized path relative to the root (a leading `/` is the store's root),
//! refusing what could name something outside it (`..` above the root, odd characters); a
//! store only ever sees `StorePath`s. [`LocalStore`] then refuses symbolic links that resolve outside
//! the root, component by component, before it opens or lists anything. This module must
//! never hand a store raw program text, and a store must never open a path it has not
//! checked. See `docs/security.md`.

mod git;
mod local;
mod memory;
pub(crate) mod ops;
mod path;

pub use local::LocalStore;
pub use memory::MemoryStore;
pub use path::StorePath;

use std::fmt;
use std::path::Path;

use crate::diagnostic::Code;

/// The most paths `list_files` returns; past it, the first 50 in sorted order.
pub(crate) const MAX_LISTED_FILES: usize = 50;

/// The most paths one `read_files` call reads; more is an error.
pub(crate) const MAX_READ_FILES: usize = 5;

/// The version id of a file's content on disk when it has no history, or when it differs
/// from the newest commit.
pub(crate) const CURRENT_VERSION: &str = "current";

/// A place files come from. Implementations answer for paths relative to their root; the
/// paths they receive are already normalized and confined lexically (see [`StorePath`]).
/// Methods take `&self` and may be called from several threads.
pub trait FileStore: Send + Sync {
    /// The entries of directory `dir`, in any order. A path that is a file is a
    /// [`Code::NotADirectory`] error; a missing one [`Code::FileNotFound`].
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError>;

    /// The bytes of file `path` — at `version` (one that [`FileStore::versions`] listed), or
    /// its current content when `None`. A file larger than `max_bytes` is a
    /// [`Code::FileTooLarge`] error raised before it is read.
    fn read(&self, path: &StorePath, version: Option<&Version>, max_bytes: u64) -> Result<Vec<u8>, FileError>;

    /// The versions of file `path`, newest first; never empty for a file that exists.
    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError>;

    /// The version of file `path` as tag `name` holds it, when the store keeps tags and has
    /// one named exactly `name` (SPEC §4.5: `version_id="v1.2"`). `Ok(None)` when there is
    /// no such tag; an [`Code::UnknownVersion`] error when the tag exists but does not hold
    /// the file. The default keeps no tags.
    ///
    /// `name` is the program's text: an implementation compares it with the names it has
    /// and must never hand it to anything that would read it as syntax (an option, a
    /// revision expression, a pattern).
    fn tagged_version(&self, path: &StorePath, name: &str) -> Result<Option<Version>, FileError> {
        let _ = (path, name);
        Ok(None)
    }

    /// Where the store is on disk, if it is (for a host's information). Paths are always
    /// read from the store's root: `/config` is the store's `config`, never the host's.
    fn root(&self) -> Option<&Path> {
        None
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name (one path segment).
    pub name: String,
    /// A file or a directory.
    pub kind: EntryKind,
    /// Reached through a symbolic link (that stays inside the root). Listings do not walk
    /// into linked directories, so a link cycle cannot make a walk endless.
    pub link: bool,
}

/// What a directory entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// One version of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The id to pass back as `version_id`: a commit id, or [`CURRENT_VERSION`]. Functions
    /// also accept [`CURRENT_VERSION`] for a file whose newest version is a commit, an
    /// unambiguous prefix of at least 7 characters, and a tag name
    /// ([`FileStore::tagged_version`]).
    pub id: String,
    /// When this version was made, in milliseconds since the Unix epoch: the commit's
    /// author time, or the file's modification time.
    pub created_at_millis: Option<i64>,
    /// The content's size in bytes.
    pub size: u64,
    /// Who made it (a commit's author name).
    pub author: Option<String>,
    /// Why (a commit's message).
    pub message: Option<String>,
}

impl Version {
    /// The version of a file with no history: [`CURRENT_VERSION`] with its size and time.
    pub fn current(size: u64, created_at_millis: Option<i64>) -> Version {
        Version { id: CURRENT_VERSION.to_string(), created_at_millis, size, author: None, message: None }
    }
}

/// A failed file operation: a code from the `E07xx` family (or `E0301` for a value of the
/// wrong type) and a message that names the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The stable code.
    pub code: Code,
    /// What went wrong, naming the path.
    pub message: String,
}

impl FileError {
    /// An error with a code and message.
    pub fn new(code: Code, message: impl Into<String>) -> FileError {
        FileError { code, message: message.into() }
    }

    /// `path` would leave the store's root (`why` says how).
    pub fn escape(path: &str, why: &str) -> FileError {
        FileError::new(Code::PathEscapesRoot, format!("{path:?} {why}"))
    }

    /// `path` is text the store refuses to use as a path (`why` says why).
    pub fn invalid(path: &str, why: &str) -> FileError {
        FileError::new(Code::InvalidPath, format!("{path:?} is not a usable path: {why}"))
    }

    /// Nothing exists at `path`.
    pub fn not_found(path: &str) -> FileError {
        FileError::new(Code::FileNotFound, format!("no file or directory {path:?} in the file store"))
    }

    /// `path` is not a regular file.
    pub fn not_a_file(path: &str) -> FileError {
        FileError::new(Code::NotAFile, format!("{path:?} is not a file"))
    }

    /// `path` is not a directory.
    pub fn not_a_directory(path: &str) -> FileError {
        FileError::new(Code::NotADirectory, format!("{path:?} is not a directory"))
    }

    /// `path` is `size` bytes, over the `limit`.
    pub fn too_large(path: &str, size: u64, limit: u64) -> FileError {
        FileError::new(
            Code::FileTooLarge,
            format!("{path:?} is {size} bytes, over the file size limit of {limit} bytes"),
        )
    }

    /// `path` has no version `version`.
    pub fn unknown_version(path: &str, version: &str) -> FileError {
        FileError::new(Code::UnknownVersion, format!("{path:?} has no version {version:?}"))
    }

    /// The same error with a note after the message.
    pub fn with_note(mut self, note: &str) -> FileError {
        self.message = format!("{} ({note})", self.message);
        self
    }

    /// The store could not do what it was asked (an I/O error, a failing `git`).
    pub fn io(path: &str, what: impl fmt::Display) -> FileError {
        FileError::new(Code::FileStoreIo, format!("{path:?}: {what}"))
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FileError {}
