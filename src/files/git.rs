//! File history from git, through the `git` command.
//!
//! Why the command and not a library: it reads every repository git itself can (any object
//! format, packs, alternates, worktrees, sparse checkouts) with no new dependencies — `gix`
//! would add well over a hundred crates to the build and `git2` a C library — and the
//! file functions call it at most four times per call. The cost is a process per call and
//! the need for `git` on the host; without it, files have the one version `current`.
//!
//! Only read-only plumbing runs (`rev-parse`, `log`, `cat-file`, `for-each-ref`,
//! `hash-object --no-filters`), with the `GIT_*` environment cleared so nothing redirects git to another
//! repository, with `core.fsmonitor` off, and with pathspecs read literally. None of them
//! runs hooks, filters or text conversion.
//!
//! No text a program wrote is ever an argument: a version id is compared with the ids
//! `log` lists and the tag names `for-each-ref` lists, and only the full object id found
//! that way is passed back to git (after `--end-of-options`, and checked to be hexadecimal).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git work tree that contains a store's root.
#[derive(Clone, Debug)]
pub(super) struct Repo {
    /// The work tree's top directory, canonical.
    toplevel: PathBuf,
}

/// One commit that changed a file, with the file's blob at that commit.
#[derive(Clone, Debug)]
pub(super) struct Commit {
    pub id: String,
    pub author_time: Option<i64>,
    pub author: String,
    pub message: String,
    /// The file's blob id and size at this commit; `None` when the commit deleted it.
    pub blob: Option<(String, u64)>,
}

impl Repo {
    /// The work tree containing `dir`, when there is one and `git` runs.
    pub(crate) fn discover(dir: &Path) -> Option<Repo> {
        let out = run(git(dir).args(["rev-parse", "--is-inside-work-tree", "--show-toplevel"]), None).ok()?;
        let text = String::from_utf8(out).ok()?;
        let mut lines = text.lines();
        if lines.next() != Some("true") {
            return None;
        }
        let toplevel = std::fs::canonicalize(lines.next()?).ok()?;
        Some(Repo { toplevel })
    }

    /// The path git knows the file at `real` (a canonical path) by: relative to the top of
    /// the work tree, `/`-separated.
    pub(crate) fn git_path(&self, real: &Path) -> Option<String> {
        let rest = real.strip_prefix(&self.toplevel).ok()?;
        let segs: Option<Vec<&str>> = rest.components().map(|c| c.as_os_str().to_str()).collect();
        let path = segs?.join("/");
        // `cat-file --batch-check` reads one path per line.
        (!path.is_empty() && !path.contains('\n')).then_some(path)
    }

    /// The commits that changed `path`, newest first, each with the file's blob: those
    /// reachable from `HEAD`, or from commit `start` (a full object id) when given, the
    /// first `max` of them when given.
    pub(crate) fn history(&self, path: &str, start: Option<&str>, max: Option<usize>) -> Result<Vec<Commit>, String> {
        let mut cmd = self.command();
        cmd.args(["log", "-z", "--format=%H%x00%at%x00%an%x00%B"]);
        if let Some(n) = max {
            cmd.arg(format!("--max-count={n}"));
        }
        if let Some(start) = start {
            if !is_object_id(start) {
                return Err(format!("{start:?} is not an object id"));
            }
            cmd.args(["--end-of-options", start]);
        }
        let out = run(cmd.args(["--", path]), None)?;
        let text = String::from_utf8_lossy(&out);
        let fields: Vec<&str> = text.split('\0').collect();
        let mut commits = Vec::new();
        for record in fields.chunks_exact(4) {
            commits.push(Commit {
                id: record[0].to_string(),
                author_time: record[1].parse().ok(),
                author: record[2].to_string(),
                message: record[3].trim_end().to_string(),
                blob: None,
            });
        }
        if commits.is_empty() {
            return Ok(commits);
        }
        // One `cat-file` for every commit's blob: `<commit>:<path>` per line.
        let queries: String = commits.iter().map(|c| format!("{}:{path}\n", c.id)).collect();
        let out = run(self.command().args(["cat-file", "--batch-check"]), Some(queries.as_bytes()))?;
        let text = String::from_utf8_lossy(&out);
        for (commit, line) in commits.iter_mut().zip(text.lines()) {
            let parts: Vec<&str> = line.split(' ').collect();
            if let [oid, "blob", size] = parts.as_slice() {
                commit.blob = size.parse().ok().map(|s| (oid.to_string(), s));
            }
        }
        Ok(commits)
    }

    /// The commit tag `name` points at (peeled through one annotated tag): `Ok(None)` when
    /// no tag is named exactly `name`, `Err` when it names something other than a commit.
    /// Every tag is listed and compared here, so `name` never reaches git.
    pub(crate) fn tag_commit(&self, name: &str) -> Result<Option<String>, String> {
        let format = "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)";
        let out = run(self.command().args(["for-each-ref", format, "refs/tags/"]), None)?;
        let text = String::from_utf8_lossy(&out);
        for line in text.lines() {
            let fields: Vec<&str> = line.split('\0').collect();
            let [refname, kind, id, peeled_kind, peeled_id] = fields.as_slice() else { continue };
            if refname.strip_prefix("refs/tags/") != Some(name) {
                continue;
            }
            let (kind, id) = if peeled_id.is_empty() { (kind, id) } else { (peeled_kind, peeled_id) };
            return match *kind {
                "commit" if is_object_id(id) => Ok(Some(id.to_string())),
                other => Err(format!("tag {name:?} points at a {other}, not a commit")),
            };
        }
        Ok(None)
    }

    /// The blob id the opened `file` would have, read as it is on disk (no filters): read
    /// by git from the file opened and judged already, never looked up again by its name.
    pub(crate) fn hash_file(&self, file: std::fs::File) -> Result<String, String> {
        let out = run(self.command().args(["hash-object", "--no-filters", "--stdin"]).stdin(Stdio::from(file)), None)?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The content of `path` at commit `id`.
    pub(crate) fn read_blob(&self, id: &str, path: &str) -> Result<Vec<u8>, String> {
        run(self.command().args(["cat-file", "blob"]).arg(format!("{id}:{path}")), None)
    }

    fn command(&self) -> Command {
        git(&self.toplevel)
    }
}

/// Whether `id` is a full object id (SHA-1 or SHA-256, lower-case hexadecimal).
fn is_object_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `git` in `dir`, with nothing from the environment redirecting it and nothing in the
/// repository's configuration running a program.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(|k| k.starts_with("GIT_")) {
            c.env_remove(key);
        }
    }
    c.env("GIT_OPTIONAL_LOCKS", "0").env("GIT_TERMINAL_PROMPT", "0");
    c.arg("-C").arg(dir);
    c.args(["-c", "core.fsmonitor=false", "-c", "log.showSignature=false", "-c", "color.ui=false"]);
    c.arg("--literal-pathspecs");
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Runs a git command, feeding it `input`; its standard output, or what it said went wrong.
fn run(cmd: &mut Command, input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    // Registered while it runs: the command's orphan reaper leaves its status to `child`
    // however long a process it left keeps its output open.
    let (mut child, _registered) =
        crate::processes::spawn_registered(cmd).map_err(|e| format!("cannot run git: {e}"))?;
    let out = std::thread::scope(|s| {
        // Written from another thread: git answers while it reads, and a full output pipe
        // would otherwise stop both sides.
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            s.spawn(move || {
                let _ = stdin.write_all(bytes);
            });
        }
        child.wait_with_output()
    })
    .map_err(|e| format!("git failed: {e}"))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git failed: {}", msg.lines().next().unwrap_or("no message").trim()));
    }
    Ok(out.stdout)
}
