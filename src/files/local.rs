//! A directory on disk as a file store, confined to that directory.
//!
//! Every path is resolved from the root one segment at a time: a segment that is a
//! symbolic link is followed only when its target (resolved completely) lies inside the
//! root, and the walk stops with an error at the first one that does not — before anything
//! behind it is opened, listed or even looked up. Only regular files are read and only
//! directories listed; devices, sockets and FIFOs are neither.
//!
//! Versions come from git when the root is inside a git work tree (see [`super::git`]),
//! else a file has the one version `current` from its metadata.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::git::{Commit, Repo};
use super::{Entry, EntryKind, FileError, FileStore, StorePath, Version, CURRENT_VERSION};

/// A directory on disk, with every path confined to it.
///
/// ```no_run
/// use std::sync::Arc;
/// use tdsl::LocalStore;
/// use tdsl::Engine;
///
/// let store = LocalStore::open("./data").expect("a directory");
/// let engine = Engine::new().with_file_store(Arc::new(store));
/// ```
#[derive(Debug)]
pub struct LocalStore {
    /// The root, canonical (no symbolic links, no `..`).
    root: PathBuf,
    history: History,
}

#[derive(Debug)]
enum History {
    /// Versions from metadata only.
    Metadata,
    /// Git, when the root turns out to be in a work tree (looked up on first use).
    Git(OnceLock<Option<Repo>>),
}

impl LocalStore {
    /// Opens directory `root`. Files have versions from git when `root` is inside a git
    /// work tree and the `git` command runs; otherwise each has one version, `current`.
    pub fn open(root: impl AsRef<Path>) -> io::Result<LocalStore> {
        Ok(LocalStore { root: canonical_dir(root.as_ref())?, history: History::Git(OnceLock::new()) })
    }

    /// Opens directory `root` without looking for git: every file has one version,
    /// `current`, and no process is ever started.
    pub fn open_without_git(root: impl AsRef<Path>) -> io::Result<LocalStore> {
        Ok(LocalStore { root: canonical_dir(root.as_ref())?, history: History::Metadata })
    }

    /// The root directory (canonical).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Whether versions come from git.
    pub fn uses_git(&self) -> bool {
        self.repo().is_some()
    }

    fn repo(&self) -> Option<&Repo> {
        match &self.history {
            History::Metadata => None,
            History::Git(cell) => cell.get_or_init(|| Repo::discover(&self.root)).as_ref(),
        }
    }

    /// The place on disk of `path`: each segment looked up in turn from the root, symbolic
    /// links followed only while they stay inside it.
    fn resolve(&self, path: &StorePath) -> Result<PathBuf, FileError> {
        let mut cur = self.root.clone();
        let mut walked = String::new();
        for seg in path.segments() {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(seg);
            let next = cur.join(seg);
            let meta = fs::symlink_metadata(&next).map_err(|e| io_error(path, &e))?;
            if meta.file_type().is_symlink() {
                let target = fs::canonicalize(&next).map_err(|_| {
                    FileError::not_found(path.as_str()).with_note(&format!("`{walked}` is a symbolic link to nothing"))
                })?;
                if !target.starts_with(&self.root) {
                    return Err(FileError::escape(
                        path.as_str(),
                        &format!("leaves the file store's root: `{walked}` is a symbolic link to a place outside it"),
                    ));
                }
                cur = target;
            } else {
                cur = next;
            }
        }
        Ok(cur)
    }

    /// `path` resolved, when it is a regular file, with its metadata. A file that holds one
    /// of this process's secrets (a token file, the run history: [`crate::secrets`]) is
    /// refused, by whatever name or link it is reached.
    fn regular_file(&self, path: &StorePath) -> Result<(PathBuf, fs::Metadata), FileError> {
        let real = self.resolve(path)?;
        let meta = fs::metadata(&real).map_err(|e| io_error(path, &e))?;
        if !meta.is_file() {
            return Err(FileError::not_a_file(path.as_str()));
        }
        if crate::secrets::is_secret_file(&real, &meta) {
            return Err(holds_a_secret(path));
        }
        Ok((real, meta))
    }

    /// [`LocalStore::regular_file`], opened: what was opened is judged again by its own
    /// identity, as its name may have been given to another file (a token file, a FIFO)
    /// between the look at the name and the open.
    fn open_file(&self, path: &StorePath) -> Result<(PathBuf, fs::File, fs::Metadata), FileError> {
        let (real, _) = self.regular_file(path)?;
        let file = open_without_waiting(&real).map_err(|e| io_error(path, &e))?;
        let meta = file.metadata().map_err(|e| io_error(path, &e))?;
        if !meta.is_file() {
            return Err(FileError::not_a_file(path.as_str()));
        }
        if crate::secrets::is_secret_file(&real, &meta) {
            return Err(holds_a_secret(path));
        }
        Ok((real, file, meta))
    }

    fn read_disk(&self, path: &StorePath, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let (_, file, meta) = self.open_file(path)?;
        if meta.len() > max_bytes {
            return Err(FileError::too_large(path.as_str(), meta.len(), max_bytes));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // Bounded even if the file grows while it is read.
        file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| io_error(path, &e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(FileError::too_large(path.as_str(), bytes.len() as u64, max_bytes));
        }
        Ok(bytes)
    }

    /// What a directory entry is, following a symbolic link only when it stays inside the
    /// root; `None` for entries listings leave out (links outside or to nothing, special
    /// files, a file holding one of this process's secrets).
    fn entry_kind(&self, entry: &fs::DirEntry) -> Option<(EntryKind, bool)> {
        let ft = entry.file_type().ok()?;
        let (ft, link) = if ft.is_symlink() {
            let target = fs::canonicalize(entry.path()).ok().filter(|t| t.starts_with(&self.root))?;
            let meta = fs::metadata(&target).ok()?;
            if crate::secrets::is_secret_file(&target, &meta) {
                return None;
            }
            (meta.file_type(), true)
        } else {
            (ft, false)
        };
        if ft.is_file()
            && !link
            && crate::secrets::holds_secret_files()
            && entry.metadata().is_ok_and(|m| crate::secrets::is_secret_file(&entry.path(), &m))
        {
            return None;
        }
        if ft.is_file() {
            Some((EntryKind::File, link))
        } else if ft.is_dir() {
            Some((EntryKind::Directory, link))
        } else {
            None
        }
    }
}

/// The refusal of a file that holds one of this process's secrets.
fn holds_a_secret(path: &StorePath) -> FileError {
    FileError::invalid(
        path.as_str(),
        "it holds a secret of this server (a token file or the run history), which the file functions \
         never read; keep such files out of the file store's folder",
    )
}

/// Opens `real` for reading without waiting for anything: a FIFO put in a file's place after
/// it was looked at would otherwise hold the open until some writer came.
fn open_without_waiting(real: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    options.open(real)
}

impl FileStore for LocalStore {
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError> {
        let real = self.resolve(dir)?;
        let meta = fs::metadata(&real).map_err(|e| io_error(dir, &e))?;
        if !meta.is_dir() {
            return Err(FileError::not_a_directory(dir.as_str()));
        }
        let mut out = Vec::new();
        for entry in fs::read_dir(&real).map_err(|e| io_error(dir, &e))? {
            let entry = entry.map_err(|e| io_error(dir, &e))?;
            // A name that is not UTF-8 cannot be written in a program: not listed.
            let Ok(name) = entry.file_name().into_string() else { continue };
            if let Some((kind, link)) = self.entry_kind(&entry) {
                out.push(Entry { name, kind, link });
            }
        }
        Ok(out)
    }

    fn read(&self, path: &StorePath, version: Option<&Version>, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let Some(version) = version.filter(|v| v.id != CURRENT_VERSION) else {
            return self.read_disk(path, max_bytes);
        };
        if version.size > max_bytes {
            return Err(FileError::too_large(path.as_str(), version.size, max_bytes));
        }
        let (real, _) = self.regular_file(path)?;
        let repo = self.repo().ok_or_else(|| FileError::unknown_version(path.as_str(), &version.id))?;
        let git_path = repo.git_path(&real).ok_or_else(|| FileError::unknown_version(path.as_str(), &version.id))?;
        repo.read_blob(&version.id, &git_path).map_err(|e| FileError::io(path.as_str(), e))
    }

    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError> {
        let (real, file, meta) = self.open_file(path)?;
        let current = Version::current(meta.len(), modified_millis(&meta));
        let Some((repo, git_path)) = self.repo().and_then(|r| Some((r, r.git_path(&real)?))) else {
            return Ok(vec![current]);
        };
        let history = repo.history(&git_path, None, None).map_err(|e| FileError::io(path.as_str(), e))?;
        let newest_blob = history.first().and_then(|c| c.blob.as_ref()).map(|(oid, _)| oid.clone());
        let mut versions: Vec<Version> = history
            .into_iter()
            .filter_map(|c| {
                let (_, size) = c.blob?;
                Some(Version {
                    id: c.id,
                    created_at_millis: c.author_time.and_then(|s| s.checked_mul(1000)),
                    size,
                    author: Some(c.author),
                    message: Some(c.message),
                })
            })
            .collect();
        // The file as it is on disk is a version of its own when no commit holds it
        // (untracked, or changed since the last commit).
        let on_disk = repo.hash_file(file).map_err(|e| FileError::io(path.as_str(), e))?;
        if newest_blob.as_deref() != Some(on_disk.as_str()) {
            versions.insert(0, current);
        }
        Ok(versions)
    }

    fn tagged_version(&self, path: &StorePath, name: &str) -> Result<Option<Version>, FileError> {
        let (real, _) = self.regular_file(path)?;
        let Some((repo, git_path)) = self.repo().and_then(|r| Some((r, r.git_path(&real)?))) else {
            return Ok(None);
        };
        let commit = match repo.tag_commit(name) {
            Ok(Some(commit)) => commit,
            Ok(None) => return Ok(None),
            Err(why) => return Err(FileError::unknown_version(path.as_str(), name).with_note(&why)),
        };
        // The newest commit up to the tag that changed the file holds it as the tag does.
        let history = repo.history(&git_path, Some(&commit), Some(1)).map_err(|e| FileError::io(path.as_str(), e))?;
        match history.into_iter().next() {
            Some(Commit { id, author_time, author, message, blob: Some((_, size)) }) => Ok(Some(Version {
                id,
                created_at_millis: author_time.and_then(|s| s.checked_mul(1000)),
                size,
                author: Some(author),
                message: Some(message),
            })),
            _ => Err(FileError::unknown_version(path.as_str(), name)
                .with_note(&format!("tag {name:?} does not hold this file"))),
        }
    }

    fn root(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

fn canonical_dir(root: &Path) -> io::Result<PathBuf> {
    let real = fs::canonicalize(root)?;
    if !fs::metadata(&real)?.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{} is not a directory", root.display())));
    }
    Ok(real)
}

fn modified_millis(meta: &fs::Metadata) -> Option<i64> {
    let t = meta.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// An I/O error as a file error: a missing path is "not found"; anything else names the
/// operating system's reason.
fn io_error(path: &StorePath, e: &io::Error) -> FileError {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => FileError::not_found(path.as_str()),
        _ => FileError::io(path.as_str(), e),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A FIFO opened to be read does not hold the open until a writer comes, and what was
    /// opened is seen for what it is: so a FIFO put in a file's place between the look at
    /// the name and the open is refused (`read_disk`), not waited on.
    #[test]
    fn a_fifo_is_opened_without_waiting_and_seen_as_no_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("f");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
        let (done, waited) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let opened = open_without_waiting(&path).and_then(|f| f.metadata());
            let _ = done.send(opened.map(|m| m.is_file()));
        });
        let got = waited.recv_timeout(std::time::Duration::from_secs(10));
        // A thread still waiting in its open is let go by a writer, whatever happened.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = fs::OpenOptions::new().write(true).custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits()).open(&fifo);
        assert!(matches!(got, Ok(Ok(false))), "{got:?}");
    }
}
