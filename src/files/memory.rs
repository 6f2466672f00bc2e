//! A file store held in memory: for embedding (files a host already has as data) and for
//! tests. Directories exist implicitly, as the parents of files.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Entry, EntryKind, FileError, FileStore, StorePath, Version};

/// One version of a file and its content.
type Stored = (Version, Arc<[u8]>);

/// Files in memory, each with its versions (newest first).
///
/// ```
/// use std::sync::Arc;
/// use tdsl::MemoryStore;
/// use tdsl::{Engine, Value};
///
/// let mut store = MemoryStore::new();
/// store.insert("notes/today.txt", "buy milk").unwrap();
/// let engine = Engine::new().with_file_store(Arc::new(store));
/// let program = engine.compile(r#"read_file(file_path="notes/today.txt")"#).unwrap();
/// assert_eq!(program.eval(&Value::Null).unwrap(), Value::from("buy milk"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    /// By path text (`StorePath::as_str`), so that a directory's files are one range.
    files: BTreeMap<String, Vec<Stored>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Adds file `path`, or replaces it, with one version: `current`, of unknown date.
    pub fn insert(&mut self, path: &str, content: impl Into<Vec<u8>>) -> Result<&mut MemoryStore, FileError> {
        let content = content.into();
        let p = self.file_slot(path)?;
        self.files
            .insert(p.as_str().to_string(), vec![(Version::current(content.len() as u64, None), Arc::from(content))]);
        Ok(self)
    }

    /// Adds a version of file `path` (creating the file) as its newest. The version's
    /// `size` is taken from `content`.
    pub fn commit(
        &mut self,
        path: &str,
        version: Version,
        content: impl Into<Vec<u8>>,
    ) -> Result<&mut MemoryStore, FileError> {
        let content = content.into();
        let p = self.file_slot(path)?;
        let version = Version { size: content.len() as u64, ..version };
        self.files.entry(p.as_str().to_string()).or_default().insert(0, (version, Arc::from(content)));
        Ok(self)
    }

    /// Checks that `path` can hold a file: no file is among its parents, and it is not
    /// already a directory.
    fn file_slot(&self, path: &str) -> Result<StorePath, FileError> {
        let p = StorePath::parse(path)?;
        if p.is_root() || self.is_dir(&p) {
            return Err(FileError::not_a_file(path));
        }
        let mut parent = String::new();
        for seg in p.segments() {
            if self.files.contains_key(&parent) {
                return Err(FileError::not_a_directory(&parent));
            }
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(seg);
        }
        Ok(p)
    }

    /// The files under directory `dir`, with their paths below it.
    fn under<'a>(&'a self, dir: &'a StorePath) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if dir.is_root() { String::new() } else { format!("{}/", dir.as_str()) };
        let n = prefix.len();
        self.files
            .range(prefix.clone()..)
            .map(|(p, _)| p.as_str())
            .take_while(move |p| p.starts_with(&prefix))
            .map(move |p| &p[n..])
            .filter(|rest| !rest.is_empty())
    }

    fn is_dir(&self, p: &StorePath) -> bool {
        p.is_root() || self.under(p).next().is_some()
    }

    fn file(&self, p: &StorePath) -> Result<&[Stored], FileError> {
        match self.files.get(p.as_str()) {
            Some(v) => Ok(v),
            None if self.is_dir(p) => Err(FileError::not_a_file(p.as_str())),
            None => Err(FileError::not_found(p.as_str())),
        }
    }
}

impl FileStore for MemoryStore {
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError> {
        if self.files.contains_key(dir.as_str()) {
            return Err(FileError::not_a_directory(dir.as_str()));
        }
        if !self.is_dir(dir) {
            return Err(FileError::not_found(dir.as_str()));
        }
        let mut out: Vec<Entry> = Vec::new();
        for rest in self.under(dir) {
            let (name, kind) = match rest.split_once('/') {
                Some((name, _)) => (name, EntryKind::Directory),
                None => (rest, EntryKind::File),
            };
            // Paths are sorted, so a directory's files are adjacent: one entry for them.
            if out.last().is_some_and(|e| e.name == name) {
                continue;
            }
            out.push(Entry { name: name.to_string(), kind, link: false });
        }
        Ok(out)
    }

    fn read(&self, path: &StorePath, version: Option<&Version>, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let versions = self.file(path)?;
        let found = match version {
            None => versions.first(),
            Some(v) => versions.iter().find(|(x, _)| x.id == v.id),
        };
        let Some((v, content)) = found else {
            return Err(FileError::unknown_version(path.as_str(), version.map_or("", |v| &v.id)));
        };
        if v.size > max_bytes {
            return Err(FileError::too_large(path.as_str(), v.size, max_bytes));
        }
        Ok(content.to_vec())
    }

    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError> {
        Ok(self.file(path)?.iter().map(|(v, _)| v.clone()).collect())
    }
}
