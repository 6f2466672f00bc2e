//! Skills (SPEC §16): plans that worked, kept as ordinary composite `.tool` files in a folder
//! under the tool root (`serve --mcp --plans --skills DIR`), so that a later plan calls them
//! by name. This is the store, without MCP: the name rules, the file a plan becomes, the
//! atomic write, the versions and the count limit. The MCP surface is `crate::mcp::skills`.
//!
//! A skill file names what it calls as `tdsl check --root ROOT` reads it: a served tool by its
//! tool path under the root (`/tools/echo.tool`), another skill by its own
//! (`/skills/other.tool`), and an upstream server's tool as `SERVER/TOOL` (checked and run with
//! `--upstream SERVER=…`). Every version saved is kept as `DIR/.versions/NAME/vN-MILLIS.json`
//! (not `.tool`: the versions are not tools under the root).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value as Json;

use crate::diagnostic::Code;
use crate::types::{Fit, Type};

/// The most skills a folder holds by default (`serve --max-skills`, [`crate::ranges::SKILLS`]).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) const DEFAULT_MAX_SKILLS: usize = 256;

/// The most versions kept of one skill: the newest; an older one is removed when a save
/// passes it. With [`KEPT_DELETED`], what the versions can take is bounded by the limits
/// the operator chose: at most (`--max-skills` + 32) × 8 files of the plan size limit each.
pub(crate) const KEPT_VERSIONS: usize = 8;

/// The most deleted skills whose versions are kept: those last saved (by their newest
/// version's time, then by name); the others' versions are removed when a delete passes it.
pub(crate) const KEPT_DELETED: usize = 32;

/// The longest record of a skill's check ([`SkillStore::checked_record`]).
const MAX_RECORD_BYTES: usize = 256;

/// The longest skill name (`[a-z][a-z0-9_]{0,63}`).
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// Why a skill was not saved or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillError {
    /// Its stable code (`E1401`…`E1406`).
    pub code: Code,
    /// What went wrong, and what to do.
    pub message: String,
}

impl std::fmt::Display for SkillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.message, self.code.as_str())
    }
}

fn fail(code: Code, message: impl Into<String>) -> SkillError {
    SkillError { code, message: message.into() }
}

/// One saved version of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillVersion {
    /// 1 for the first save, one more for each save after it.
    pub version: u64,
    /// When it was saved (RFC 3339, UTC).
    pub saved_at: String,
}

/// What writes a file's bytes: the file system, or in tests one that fails like a full disk.
pub(crate) type Writer = fn(&mut std::fs::File, &[u8]) -> std::io::Result<()>;

fn write_all(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)
}

/// The skills folder.
#[derive(Debug)]
pub struct SkillStore {
    dir: PathBuf,
    /// The folder's tool path under the root (`/skills`).
    tool_dir: String,
    max_skills: usize,
    /// Saves and deletes of this process, one at a time (the rename keeps other processes'
    /// files whole).
    lock: Mutex<()>,
    writer: Writer,
}

static TEMP: AtomicU64 = AtomicU64::new(0);

/// Whether `name` follows the rule `[a-z][a-z0-9_]{0,63}`.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && name.len() <= MAX_NAME_CHARS
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl SkillStore {
    /// The store of `dir`, a folder under `root` (made when missing), holding at most
    /// `max_skills` skills. The error says why the folder cannot be used.
    pub fn open(root: &Path, dir: &Path, max_skills: usize) -> Result<SkillStore, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("--skills {}: cannot make the folder: {e}", dir.display()))?;
        let canon = std::fs::canonicalize(dir).map_err(|e| format!("--skills {}: {e}", dir.display()))?;
        let root = std::fs::canonicalize(root).map_err(|e| format!("--root {}: {e}", root.display()))?;
        let rel = canon.strip_prefix(&root).map_err(|_| {
            format!(
                "--skills {}: the skills folder must be under the tool root {} (skill files name the tools they call by \
                 their tool paths under it)",
                dir.display(),
                root.display()
            )
        })?;
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.is_empty() {
            return Err(format!(
                "--skills {}: the skills folder must be a folder under the root, not the root",
                dir.display()
            ));
        }
        Ok(SkillStore {
            dir: canon,
            tool_dir: format!("/{}", parts.join("/")),
            max_skills,
            lock: Mutex::new(()),
            writer: write_all,
        })
    }

    /// The same store writing through `writer` (tests: a full disk).
    pub fn with_writer(mut self, writer: Writer) -> SkillStore {
        self.writer = writer;
        self
    }

    /// The folder (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The most skills it holds.
    pub fn max_skills(&self) -> usize {
        self.max_skills
    }

    /// A skill's file.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.tool"))
    }

    /// A skill's tool path under the root (`/skills/NAME.tool`).
    pub fn tool_path(&self, name: &str) -> String {
        format!("{}/{name}.tool", self.tool_dir)
    }

    fn versions_dir(&self, name: &str) -> PathBuf {
        self.dir.join(".versions").join(name)
    }

    /// Whether `.versions` and `.versions/NAME` are folders of their own where they exist
    /// — not links, which would make a save write, and pruning delete, elsewhere.
    fn versions_are_folders(&self, name: &str) -> bool {
        [self.dir.join(".versions"), self.versions_dir(name)]
            .iter()
            .all(|p| std::fs::symlink_metadata(p).map_or(true, |m| m.file_type().is_dir()))
    }

    /// Where the record of `name`'s last check is kept: `DIR/.checked/NAME` (not `.tool`).
    fn checked_file(&self, name: &str) -> PathBuf {
        self.dir.join(".checked").join(name)
    }

    /// Whether `.checked` and its record of `name` are a folder and a file of their own where
    /// they exist — not links, which would make a record be read or written elsewhere.
    fn records_are_own(&self, name: &str) -> bool {
        let own = |p: &Path, dir: bool| {
            std::fs::symlink_metadata(p).map_or(true, |m| {
                if dir {
                    m.file_type().is_dir()
                } else {
                    m.file_type().is_file()
                }
            })
        };
        own(&self.dir.join(".checked"), true) && own(&self.checked_file(name), false)
    }

    /// The record of `name`'s last check that passed ([`SkillStore::record_checked`]): what
    /// the server compares with the skill's fingerprint now, so that a skill unchanged since
    /// (its file and what its check reads) is not checked again at every start. `None`
    /// without one (or one that is not a short line).
    pub fn checked_record(&self, name: &str) -> Option<String> {
        if !valid_name(name) || !self.records_are_own(name) {
            return None;
        }
        let text = std::fs::read_to_string(self.checked_file(name)).ok()?;
        let line = text.trim();
        (line.len() <= MAX_RECORD_BYTES && !line.contains('\n')).then(|| line.to_string())
    }

    /// Records that `name`'s check passed with the fingerprint `print` (best effort: a
    /// folder that cannot be written just has its skills checked at every start).
    pub fn record_checked(&self, name: &str, print: &str) {
        if !valid_name(name) || !self.records_are_own(name) || print.len() > MAX_RECORD_BYTES {
            return;
        }
        let dir = self.dir.join(".checked");
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        let _ = self.write_atomic(&dir, &self.checked_file(name), format!("{print}\n").as_bytes());
    }

    /// Removes the record of `name`'s last check (it no longer checks, or it was deleted).
    pub fn forget_checked(&self, name: &str) {
        if valid_name(name) && self.records_are_own(name) {
            let _ = std::fs::remove_file(self.checked_file(name));
        }
    }

    /// The names of the skills in the folder (`NAME.tool` files; other names are left out),
    /// sorted.
    pub fn names(&self) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(stem) = file_name.to_str().and_then(|n| n.strip_suffix(".tool")) else { continue };
            if valid_name(stem) && entry.file_type().is_ok_and(|t| t.is_file()) {
                out.push(stem.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every `.tool` file name in the folder, whatever its name: what a new name may not
    /// clash with, case aside.
    fn all_stems(&self) -> Vec<String> {
        std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".tool")).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every version kept of `name` (the newest [`KEPT_VERSIONS`]), oldest first.
    pub fn versions(&self, name: &str) -> Vec<SkillVersion> {
        self.version_files(name).into_iter().map(|(v, _)| v).collect()
    }

    /// The versions kept of `name` with their files, oldest first.
    fn version_files(&self, name: &str) -> Vec<(SkillVersion, PathBuf)> {
        if !self.versions_are_folders(name) {
            return Vec::new();
        }
        let mut out: Vec<(SkillVersion, PathBuf)> = std::fs::read_dir(self.versions_dir(name))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str().and_then(parse_version_file).map(|v| (v, e.path())))
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|(v, _)| v.version);
        out
    }

    /// Removes the versions of `name` older than the newest [`KEPT_VERSIONS`] (best effort:
    /// a file that cannot be removed is left, and tried again at the next save).
    fn prune_versions(&self, name: &str) {
        let files = self.version_files(name);
        for (_, old) in &files[..files.len().saturating_sub(KEPT_VERSIONS)] {
            let _ = std::fs::remove_file(old);
        }
    }

    /// Removes the versions of the deleted skills past the [`KEPT_DELETED`] last saved
    /// (best effort, as [`SkillStore::prune_versions`]).
    fn prune_deleted(&self) {
        let versions = self.dir.join(".versions");
        if !std::fs::symlink_metadata(&versions).is_ok_and(|m| m.file_type().is_dir()) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(versions) else { return };
        let mut deleted: Vec<(String, i64)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| valid_name(n) && !self.file(n).exists())
            .map(|n| {
                let newest = self.version_files(&n).last().map_or(0, |(_, f)| millis_of(f));
                (n, newest)
            })
            .collect();
        // Saved last first; at the same millisecond by name, so that the order is
        // deterministic.
        deleted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (name, _) in deleted.iter().skip(KEPT_DELETED) {
            let _ = std::fs::remove_dir_all(self.versions_dir(name));
        }
    }

    /// The version a name's file is now (the newest saved), if any was saved.
    pub fn current(&self, name: &str) -> Option<SkillVersion> {
        self.versions(name).pop()
    }

    /// Whether `name` may be saved: the name rule, no clash (ignoring case) with `taken`
    /// (the other callable tools) or with another file of the folder.
    pub fn check_name(&self, name: &str, taken: &[String]) -> Result<(), SkillError> {
        if !valid_name(name) {
            return Err(fail(
                Code::SkillBadName,
                format!(
                    "`{}` is not a skill name: 1–64 of lower-case ASCII letters, digits and `_`, starting with a letter \
                     (`[a-z][a-z0-9_]{{0,63}}`), such as `weekly_report`",
                    crate::plans::escape_controls(name)
                ),
            ));
        }
        if let Some(t) = taken.iter().find(|t| t.eq_ignore_ascii_case(name) || t.to_lowercase() == name) {
            return Err(fail(
                Code::SkillNameTaken,
                format!("`{name}` is the name of a tool the server already offers (`{t}`); choose another name"),
            ));
        }
        if let Some(other) = self.all_stems().into_iter().find(|s| s != name && s.to_lowercase() == name) {
            return Err(fail(
                Code::SkillNameTaken,
                format!(
                    "`{name}` differs only by case from `{other}.tool` in the skills folder (one file on a \
                     case-insensitive file system); choose another name"
                ),
            ));
        }
        Ok(())
    }

    /// Saves `source` (a composite tool's JSON, [`skill_source`]) as the skill `name`, after
    /// [`SkillStore::check_name`]: atomically (a temporary file in the folder, written,
    /// synced, renamed over the skill's file), with the version kept under
    /// `.versions/NAME/`. An existing skill needs `replace`.
    pub fn save(&self, name: &str, source: &str, replace: bool, taken: &[String]) -> Result<SkillVersion, SkillError> {
        self.check_name(name, taken)?;
        let _one = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let file = self.file(name);
        let exists = file.is_file();
        if exists && !replace {
            return Err(fail(
                Code::SkillExists,
                format!("a skill named `{name}` exists; send `replace: true` to save a new version of it"),
            ));
        }
        if !exists {
            let count = self.names().map_err(|e| self.io(&self.dir, &e))?.len();
            if count >= self.max_skills {
                return Err(fail(
                    Code::SkillTooMany,
                    format!(
                        "the skills folder holds {count} skills, the most it may (--max-skills {}); delete one first",
                        self.max_skills
                    ),
                ));
            }
        }
        if !self.versions_are_folders(name) {
            return Err(fail(
                Code::SkillWrite,
                format!(
                    "cannot write the skill's version under {}: it is not a folder of the skills folder's own (a \
                     link, or a file); nothing was changed",
                    self.versions_dir(name).display()
                ),
            ));
        }
        let Some(version) = self.current(name).map_or(Some(1), |v| v.version.checked_add(1)) else {
            return Err(fail(
                Code::SkillWrite,
                format!("the versions of `{name}` are numbered as high as they go; nothing was changed"),
            ));
        };
        let now = chrono::Utc::now();
        let saved_at = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let versions = self.versions_dir(name);
        std::fs::create_dir_all(&versions).map_err(|e| self.io(&versions, &e))?;
        let kept = versions.join(format!("v{version}-{}.json", now.timestamp_millis()));
        self.write_atomic(&versions, &kept, source.as_bytes())?;
        if let Err(e) = self.write_atomic(&self.dir, &file, source.as_bytes()) {
            let _ = std::fs::remove_file(&kept);
            return Err(e);
        }
        self.prune_versions(name);
        Ok(SkillVersion { version, saved_at })
    }

    /// Removes the skill `name` (its versions stay, for the [`KEPT_DELETED`] last saved):
    /// the version it was.
    pub fn delete(&self, name: &str) -> Result<Option<SkillVersion>, SkillError> {
        let _one = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let file = self.file(name);
        if !valid_name(name) || !file.is_file() {
            return Err(fail(
                Code::SkillMissing,
                format!("there is no skill named `{}`", crate::plans::escape_controls(name)),
            ));
        }
        std::fs::remove_file(&file).map_err(|e| self.io(&file, &e))?;
        sync_dir(&self.dir);
        self.forget_checked(name);
        let was = self.current(name);
        self.prune_deleted();
        Ok(was)
    }

    fn io(&self, path: &Path, e: &std::io::Error) -> SkillError {
        fail(Code::SkillWrite, format!("cannot write the skill at {}: {e}; nothing was changed", path.display()))
    }

    /// Writes `bytes` to `to` through a temporary file in `dir`: no partial `to` is ever
    /// visible; a failure removes the temporary file.
    fn write_atomic(&self, dir: &Path, to: &Path, bytes: &[u8]) -> Result<(), SkillError> {
        let temp = dir.join(format!(
            ".tmp-{}-{}-{}",
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed),
            to.file_name().and_then(|n| n.to_str()).unwrap_or("skill")
        ));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
            (self.writer)(&mut f, bytes)?;
            f.sync_all()?;
            std::fs::rename(&temp, to)
        })();
        match written {
            Ok(()) => {
                sync_dir(dir);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(self.io(to, &e))
            }
        }
    }
}

/// Syncs a folder so a rename in it survives a crash (best effort: not every platform can).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The time in a version file's name (`vN-MILLIS.json`), 0 when it has none.
fn millis_of(file: &Path) -> i64 {
    file.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".json"))
        .and_then(|n| n.split_once('-'))
        .and_then(|(_, m)| m.parse().ok())
        .unwrap_or(0)
}

/// `vN-MILLIS.json` → its version and time.
fn parse_version_file(name: &str) -> Option<SkillVersion> {
    let (n, millis) = name.strip_prefix('v')?.strip_suffix(".json")?.split_once('-')?;
    let version = n.parse().ok()?;
    let millis: i64 = millis.parse().ok()?;
    let saved_at =
        chrono::DateTime::from_timestamp_millis(millis)?.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    Some(SkillVersion { version, saved_at })
}

/// The `.tool` file a plan becomes: the plan with `description`, and each step's
/// `tool_definition_path` as `resolve` names it (a served name or a skill's name → its tool
/// path; what `resolve` does not know, such as `SERVER/TOOL`, as written). A plan without
/// `responses` gets those of `result`, its result's type as the check has it
/// ([`inferred_responses`]). Pretty JSON.
pub(crate) fn skill_source(
    plan: &Json,
    description: &str,
    result: Option<&Type>,
    resolve: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let Json::Object(plan) = plan else { return Err("a skill's plan is a JSON object".to_string()) };
    let mut inferred = result.filter(|_| !plan.contains_key("responses")).map(inferred_responses);
    let mut out = serde_json::Map::new();
    out.insert("description".to_string(), Json::String(description.to_string()));
    for (k, v) in plan {
        if k == "response_reference_map" {
            if let Some(responses) = inferred.take() {
                out.insert("responses".to_string(), responses);
            }
        }
        if k != "description" {
            out.insert(k.clone(), v.clone());
        }
    }
    if let Some(responses) = inferred {
        out.insert("responses".to_string(), responses);
    }
    if let Some(Json::Array(steps)) = out.get_mut("instructions") {
        for step in steps {
            if let Some(Json::String(path)) = step.get_mut("tool_definition_path") {
                if let Some(to) = resolve(path) {
                    *path = to;
                }
            }
        }
    }
    serde_json::to_string_pretty(&Json::Object(out))
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| e.to_string())
}

/// The `responses` of a skill saved without them: one declaration per field of its
/// result's type, as `check_plan` shows it (`{total: integer, names: list<string>}`), so that
/// `tdsl://tools` lists what the skill returns and a later plan reading a field it does not
/// have is refused (`E1314`) instead of reading `null` (model round 2026-11-29: a skill
/// saved without them was listed `→ object`, and `REF:stats.total_word` checked). A field
/// is `required` when the checker knows it is never null.
pub(crate) fn inferred_responses(result: &Type) -> Json {
    let Type::Object(o) = result else { return Json::Array(Vec::new()) };
    Json::Array(
        o.fields
            .iter()
            .map(|(name, t)| {
                let mut declared = serde_json::json!({
                    "name": &**name,
                    "type_name": type_name_of(t, crate::ranges::MAX_TYPE_NAME_NESTING),
                    "required": t.fits(&Type::Null) == Fit::No,
                });
                // A string enum keeps its values, so that the skill's callers are checked
                // against them as the plan's own steps were (`E0207`, `E0630`).
                if let Type::Enum(e) = t.non_null() {
                    declared["enum"] = Json::Array(e.values().map(Json::from).collect());
                }
                declared
            })
            .collect(),
    )
}

/// The `type_name` that holds every non-null value of `t`: `any` for a union of kinds, a
/// list's element type only when it is one kind, at most `depth` lists deep.
fn type_name_of(t: &Type, depth: usize) -> String {
    match t.non_null() {
        Type::Int => "integer".to_string(),
        Type::Number => "number".to_string(),
        Type::Str | Type::Enum(_) => "string".to_string(),
        Type::Bool => "boolean".to_string(),
        Type::File => "file".to_string(),
        Type::Object(_) => "object".to_string(),
        Type::List(e) if depth > 0 => match type_name_of(&e, depth - 1).as_str() {
            "any" => "list".to_string(),
            inner => format!("list<{inner}>"),
        },
        Type::List(_) => "list".to_string(),
        Type::Any | Type::Never | Type::Null | Type::Union(_) => "any".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(max: usize) -> (tempfile::TempDir, SkillStore) {
        let root = tempfile::tempdir().expect("tempdir");
        let s = SkillStore::open(root.path(), &root.path().join("skills"), max).expect("opens");
        (root, s)
    }

    #[test]
    fn names_follow_the_rule() {
        for ok in ["a", "weekly_report", "x9", &"a".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "A", "9a", "_a", "../x", "a/b", "a.b", "a-b", "wееkly", "a\u{0301}", &"a".repeat(65), "a b"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_name_may_not_be_another_tools_or_differ_only_by_case() {
        let (_root, s) = store(8);
        let taken = vec!["Echo".to_string(), "run_plan".to_string()];
        assert_eq!(s.check_name("echo", &taken).map_err(|e| e.code), Err(Code::SkillNameTaken));
        assert_eq!(s.check_name("run_plan", &taken).map_err(|e| e.code), Err(Code::SkillNameTaken));
        assert_eq!(s.check_name("../x", &taken).map_err(|e| e.code), Err(Code::SkillBadName));
        std::fs::write(s.dir().join("Report.tool"), "{}").expect("write");
        assert_eq!(s.check_name("report", &taken).map_err(|e| e.code), Err(Code::SkillNameTaken));
        assert!(s.check_name("other", &taken).is_ok());
    }

    #[test]
    fn saves_keep_versions_and_need_replace() {
        let (_root, s) = store(8);
        assert_eq!(s.save("a", "{\"v\": 1}\n", false, &[]).expect("saved").version, 1);
        assert_eq!(s.save("a", "{}", false, &[]).map_err(|e| e.code), Err(Code::SkillExists));
        assert_eq!(s.save("a", "{\"v\": 2}\n", true, &[]).expect("saved").version, 2);
        assert_eq!(std::fs::read_to_string(s.file("a")).expect("read"), "{\"v\": 2}\n");
        assert_eq!(s.versions("a").iter().map(|v| v.version).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(s.delete("a").expect("deleted").map(|v| v.version), Some(2));
        assert!(!s.file("a").exists());
        assert_eq!(s.versions("a").len(), 2, "the versions stay");
        assert_eq!(s.delete("a").map_err(|e| e.code), Err(Code::SkillMissing));
        assert_eq!(s.save("a", "{}", false, &[]).expect("saved").version, 3);
        assert_eq!(s.names().expect("names"), ["a"]);
    }

    /// Hostile round 7: 200 saves of one name with `replace` kept 200 versions (40 MB at
    /// 200 KB each), and deleted names kept theirs for ever: versions were the one part of
    /// the folder no limit bounded.
    #[test]
    fn versions_are_bounded_per_skill_and_for_deleted_skills() {
        let (_root, s) = store(2);
        for i in 1..=200 {
            assert_eq!(s.save("a", &format!("{{\"v\": {i}}}\n"), true, &[]).expect("saved").version, i);
        }
        let kept: Vec<u64> = s.versions("a").iter().map(|v| v.version).collect();
        assert_eq!(kept, (193..=200).collect::<Vec<_>>(), "the newest eight");
        assert_eq!(std::fs::read_dir(s.dir().join(".versions/a")).expect("dir").count(), KEPT_VERSIONS);
        // Names saved and deleted one after another (the count limit is 2): the versions of
        // the 32 saved last stay, the others go; the live skill's stay. (A version's time is
        // in milliseconds: each save here is a few apart.)
        for i in 0..100 {
            let name = format!("d{i:03}");
            std::thread::sleep(std::time::Duration::from_millis(2));
            s.save(&name, "{}", false, &[]).expect("saved");
            s.delete(&name).expect("deleted");
        }
        let mut with_versions: Vec<String> = std::fs::read_dir(s.dir().join(".versions"))
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        with_versions.sort();
        assert_eq!(with_versions.len(), 1 + KEPT_DELETED, "{with_versions:?}");
        assert!(with_versions.contains(&"a".to_string()) && with_versions.contains(&"d099".to_string()));
        assert!(!with_versions.contains(&"d000".to_string()));
        assert_eq!(s.versions("a").len(), KEPT_VERSIONS);
    }

    /// Hostile round 7b: `.versions/NAME` a link to a folder outside — a save wrote its
    /// version there and pruning deleted the files it found there; a version file numbered
    /// `u64::MAX` made the next save overflow. Both are refused now, changing nothing.
    #[cfg(unix)]
    #[test]
    fn versions_behind_a_link_or_at_the_last_number_are_refused() {
        let (root, s) = store(8);
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        for i in 1..=12 {
            std::fs::write(outside.join(format!("v{i}-1000.json")), "{}").expect("write");
        }
        std::fs::create_dir_all(s.dir().join(".versions")).expect("mkdir");
        std::os::unix::fs::symlink(&outside, s.dir().join(".versions/k")).expect("link");
        let e = s.save("k", "{}", false, &[]).expect_err("refused");
        assert_eq!(e.code, Code::SkillWrite, "{e}");
        assert!(!s.file("k").exists());
        assert_eq!(std::fs::read_dir(&outside).expect("dir").count(), 12, "nothing written or deleted outside");
        assert!(s.versions("k").is_empty());
        std::fs::create_dir_all(s.dir().join(".versions/m")).expect("mkdir");
        std::fs::write(s.dir().join(format!(".versions/m/v{}-1000.json", u64::MAX)), "{}").expect("write");
        let e = s.save("m", "{}", false, &[]).expect_err("refused");
        assert_eq!(e.code, Code::SkillWrite, "{e}");
        assert!(e.message.contains("as high as they go"), "{e}");
    }

    #[test]
    fn the_record_of_a_check_is_kept_beside_the_skill_and_goes_with_it() {
        let (root, s) = store(8);
        s.save("a", "{}", false, &[]).expect("saved");
        assert_eq!(s.checked_record("a"), None);
        s.record_checked("a", "v1 0123");
        assert_eq!(s.checked_record("a").as_deref(), Some("v1 0123"));
        assert!(s.names().expect("names") == ["a"], "a record is not a skill");
        s.record_checked("a", &"x".repeat(MAX_RECORD_BYTES + 1));
        assert_eq!(s.checked_record("a").as_deref(), Some("v1 0123"), "an overlong record is not written");
        s.delete("a").expect("deleted");
        assert_eq!(s.checked_record("a"), None, "deleted with its skill");
        // A record behind a link is neither read nor written.
        #[cfg(unix)]
        {
            let outside = root.path().join("outside");
            std::fs::write(&outside, "v1 0123\n").expect("write");
            std::os::unix::fs::symlink(&outside, s.dir().join(".checked/b")).expect("link");
            assert_eq!(s.checked_record("b"), None);
            s.record_checked("b", "v1 4567");
            assert_eq!(std::fs::read_to_string(&outside).expect("read"), "v1 0123\n");
        }
    }

    #[test]
    fn the_count_is_limited_even_over_many_saves() {
        let (_root, s) = store(3);
        for i in 0..3 {
            s.save(&format!("s{i}"), "{}", false, &[]).expect("saved");
        }
        // 10,000 more saves: each refused, nothing written, replacing still works.
        for i in 3..10_000 {
            let e = s.save(&format!("s{i}"), "{}", false, &[]).expect_err("refused");
            assert_eq!(e.code, Code::SkillTooMany);
        }
        assert_eq!(s.names().expect("names").len(), 3);
        assert!(s.save("s0", "{}", true, &[]).is_ok());
    }

    #[test]
    fn a_full_disk_leaves_nothing_behind() {
        fn full(_: &mut std::fs::File, _: &[u8]) -> std::io::Result<()> {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device"))
        }
        let (_root, s) = store(8);
        s.save("a", "{\"old\": true}\n", false, &[]).expect("saved");
        let s = s.with_writer(full);
        let e = s.save("a", "{\"new\": true}\n", true, &[]).expect_err("the disk is full");
        assert_eq!(e.code, Code::SkillWrite);
        assert!(e.message.contains("No space left"), "{e}");
        assert_eq!(std::fs::read_to_string(s.file("a")).expect("read"), "{\"old\": true}\n", "the old file is whole");
        let litter: Vec<_> = std::fs::read_dir(s.dir())
            .expect("dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
            .collect();
        assert!(litter.is_empty(), "{litter:?}");
        assert_eq!(s.versions("a").len(), 1);
        let e = s.save("b", "{}", false, &[]).expect_err("full");
        assert_eq!(e.code, Code::SkillWrite);
        assert!(!s.file("b").exists());
    }

    // A read-only folder: `tests/mcp_skills.rs`, `a_read_only_skills_folder_refuses_saves`
    // (the server as another user when the tests run as root, who writes any folder).

    #[test]
    fn concurrent_saves_of_one_name_leave_one_whole_winner() {
        let (_root, s) = store(8);
        let s = std::sync::Arc::new(s);
        let texts: Vec<String> =
            (0..8).map(|i| format!("{{\"writer\": {i}, \"pad\": \"{}\"}}\n", "x".repeat(100_000))).collect();
        std::thread::scope(|scope| {
            for t in &texts {
                let s = s.clone();
                scope.spawn(move || s.save("a", t, true, &[]));
            }
        });
        let now = std::fs::read_to_string(s.file("a")).expect("read");
        assert!(texts.contains(&now), "a whole version won");
        assert_eq!(s.versions("a").len(), 8);
    }

    #[test]
    fn a_plan_becomes_a_tool_file() {
        let plan = serde_json::json!({"instructions": [
            {"execution_id": "a", "tool_definition_path": "echo"},
            {"execution_id": "b", "tool_definition_path": "up/upper"}]});
        let text =
            skill_source(&plan, "Echoes", None, |n| (n == "echo").then(|| "/tools/echo.tool".to_string())).expect("ok");
        let v: Json = serde_json::from_str(&text).expect("json");
        assert_eq!(v["description"], "Echoes");
        assert_eq!(v["instructions"][0]["tool_definition_path"], "/tools/echo.tool");
        assert_eq!(v["instructions"][1]["tool_definition_path"], "up/upper");
        assert!(skill_source(&Json::Null, "x", None, |_| None).is_err());
    }

    /// A plan saved without `responses` declares its result's type (model round
    /// 2026-11-29), before its `response_reference_map`; one with `responses` keeps its own.
    #[test]
    fn a_plan_without_responses_declares_its_result_type() {
        use std::sync::Arc;
        let list = |t: Type| Type::List(Arc::new(t));
        let result = Type::object(
            [
                (Arc::from("total"), Type::Int),
                (Arc::from("title"), Type::Str.union(Type::Null)),
                (Arc::from("names"), list(Type::Str.union(Type::Null))),
                (Arc::from("rows"), list(Type::any_object())),
                (Arc::from("mixed"), Type::Str.union(Type::Int)),
                (Arc::from("deep"), list(list(Type::Number))),
                (Arc::from("raw"), Type::Any),
                (Arc::from("state"), Type::string_enum(["open", "closed"]).union(Type::Null)),
            ],
            false,
        );
        let plan = serde_json::json!({"instructions": [], "response_reference_map": {"total": "REF:a.n"}});
        let text = skill_source(&plan, "d", Some(&result), |_| None).expect("ok");
        let v: Json = serde_json::from_str(&text).expect("json");
        let keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["description", "instructions", "responses", "response_reference_map"]);
        let declared: Vec<(String, String, bool)> = v["responses"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                (text("name"), text("type_name"), r["required"] == true)
            })
            .collect();
        let want = [
            ("total", "integer", true),
            ("title", "string", false),
            ("names", "list<string>", true),
            ("rows", "list<object>", true),
            ("mixed", "any", true),
            ("deep", "list<list<number>>", true),
            ("raw", "any", false),
            ("state", "string", false),
        ];
        let want: Vec<(String, String, bool)> =
            want.iter().map(|(n, t, r)| (n.to_string(), t.to_string(), *r)).collect();
        assert_eq!(declared, want);
        // A string enum keeps its values (only there).
        let enums: Vec<&Json> = v["responses"].as_array().into_iter().flatten().filter_map(|r| r.get("enum")).collect();
        assert_eq!(enums, [&serde_json::json!(["open", "closed"])]);
        // Every inferred type name is one a declaration takes.
        for (_, t, _) in &declared {
            assert!(Type::from_type_name(t).is_some(), "{t}");
        }
        let own = serde_json::json!({"instructions": [], "responses": [{"name": "x", "type_name": "string"}]});
        let text = skill_source(&own, "d", Some(&result), |_| None).expect("ok");
        let v: Json = serde_json::from_str(&text).expect("json");
        assert_eq!(v["responses"], serde_json::json!([{"name": "x", "type_name": "string"}]));
    }

    #[test]
    fn the_folder_must_be_under_the_root() {
        let root = tempfile::tempdir().expect("tempdir");
        let other = tempfile::tempdir().expect("tempdir");
        assert!(SkillStore::open(root.path(), other.path(), 8).expect_err("outside").contains("under the tool root"));
        assert!(SkillStore::open(root.path(), root.path(), 8).is_err());
        let s = SkillStore::open(root.path(), &root.path().join("a/skills"), 8).expect("opens");
        assert_eq!(s.tool_path("x"), "/a/skills/x.tool");
    }
}
