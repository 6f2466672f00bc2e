//! Store paths: program text turned into a normalized path relative to a store's root.
//!
//! This is the lexical half of confinement: after [`StorePath::parse`], a path has no `.`,
//! `..` or empty segments, no absolute form, and no characters that could mean something
//! else to an operating system (NUL, control characters, backslashes). The physical half —
//! symbolic links — is the local store's job.
//!
//! A leading `/` names the store's root, never the host's (SPEC §4.5): `/config` and
//! `config` are the same path. Which form the caller used is a matter for the results
//! ([`is_rooted`]), not for the path.

use std::fmt;

use super::FileError;

/// The longest path text accepted, in bytes (Linux's `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// A path inside a store: `/`-separated segments relative to the root, normalized. The
/// root itself is the empty path. Only [`StorePath::parse`] and [`StorePath::join`] make
/// one, so a store never sees a path that leaves its root lexically.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorePath(String);

impl StorePath {
    /// The root directory.
    pub fn root() -> StorePath {
        StorePath(String::new())
    }

    /// Parses a path a program gave. Every path is read from the store's root: `a/b`,
    /// `./a/b` and `/a/b` are the same path (`""`, `"."` and `"/"` are the root itself);
    /// `..` may climb back out of a directory but never above the root.
    pub fn parse(text: &str) -> Result<StorePath, FileError> {
        if text.len() > MAX_PATH_BYTES {
            return Err(FileError::invalid(text, &format!("longer than {MAX_PATH_BYTES} bytes")));
        }
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(FileError::invalid(text, &format!("it contains the control character {c:?}")));
        }
        if text.contains('\\') {
            return Err(FileError::invalid(text, "it contains a backslash; separate directories with `/`"));
        }
        let mut segments: Vec<&str> = Vec::new();
        for seg in text.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if segments.pop().is_none() {
                        return Err(FileError::escape(text, "leaves the file store's root (`..` above the root)"));
                    }
                }
                _ => {
                    check_segment(text, seg)?;
                    segments.push(seg);
                }
            }
        }
        Ok(StorePath(segments.join("/")))
    }

    /// This directory's entry `name`, or `None` when `name` is not one plain segment the
    /// store serves (listings skip such entries).
    pub fn join(&self, name: &str) -> Option<StorePath> {
        let plain = !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains(['/', '\\'])
            && !name.chars().any(char::is_control);
        if !plain || check_segment(name, name).is_err() {
            return None;
        }
        Some(if self.0.is_empty() { StorePath(name.to_string()) } else { StorePath(format!("{}/{name}", self.0)) })
    }

    /// The path text: `a/b.txt`, or `""` for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, outermost first (none for the root).
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// The path below `dir` (`reports/2025/a.txt` below `reports` is `2025/a.txt`).
    pub fn relative_to(&self, dir: &StorePath) -> Option<&str> {
        if dir.is_root() {
            return Some(&self.0);
        }
        self.0.strip_prefix(&dir.0)?.strip_prefix('/')
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "." } else { &self.0 })
    }
}

/// Refuses segments that name git's metadata: a store rooted in a git work tree must not
/// serve `.git/config` (which may hold credentials) or the object database.
fn check_segment(text: &str, seg: &str) -> Result<(), FileError> {
    if seg.eq_ignore_ascii_case(".git") {
        return Err(FileError::invalid(text, "`.git` holds git's metadata, which the file store does not serve"));
    }
    Ok(())
}

/// Whether the caller wrote `text` from the root (`/config`): results derived from it (the
/// paths `list_files` returns) are written the same way, so they read back unchanged.
pub(crate) fn is_rooted(text: &str) -> bool {
    text.starts_with('/')
}

/// Whether `text` ends in a way that names a directory (`a/`, `a/.`): such a path is never
/// read as a file, even when the file exists (`notes.txt/` is not `notes.txt`).
pub(crate) fn names_directory(text: &str) -> bool {
    text.ends_with('/') || text.ends_with("/.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    fn ok(text: &str) -> String {
        StorePath::parse(text).map(|p| p.0).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn code(text: &str) -> Code {
        StorePath::parse(text).expect_err(text).code
    }

    #[test]
    fn normalizes() {
        assert_eq!(ok(""), "");
        assert_eq!(ok("."), "");
        assert_eq!(ok("./a//b/"), "a/b");
        assert_eq!(ok("a/../b"), "b");
        assert_eq!(ok("a/b/../../c"), "c");
        // A leading `/` is the store's root, never the host's.
        assert_eq!(ok("/"), "");
        assert_eq!(ok("//"), "");
        assert_eq!(ok("/config"), "config");
        assert_eq!(ok("/a/b.txt"), "a/b.txt");
        assert_eq!(ok("/srv/files/a/b.txt"), "srv/files/a/b.txt");
        assert_eq!(ok("/etc/passwd"), "etc/passwd");
        assert_eq!(ok("/x/../y"), "y");
        assert_eq!(ok("café/naïve file.txt"), "café/naïve file.txt");
    }

    #[test]
    fn refuses_escapes_and_odd_text() {
        assert_eq!(code(".."), Code::PathEscapesRoot);
        assert_eq!(code("../x"), Code::PathEscapesRoot);
        assert_eq!(code("a/../../x"), Code::PathEscapesRoot);
        assert_eq!(code("/.."), Code::PathEscapesRoot);
        assert_eq!(code("/../etc/passwd"), Code::PathEscapesRoot);
        assert_eq!(code("/srv/../../secret"), Code::PathEscapesRoot);
        assert_eq!(code("a\0b"), Code::InvalidPath);
        assert_eq!(code("a\nb"), Code::InvalidPath);
        assert_eq!(code("..\\x"), Code::InvalidPath);
        assert_eq!(code(".git/config"), Code::InvalidPath);
        assert_eq!(code("sub/.GIT/HEAD"), Code::InvalidPath);
        assert_eq!(code(&"a/".repeat(3000)), Code::InvalidPath);
        assert_eq!(code("/.git/config"), Code::InvalidPath);
    }

    #[test]
    fn forms() {
        assert!(is_rooted("/config") && is_rooted("/") && !is_rooted("config") && !is_rooted("./config"));
        for dir in ["a/", "a/.", "/a/", "a//", "a/./"] {
            assert!(names_directory(dir), "{dir}");
        }
        for file in ["a", "/a", "a/b", "a/..", ".a", "a."] {
            assert!(!names_directory(file), "{file}");
        }
    }

    #[test]
    fn join_takes_plain_names_only() {
        let dir = StorePath::parse("a").expect("parses");
        assert_eq!(dir.join("b.txt").map(|p| p.0), Some("a/b.txt".to_string()));
        assert_eq!(StorePath::root().join("b").map(|p| p.0), Some("b".to_string()));
        for bad in ["", ".", "..", "x/y", "x\\y", "a\nb", ".git"] {
            assert_eq!(dir.join(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn relative_to() {
        let p = StorePath::parse("reports/2025/a.txt").expect("parses");
        assert_eq!(p.relative_to(&StorePath::parse("reports").expect("parses")), Some("2025/a.txt"));
        assert_eq!(p.relative_to(&StorePath::root()), Some("reports/2025/a.txt"));
        assert_eq!(p.relative_to(&StorePath::parse("rep").expect("parses")), None);
    }
}
