//! What opening a history's file may meet: a file or folder this user may not write, a
//! lock another process holds while it creates the database, a path that is no regular file.

use std::path::Path;
use std::time::{Duration, Instant};

use super::HistoryError;

/// Why the database at `what` cannot be recorded into.
pub(super) fn unwritable(what: &str, why: &str) -> HistoryError {
    HistoryError(format!(
        "{what}: runs cannot be recorded there: {why} (a read-only file, folder or mount; `tdsl history` can still read \
         it)"
    ))
}

/// An error opening the database at `what`: a refusal to write said as [`unwritable`] (a
/// folder this user may not write fails so when the WAL is set up).
pub(super) fn opening(what: &str) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ReadOnly => {
            unwritable(what, &e.to_string())
        }
        _ => HistoryError(format!("{what}: {e}")),
    }
}

/// `file:PATH?immutable=1`, the path percent-encoded where a URI needs it.
pub(super) fn immutable_uri(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut uri = String::from("file:");
    for b in text.bytes() {
        match b {
            b'%' | b'?' | b'#' | 0x80.. => uri.push_str(&format!("%{b:02X}")),
            _ => uri.push(char::from(b)),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Runs `f` again while SQLite answers "database is locked" or "busy", for up to
/// [`BUSY_RETRY`]. The busy timeout covers most waits for a lock, but not all: two processes
/// creating the same new database at once (one switching it to WAL while the other opens
/// it) can be told "locked" without the busy handler being called, and then simply trying
/// again succeeds.
pub(super) fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && started.elapsed() < BUSY_RETRY =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// How long opening a history keeps trying when SQLite says it is locked ([`retry_busy`]).
const BUSY_RETRY: Duration = Duration::from_secs(10);

/// Whether `path` names a regular file (links followed) — `false` when nothing is there yet.
/// Anything else is refused before SQLite opens it: opened to read, a FIFO held `tdsl
/// history` until something wrote into it, for ever; opened to write, a device or a FIFO
/// failed with "disk I/O error", which named nothing.
pub(super) fn regular_file(path: &Path, what: &str) -> Result<bool, HistoryError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) => {
            let kind = if m.is_dir() { "a folder" } else { "a FIFO, a device or a socket" };
            Err(HistoryError(format!("{what} is {kind}, not a file: a history is a SQLite database file")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(HistoryError(format!("{what}: {e}"))),
    }
}

/// Makes the history private to this user before it is opened: it keeps every payload of
/// every run (arguments, tools' answers), and was created readable by every local user
/// (0644 in a 0755 folder; hostile round 10, outside). A folder it creates is 0700; the
/// database is created 0600, and one that others may read or write is made 0600 (SQLite
/// gives its `-wal` and `-shm` files the database's mode; ones left from before are made
/// 0600 too). Best effort on what this user does not own: opening then says what fails.
pub(super) fn make_private(path: &Path, what: &str) -> Result<(), HistoryError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| HistoryError(format!("cannot create {}: {e}", dir.display())))?;
        }
        if !regular_file(path, what)? {
            match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
                Ok(_) => {}
                // Made by another process meanwhile: tightened below like any other.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(HistoryError(format!("{what}: {e}"))),
            }
        }
        let mut all = vec![path.to_path_buf()];
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            all.push(p.into());
        }
        for p in all {
            if let Ok(m) = std::fs::symlink_metadata(&p) {
                if m.is_file() && m.permissions().mode() & 0o077 != 0 {
                    let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600));
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| HistoryError(format!("cannot create {}: {e}", dir.display())))?;
        }
        let _ = what;
    }
    Ok(())
}
