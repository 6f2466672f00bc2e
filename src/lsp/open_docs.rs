//! The open documents as the analysis reads them: a callee that is open is read from its
//! editor buffer, not from disk, and loaded once per version of its text when a check
//! first reaches it — not every open document for every check (with 300 open files of 300
//! steps, each check parsed all 300: closing one re-checked them all, 92 s).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::analysis::{LoadedTool, NameRefusal, NamedTools, ToolRoot};

/// One version of an open document's text, and its load once a check has read it.
pub(crate) struct Source {
    pub(crate) text: Arc<str>,
    loaded: OnceLock<Arc<LoadedTool>>,
}

impl Source {
    pub(crate) fn new(text: &str) -> Arc<Source> {
        Arc::new(Source { text: Arc::from(text), loaded: OnceLock::new() })
    }
}

/// The open documents under one tool root, by canonical path, offered to the analysis
/// before the disk ([`ToolRoot::with_named`]).
pub(crate) struct OpenDocs {
    pub(crate) dir: PathBuf,
    pub(crate) docs: HashMap<PathBuf, Arc<Source>>,
}

impl std::fmt::Debug for OpenDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenDocs({} under {})", self.docs.len(), self.dir.display())
    }
}

impl NamedTools for OpenDocs {
    /// The open document a `tool_definition_path` names; `None` (read from disk) for any
    /// other, and for a path that cannot name a file under the root (the analysis says why).
    fn resolve(&self, tool_path: &str) -> Option<Result<Arc<LoadedTool>, NameRefusal>> {
        if self.docs.is_empty() {
            return None;
        }
        let path = ToolRoot::assumed(&self.dir).file_path(tool_path).ok()?;
        let file = std::fs::canonicalize(path).ok()?;
        let source = self.docs.get(&file)?;
        let loaded = source.loaded.get_or_init(|| {
            Arc::new(LoadedTool::from_source(file.clone(), tool_path.to_string(), source.text.clone()))
        });
        Some(Ok(loaded.clone()))
    }
}
