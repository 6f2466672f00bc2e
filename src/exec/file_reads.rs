//! The file operations a run's transforms made through the file store (`--files`), as its
//! trace keeps them ([`super::Trace::files`]): what was asked and what was answered, so that a
//! replay answers them from the trace instead of the disk ([`super::replay`]).

use serde::{Deserialize, Serialize};

use crate::files::Version;

/// What a file operation was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOp {
    /// A directory listing.
    ReadDir,
    /// A file's bytes.
    Read,
    /// A file's versions.
    Versions,
    /// The version a tag holds.
    Tag,
}

/// One file operation a run made through its file store, and its answer ([`Trace::files`](super::Trace::files)).
///
/// ```
/// use tdsl::{FileAnswer, FileOp, FileRead};
///
/// // As a trace's `files` holds it.
/// let read: FileRead =
///     serde_json::from_str(r#"{"op": "read", "path": "notes/a.md", "answer": {"text": "hi"}}"#).unwrap();
/// assert_eq!((read.op, read.path.as_str()), (FileOp::Read, "notes/a.md"));
/// assert_eq!(read.answer, FileAnswer::Text("hi".to_string()));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileRead {
    /// What was asked.
    pub op: FileOp,
    /// Of which path (relative to the store's root).
    pub path: String,
    /// The version read (`read`) or the tag looked up (`tag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The size bound of a `read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// The answer.
    pub answer: FileAnswer,
}

/// A file operation's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAnswer {
    /// A listing: `[name, "file" | "directory", linked]` per entry.
    Entries(Vec<(String, String, bool)>),
    /// A file's content, when it is UTF-8.
    Text(String),
    /// A file's content in hexadecimal, when it is not UTF-8.
    Hex(String),
    /// A file's versions, newest first.
    Versions(Vec<VersionRecord>),
    /// The version a tag holds, if any.
    Tag(Option<VersionRecord>),
    /// The store's error.
    Error {
        /// Its code.
        code: String,
        /// Its message.
        message: String,
    },
}

/// A [`Version`] as a trace holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRecord {
    /// The id.
    pub id: String,
    /// When it was made (ms since the Unix epoch).
    #[serde(default)]
    pub created_at_millis: Option<i64>,
    /// Its size in bytes.
    pub size: u64,
    /// Its author.
    #[serde(default)]
    pub author: Option<String>,
    /// Its message.
    #[serde(default)]
    pub message: Option<String>,
}

impl From<&Version> for VersionRecord {
    fn from(v: &Version) -> VersionRecord {
        VersionRecord {
            id: v.id.clone(),
            created_at_millis: v.created_at_millis,
            size: v.size,
            author: v.author.clone(),
            message: v.message.clone(),
        }
    }
}

impl From<&VersionRecord> for Version {
    fn from(v: &VersionRecord) -> Version {
        Version {
            id: v.id.clone(),
            created_at_millis: v.created_at_millis,
            size: v.size,
            author: v.author.clone(),
            message: v.message.clone(),
        }
    }
}
