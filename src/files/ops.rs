//! What the five file functions do, on any [`FileStore`]: parse and confine the path text,
//! walk and match for `list_files`, decode for `read_file`, find versions by id.
//!
//! The function bodies in `functions::builtins` only convert values; every rule about
//! files is here, once, so the in-memory store, the local store and a host's own store
//! agree.

use globset::{GlobBuilder, GlobMatcher};

use super::path::{is_rooted, names_directory};
use super::{EntryKind, FileError, FileStore, StorePath, Version, CURRENT_VERSION, MAX_LISTED_FILES};
use crate::diagnostic::Code;

/// The pattern `list_files` uses when none is given: the files directly in the directory.
pub(crate) const DEFAULT_PATTERN: &str = "*";

/// A UTF-8 byte-order mark; `read_file` drops one at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What `list_files` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listing {
    /// Matching file paths, sorted, at most [`MAX_LISTED_FILES`]: relative to the root, or
    /// with a leading `/` when the directory was given with one (`/config/a.json`).
    pub paths: Vec<String>,
    /// How many matched before the cap.
    pub matched: usize,
    /// Directory entries visited (for fuel accounting).
    pub visited: usize,
}

/// Parses a path a program gave. A leading `/` names the store's root, never the host's.
pub(crate) fn parse(text: &str) -> Result<StorePath, FileError> {
    StorePath::parse(text)
}

/// Parses the path of a file a program wants to read: as [`parse`], and a path written as a
/// directory (`notes.txt/`, `notes.txt/.`) is never read as a file, even when the file
/// exists — [`Code::NotADirectory`] then, as the operating system would say; a directory
/// stays [`Code::NotAFile`].
fn parse_file(store: &dyn FileStore, text: &str) -> Result<StorePath, FileError> {
    let p = parse(text)?;
    if names_directory(text) {
        // What is there, asked without listing a directory (which may be huge): only a file
        // has versions.
        return Err(match store.versions(&p) {
            Ok(_) => FileError::new(
                Code::NotADirectory,
                format!("{text:?} ends with `/`, which names a directory, but {:?} is a file", p.as_str()),
            ),
            Err(e) if e.code == Code::NotAFile => FileError::not_a_file(text),
            Err(e) => e,
        });
    }
    Ok(p)
}

/// `list_files(directory_path, pattern)`: the files under `dir` whose path relative to
/// `dir` matches the glob `pattern` (default `*`: the files directly in `dir`), as paths
/// relative to the root — written with a leading `/` when `dir` was, so that each reads
/// back in the caller's form — sorted, the first [`MAX_LISTED_FILES`] of them.
///
/// `*` and `?` do not match `/`; `**` matches any number of directories. Directories are
/// not listed, only walked; linked directories are not walked into. Visiting more than
/// `max_entries` directory entries is an error.
pub(crate) fn list(
    store: &dyn FileStore,
    dir: &str,
    pattern: Option<&str>,
    max_entries: usize,
) -> Result<Listing, FileError> {
    let root = parse(dir)?;
    let pattern = pattern.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PATTERN);
    let matcher = glob(pattern)?;
    // Without `**`, a pattern of n segments only matches n levels down: walk no deeper.
    let max_depth = if pattern.contains("**") { usize::MAX } else { pattern.matches('/').count() + 1 };
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut stack = vec![(root.clone(), 1usize)];
    while let Some((d, depth)) = stack.pop() {
        for entry in store.read_dir(&d)? {
            visited += 1;
            if visited > max_entries {
                return Err(FileError::new(
                    Code::ListingTooLarge,
                    format!("listing {dir:?} visits more than the limit of {max_entries} directory entries"),
                ));
            }
            // Names no path can spell (odd characters, `.git`) are not listed.
            let Some(path) = d.join(&entry.name) else { continue };
            match entry.kind {
                EntryKind::File => {
                    if path.relative_to(&root).is_some_and(|rel| matcher.is_match(rel)) {
                        found.push(path.as_str().to_string());
                    }
                }
                EntryKind::Directory => {
                    if !entry.link && depth < max_depth {
                        stack.push((path, depth + 1));
                    }
                }
            }
        }
    }
    found.sort_unstable();
    let matched = found.len();
    found.truncate(MAX_LISTED_FILES);
    if is_rooted(dir) {
        for p in &mut found {
            p.insert(0, '/');
        }
    }
    Ok(Listing { paths: found, matched, visited })
}

fn glob(pattern: &str) -> Result<GlobMatcher, FileError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| FileError::new(Code::InvalidGlob, format!("invalid glob pattern {pattern:?}: {}", e.kind())))
}

/// `read_file(file_path, version_id)`: the file's content (at a version) as text, at most
/// `max_bytes` long. A leading byte-order mark is dropped; content that is not UTF-8, or
/// that holds a NUL byte, is binary and an error.
pub(crate) fn read_text(
    store: &dyn FileStore,
    path: &str,
    version_id: Option<&str>,
    max_bytes: u64,
) -> Result<String, FileError> {
    let p = parse_file(store, path)?;
    let version = match version_id {
        // The content as it is now, whatever its history.
        Some(CURRENT_VERSION) | None => None,
        Some(id) => Some(find_version(store, &p, path, id)?),
    };
    let mut bytes = store.read(&p, version.as_ref(), max_bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FileError::too_large(path, bytes.len() as u64, max_bytes));
    }
    let skip = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    bytes.drain(..skip);
    // Binary from its first NUL byte, or its first byte that is not UTF-8 (offsets count
    // from the start of the file).
    match String::from_utf8(bytes) {
        Ok(text) => match text.find('\0') {
            Some(n) => Err(binary(path, skip + n, "a NUL byte")),
            // A registered secret in a file (a copy of a token file, a log that names it) is
            // redacted as in any tool output.
            None => Ok(match crate::secrets::redact(&text) {
                std::borrow::Cow::Owned(r) => r,
                std::borrow::Cow::Borrowed(_) => text,
            }),
        },
        Err(e) => {
            let bad = e.utf8_error().valid_up_to();
            match e.as_bytes()[..bad].iter().position(|&b| b == 0) {
                Some(n) => Err(binary(path, skip + n, "a NUL byte")),
                None => Err(binary(path, skip + bad, "a byte that is not UTF-8")),
            }
        }
    }
}

fn binary(path: &str, at: usize, what: &str) -> FileError {
    FileError::new(Code::BinaryFile, format!("{path:?} is not UTF-8 text ({what} at byte {at})"))
}

/// `list_file_versions(file_path)`: the versions, newest first.
pub(crate) fn versions(store: &dyn FileStore, path: &str) -> Result<Vec<Version>, FileError> {
    store.versions(&parse_file(store, path)?)
}

/// `describe_version(file_path, version_id)`: one version, the newest when no id is given.
pub(crate) fn describe(store: &dyn FileStore, path: &str, version_id: Option<&str>) -> Result<Version, FileError> {
    match version_id {
        Some(id) => find_version(store, &parse_file(store, path)?, path, id),
        None => versions(store, path)?.into_iter().next().ok_or_else(|| FileError::not_found(path)),
    }
}

/// The version of file `p` (written `path`) that `id` names (SPEC §4.5), tried in order:
///
/// 1. a listed version's id, exactly;
/// 2. `current`: the content as it is now — the newest version, which is the listed
///    `current` when the file differs from its newest commit, else that commit;
/// 3. a tag's exact name ([`FileStore::tagged_version`]);
/// 4. an abbreviation of one listed id: at least 7 hexadecimal digits, matching one only.
///
/// `id` is only ever compared with ids and names the store lists: it never reaches git (or
/// any other program) as an option or revision syntax, so `HEAD~1`, `v1.2^{tree}`,
/// `@{-1}`, `:/text`, `a..b` and `--output=x` are unknown versions like any other.
fn find_version(store: &dyn FileStore, p: &StorePath, path: &str, id: &str) -> Result<Version, FileError> {
    let mut versions = store.versions(p)?;
    if let Some(i) = versions.iter().position(|v| v.id == id) {
        return Ok(versions.swap_remove(i));
    }
    if id == CURRENT_VERSION {
        return versions.into_iter().next().ok_or_else(|| FileError::not_found(path));
    }
    if let Some(v) = store.tagged_version(p, id)? {
        return Ok(v);
    }
    let abbreviation = id.len() >= 7 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let mut candidates = versions.into_iter().filter(|v| abbreviation && v.id.starts_with(id));
    match (candidates.next(), candidates.next()) {
        (Some(v), None) => Ok(v),
        (Some(_), Some(_)) => Err(FileError::new(
            Code::UnknownVersion,
            format!("{id:?} abbreviates more than one version of {path:?}; give more of the id"),
        )),
        (None, _) if looks_like_revision_syntax(id) => Err(FileError::unknown_version(path, id)
            .with_note("a version id is a commit id, `current` or a tag name; revision expressions are not read")),
        (None, _) => Err(FileError::unknown_version(path, id)),
    }
}

/// Whether `id` is written like one of git's revision expressions or options rather than a
/// name: only to say so in the error (nothing reads it as one).
fn looks_like_revision_syntax(id: &str) -> bool {
    id.starts_with('-')
        || id.contains("..")
        || id.contains("@{")
        || id
            .chars()
            .any(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\') || c.is_whitespace() || c.is_control())
}
