//! The history in an embedded SQLite database (`docs/history.md` has the schema).
//!
//! WAL journal, writes grouped into one transaction committed within [`COMMIT_INTERVAL`]
//! (so a run killed with SIGKILL keeps every row written before that), a busy timeout so
//! that several processes can share one file, and the schema version in
//! `PRAGMA user_version`, brought up to date by [`MIGRATIONS`] on open.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};

mod opening;
mod trim;

use opening::{immutable_uri, make_private, opening, regular_file, retry_busy, unwritable};

use super::payload::Payloads;
use super::{HistoryError, HistoryStore, Invocation, NewRun, RunContext, RunDetail, RunFilter, RunRow, StepRow};
use crate::exec::{StepTrace, Trace};
use crate::value::Value;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 4;

/// The migrations: `MIGRATIONS[i]` brings a database from version `i` to `i + 1`.
pub const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    // 1: runs and the invocation audit log.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        started_ms INTEGER NOT NULL,
        completed_at TEXT,
        duration_ms INTEGER,
        result TEXT,
        error TEXT,
        trace TEXT
    );
    CREATE INDEX runs_started ON runs(started_ms);
    CREATE INDEX runs_tool ON runs(tool);
    CREATE TABLE invocations (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step_path TEXT NOT NULL,
        tool TEXT NOT NULL,
        parameters TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        result TEXT NOT NULL CHECK (result IN ('success', 'validation_error', 'not_found', 'conflict',
            'internal_error', 'timeout', 'cancelled')),
        result_data TEXT,
        error TEXT,
        invoked_at TEXT NOT NULL,
        completed_at TEXT NOT NULL,
        duration_ms INTEGER NOT NULL
    );
    CREATE INDEX invocations_run ON invocations(run);
    CREATE INDEX invocations_tool ON invocations(tool);",
    // 2: steps, and the process that runs a run (to tell an interrupted run from a live one).
    "ALTER TABLE runs ADD COLUMN pid INTEGER;
    CREATE TABLE steps (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        seq INTEGER NOT NULL,
        tool TEXT,
        status TEXT NOT NULL,
        reason TEXT,
        started_at TEXT,
        completed_at TEXT,
        duration_ms INTEGER,
        arguments TEXT,
        result TEXT,
        PRIMARY KEY (run, path)
    );",
    // 3: the indexes that keep recording a step O(log n) at any run length (the next `seq`
    // of a run is its greatest, one index lookup) and opening a database O(running runs).
    "CREATE INDEX steps_seq ON steps(run, seq);
    CREATE INDEX runs_status ON runs(status);
    CREATE INDEX invocations_step ON invocations(run, step_path);",
    // 4: the context a run was given (`tdsl run --context KEY=VALUE`), on the run and on
    // each of its invocations: a JSON object of strings, NULL for none.
    "ALTER TABLE runs ADD COLUMN context TEXT;
    ALTER TABLE invocations ADD COLUMN context TEXT;",
];

/// How long written rows may wait for their commit: writes are grouped into one
/// transaction, committed this long after its first write (by a background thread when no
/// write follows), when the run ends, and when the store is dropped.
pub(crate) const COMMIT_INTERVAL: Duration = Duration::from_millis(50);

/// A history in one SQLite file.
///
/// Writes are grouped: the first write opens a transaction that is committed
/// [`COMMIT_INTERVAL`] later (a run killed with SIGKILL loses at most that much), when the
/// run ends ([`HistoryStore::end_run`]) or when the store is dropped. One commit per event
/// cost a WAL frame per row; grouped, a long run or the burst of cancelled steps after
/// SIGTERM costs one commit per interval.
pub struct SqliteStore {
    shared: Arc<Shared>,
    flusher: Option<std::thread::JoinHandle<()>>,
    read_only: bool,
    /// The most bytes of one payload kept whole (`super::payload`).
    max_payload: usize,
    /// The most bytes of payload text kept of one run (`super::payload`).
    max_run: u64,
    /// The most bytes of the database's pages in use: past it when a run ends, the oldest
    /// ended runs are deleted ([`SqliteStore::with_max_bytes`]).
    max_bytes: u64,
    /// The measurements of each run being recorded, by history id: a large part a run
    /// passes around is measured once, not in every payload it is in (`super::payload`).
    payloads: Mutex<HashMap<i64, Arc<Payloads>>>,
    /// Every byte the store has hashed to cut payloads (the work counted, for tests).
    hashed: Arc<AtomicU64>,
}

/// The most runs whose measurements a store remembers at once: a run that never ends (its
/// recorder dropped without the run's end) must not keep its measurements for ever.
const MEASURED_RUNS: usize = 1024;

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    conn: Connection,
    /// When the open write transaction began.
    open_since: Option<Instant>,
    /// The runs with rows in the open transaction (several at once in a server): each is
    /// told when the transaction is lost.
    batch: Vec<i64>,
    /// The runs whose rows a lost transaction took with it — a commit that failed, or a
    /// write after which SQLite rolled the whole transaction back (a full disk) — and why:
    /// each run's next write reports it, whichever run's write met the failure.
    lost: HashMap<i64, HistoryError>,
    /// The store is being dropped.
    stop: bool,
    /// No background thread: every write commits at once.
    immediate: bool,
}

impl State {
    fn new(conn: Connection, immediate: bool) -> State {
        State { conn, open_since: None, batch: Vec::new(), lost: HashMap::new(), stop: false, immediate }
    }

    /// Commits the open transaction; when that fails, every run with rows in it is told.
    fn commit(&mut self) -> Result<(), HistoryError> {
        if self.open_since.take().is_none() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.conn.execute_batch("COMMIT").map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            let e = HistoryError(format!("history: {e}"));
            self.lose(batch, &e);
            e
        })
    }

    /// Notes that the rows of `runs` were lost, for `e`.
    fn lose(&mut self, runs: Vec<i64>, e: &HistoryError) {
        for run in runs {
            if self.lost.len() >= MEASURED_RUNS && !self.lost.contains_key(&run) {
                // A run that never writes again (its recorder dropped) is not told for ever.
                if let Some(oldest) = self.lost.keys().min().copied() {
                    self.lost.remove(&oldest);
                }
            }
            self.lost.entry(run).or_insert_with(|| e.clone());
        }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        {
            let mut s = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.stop = true;
            let _ = s.commit();
            self.shared.wake.notify_all();
        }
        if let Some(t) = self.flusher.take() {
            let _ = t.join();
        }
    }
}

/// The background thread's loop: commits a transaction [`COMMIT_INTERVAL`] after it began.
fn flush(shared: &Shared) {
    let mut s = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    while !s.stop {
        s = match s.open_since {
            None => shared.wake.wait(s).unwrap_or_else(PoisonError::into_inner),
            Some(since) => {
                let left = COMMIT_INTERVAL.saturating_sub(since.elapsed());
                if left.is_zero() {
                    // A failure is noted for each run that lost rows (`State::lost`).
                    let _ = s.commit();
                    s
                } else {
                    shared.wake.wait_timeout(s, left).unwrap_or_else(PoisonError::into_inner).0
                }
            }
        };
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn err(context: &str) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |e| HistoryError(format!("{context}: {e}"))
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn parse(text: Option<String>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

fn millis(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339).map_or(0, |t| t.timestamp_millis())
}

fn u64_of(v: Option<i64>) -> Option<u64> {
    v.map(|n| u64::try_from(n).unwrap_or(0))
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl SqliteStore {
    /// Opens (creating it and its folder if needed) the database at `path`, migrates it to
    /// [`SCHEMA_VERSION`], and marks `INTERRUPTED` every run still `RUNNING` whose process
    /// is gone (when the file can be written: reading shows such a run `INTERRUPTED` anyway).
    pub fn open(path: &Path) -> Result<SqliteStore, HistoryError> {
        let what = format!("{}", path.display());
        make_private(path, &what)?;
        regular_file(path, &what)?;
        let conn = Connection::open(path).map_err(err(&what))?;
        // Every payload is in it: a plan's file functions never read it (`crate::secrets`).
        crate::secrets::register_file(path, &["-wal", "-shm", "-journal"]);
        // A file this user may not write is opened read-only without a word: every write of
        // every run would then fail (and the `-wal` and `-shm` files a reader leaves beside
        // it, which its owner could not write either).
        if conn.is_readonly("main").unwrap_or(false) {
            return Err(unwritable(&what, "the file is read-only to this user"));
        }
        conn.busy_timeout(Duration::from_secs(30)).map_err(err(&what))?;
        let mode: String =
            retry_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))).map_err(opening(&what))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError(format!("{what}: cannot use the WAL journal (the file system gave `{mode}`)")));
        }
        retry_busy(|| {
            conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;")
        })
        .map_err(opening(&what))?;
        migrate(&conn).map_err(|e| HistoryError(format!("{what}: {}", e.0)))?;
        // A folder or mount this user may not write lets SQLite open the file but not write
        // its WAL: taking the write lock once says so now, not at every run's first write. A
        // lock held elsewhere is no refusal (the writes will wait for it), nor is a full disk,
        // which needs no room for the lock (a run then records what fits, and says so).
        match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK") {
            Err(rusqlite::Error::SqliteFailure(f, _))
                if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {}
            Err(e) => return Err(unwritable(&what, &e.to_string())),
            Ok(()) => {}
        }
        // Best effort: on a full disk the history can still be read (and a run still tries
        // to record, saying once that it could not).
        let _ = mark_interrupted(&conn);
        let shared = Arc::new(Shared { state: Mutex::new(State::new(conn, false)), wake: Condvar::new() });
        let flusher = {
            let shared = shared.clone();
            std::thread::Builder::new().name("tdsl-history".to_string()).spawn(move || flush(&shared)).ok()
        };
        if flusher.is_none() {
            shared.state.lock().unwrap_or_else(PoisonError::into_inner).immediate = true;
        }
        Ok(SqliteStore {
            shared,
            flusher,
            read_only: false,
            max_payload: crate::ranges::DEFAULT_HISTORY_PAYLOAD_BYTES,
            max_run: crate::ranges::DEFAULT_HISTORY_RUN_BYTES,
            max_bytes: crate::ranges::DEFAULT_HISTORY_MAX_BYTES,
            payloads: Mutex::default(),
            hashed: Arc::default(),
        })
    }

    /// Opens the database at `path` only to read it (`tdsl history`, `tdsl report --run`):
    /// a history in a read-only folder or mount, or one the user cannot write, is read as
    /// any other. Nothing is created: a file that does not exist reads as an empty
    /// history. A database of an older schema is migrated first,
    /// which needs write access (the error says so when there is none); writes through
    /// the store fail.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, HistoryError> {
        let what = format!("{}", path.display());
        if !regular_file(path, &what)? {
            // No run was recorded yet: an empty history, and nothing is created.
            let conn = Connection::open_in_memory().map_err(err(&what))?;
            migrate(&conn).map_err(|e| HistoryError(format!("{what}: {}", e.0)))?;
            return Ok(SqliteStore::reading(conn));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let plain = Connection::open_with_flags(path, flags).and_then(|c| {
            c.busy_timeout(Duration::from_secs(30))?;
            let version = schema_version(&c)?;
            Ok((c, version))
        });
        let (conn, version) = match plain {
            Ok(found) => found,
            // Reading a WAL database needs its `-shm` file, which a read-only folder or
            // mount (or a full disk) may not let SQLite create: then the file is read as
            // immutable, without it (what the last commit left in the database file).
            Err(first) => Connection::open_with_flags(immutable_uri(path), flags)
                .and_then(|c| Ok((schema_version(&c)?, c)))
                .map(|(v, c)| (c, v))
                .map_err(|_| HistoryError(format!("{what}: {first}")))?,
        };
        if version < SCHEMA_VERSION {
            drop(conn);
            return SqliteStore::open(path).map_err(|e| {
                HistoryError(format!(
                    "{what} has schema version {version}, older than this tdsl's ({SCHEMA_VERSION}), and could not be \
                     migrated: {}",
                    e.0
                ))
            });
        }
        if version > SCHEMA_VERSION {
            return Err(HistoryError(format!(
                "{what}: the history database has schema version {version}, newer than this tdsl knows \
                 ({SCHEMA_VERSION}): use a newer tdsl, or another file (--history FILE)"
            )));
        }
        Ok(SqliteStore::reading(conn))
    }

    fn reading(conn: Connection) -> SqliteStore {
        SqliteStore {
            shared: Arc::new(Shared { state: Mutex::new(State::new(conn, true)), wake: Condvar::new() }),
            flusher: None,
            read_only: true,
            max_payload: crate::ranges::DEFAULT_HISTORY_PAYLOAD_BYTES,
            max_run: crate::ranges::DEFAULT_HISTORY_RUN_BYTES,
            max_bytes: crate::ranges::DEFAULT_HISTORY_MAX_BYTES,
            payloads: Mutex::default(),
            hashed: Arc::default(),
        }
    }

    /// The same store keeping each payload whole up to `max` bytes of JSON, and past it only
    /// its first bytes, its size and its hash (`docs/history.md`; 64 KiB by default,
    /// [`crate::ranges::HISTORY_PAYLOAD_BYTES`]).
    pub fn with_max_payload_bytes(mut self, max: usize) -> SqliteStore {
        self.max_payload = max;
        self
    }

    /// The same store keeping at most `max` bytes of payload text of one run: its payloads
    /// are kept whole (each up to the bound above) in the order they are stored while the
    /// run's budget lasts, then cut; and once it is spent, a cut keeps its size and hash
    /// but no prefix. So a run of a hundred thousand calls passing 60 KiB each around costs
    /// the history `max` bytes and a few hundred a call, not gigabytes (`docs/history.md`;
    /// 64 MiB by default, [`crate::ranges::HISTORY_RUN_BYTES`]).
    pub fn with_max_run_bytes(mut self, max: u64) -> SqliteStore {
        self.max_run = max;
        self
    }

    /// The same store keeping the database at about `max` bytes: when a run ends and the
    /// pages in use pass `max`, the oldest ended runs (with their calls and steps) are
    /// deleted until they are back under it — never a run still running, nor the one that
    /// just ended. SQLite reuses the pages freed, so the file stops growing there (it does
    /// not shrink: `VACUUM` does that). 1 GiB by default, [`crate::ranges::HISTORY_MAX_BYTES`];
    /// `docs/history.md`, "How large it grows".
    pub fn with_max_bytes(mut self, max: u64) -> SqliteStore {
        self.max_bytes = max;
        self
    }

    /// Deletes the oldest ended runs but `keep` while the database's pages in use pass
    /// [`SqliteStore::with_max_bytes`]'s bound: how many it deleted. What other runs wrote
    /// is committed first, and each round of deletes is a transaction of its own: a trim
    /// that fails (a full disk, a lock held elsewhere past the busy timeout) takes back only
    /// its own deletes, never another run's rows, and another process's writers wait for
    /// one round at most, not for the whole trim.
    fn trim(&self, keep: i64) -> Result<usize, HistoryError> {
        let max = i64::try_from(self.max_bytes).unwrap_or(i64::MAX);
        let mut deleted = 0;
        loop {
            let mut s = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.commit()?;
            let e = |e: rusqlite::Error| HistoryError(format!("history: trimming: {e}"));
            s.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
            match trim::round(&s.conn, keep, max).and_then(|n| s.conn.execute_batch("COMMIT").map(|()| n)) {
                Ok(0) => return Ok(deleted),
                Ok(n) => deleted += n,
                Err(error) => {
                    if !s.conn.is_autocommit() {
                        let _ = s.conn.execute_batch("ROLLBACK");
                    }
                    return Err(e(error));
                }
            }
        }
    }

    /// The measurements of run `run` (new ones for a run not being recorded).
    fn measurements(&self, run: i64) -> Arc<Payloads> {
        let mut all = self.payloads.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = all.get(&run) {
            return p.clone();
        }
        if all.len() >= MEASURED_RUNS {
            // The oldest run's (the smallest id): the one least likely to be still running.
            if let Some(oldest) = all.keys().min().copied() {
                all.remove(&oldest);
            }
        }
        let p = Arc::new(Payloads::counting(self.hashed.clone(), self.max_run));
        all.insert(run, p.clone());
        p
    }

    /// Every byte hashed so far to cut payloads: the history's work, counted (a test bounds
    /// it without a clock).
    pub fn hashed_bytes(&self) -> u64 {
        self.hashed.load(Ordering::Relaxed)
    }

    /// Whether the store was opened only to read.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Commits what was written (a write is otherwise committed within
    /// [`COMMIT_INTERVAL`]).
    pub fn flush(&self) -> Result<(), HistoryError> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner).commit()
    }

    /// Reads, on the connection (which sees this store's uncommitted writes).
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, HistoryError> {
        let mut s = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut s.conn).map_err(|e| HistoryError(format!("history: {e}")))
    }

    /// Writes run `run`'s rows (`None`: a run not yet numbered) inside the open transaction
    /// (opening one if none is), committed when it is [`COMMIT_INTERVAL`] old, or at once
    /// with `commit`. A write that fails takes back its own rows only: the transaction holds
    /// other runs' too (a server records several at once). When it cannot — SQLite rolled the
    /// whole transaction back — each run that lost rows is told at its next write.
    fn write<T>(
        &self,
        run: Option<i64>,
        commit: bool,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, HistoryError> {
        if self.read_only {
            return Err(HistoryError("history: the database was opened read-only".to_string()));
        }
        let mut s = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = run.and_then(|r| s.lost.remove(&r)) {
            return Err(e);
        }
        if s.open_since.is_none() {
            s.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| HistoryError(format!("history: {e}")))?;
            s.open_since = Some(Instant::now());
            self.shared.wake.notify_all();
        }
        let written = s.conn.execute_batch("SAVEPOINT tdsl_write").and_then(|()| {
            let v = f(&mut s.conn)?;
            s.conn.execute_batch("RELEASE tdsl_write").map(|()| v)
        });
        match written {
            Ok(v) => {
                if let Some(r) = run.filter(|r| !s.batch.contains(r)) {
                    s.batch.push(r);
                }
                if commit || s.immediate || s.open_since.is_some_and(|t| t.elapsed() >= COMMIT_INTERVAL) {
                    if let Err(e) = s.commit() {
                        // This run hears of it here, not again at its next write.
                        if let Some(r) = run {
                            s.lost.remove(&r);
                        }
                        return Err(e);
                    }
                }
                Ok(v)
            }
            Err(e) => {
                let e = HistoryError(format!("history: {e}"));
                if s.conn.is_autocommit() {
                    s.open_since = None;
                    let batch = std::mem::take(&mut s.batch);
                    s.lose(batch, &e);
                    if let Some(r) = run {
                        s.lost.remove(&r);
                    }
                } else {
                    let _ = s.conn.execute_batch("ROLLBACK TO tdsl_write; RELEASE tdsl_write");
                }
                Err(e)
            }
        }
    }
}

/// The database's schema version.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

fn migrate(conn: &Connection) -> Result<(), HistoryError> {
    let e = |e: rusqlite::Error| HistoryError(e.to_string());
    if schema_version(conn).map_err(e)? == SCHEMA_VERSION {
        return Ok(());
    }
    // IMMEDIATE: two processes opening a new database at once migrate it once.
    retry_busy(|| conn.execute_batch("BEGIN IMMEDIATE")).map_err(e)?;
    let outcome = (|| {
        let version = schema_version(conn).map_err(e)?;
        if version > SCHEMA_VERSION {
            return Err(HistoryError(format!(
                "the history database has schema version {version}, newer than this tdsl knows ({SCHEMA_VERSION}): \
                 use a newer tdsl, or another file (--history FILE)"
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            conn.execute_batch(sql).map_err(|x| HistoryError(format!("migration to version {}: {x}", i + 1)))?;
            conn.execute_batch(&format!("PRAGMA user_version = {}", i + 1)).map_err(e)?;
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => conn.execute_batch("COMMIT").map_err(e),
        Err(x) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(x)
        }
    }
}

/// Whether the process `pid` (another one than this) still runs.
fn alive(pid: i64) -> bool {
    if pid == i64::from(std::process::id()) {
        // This process opens the store before it starts any run: a run of "ours" is a
        // dead process's whose id was reused.
        return false;
    }
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        use nix::sys::signal::kill;
        use nix::unistd::Pid;
        match i32::try_from(pid) {
            Ok(p) if p > 0 => !matches!(kill(Pid::from_raw(p), None), Err(Errno::ESRCH)),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The runs still `RUNNING` whose process is gone (a run of this process's is taken to be
/// live): what reading shows `INTERRUPTED`, also when the database cannot be written to
/// mark them so.
fn dead_runs(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let running: Vec<(i64, Option<i64>)> = conn
        .prepare_cached("SELECT id, pid FROM runs WHERE status = 'RUNNING'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let me = i64::from(std::process::id());
    Ok(running.into_iter().filter(|(_, pid)| !pid.is_some_and(|p| p == me || alive(p))).map(|(id, _)| id).collect())
}

/// `column` as read: `INTERRUPTED` for a `RUNNING` row of a dead run (`key` is the row's
/// run id column).
fn status_expr(column: &str, key: &str, dead: &[i64]) -> String {
    if dead.is_empty() {
        return column.to_string();
    }
    let ids: Vec<String> = dead.iter().map(i64::to_string).collect();
    format!("(CASE WHEN {column} = 'RUNNING' AND {key} IN ({}) THEN 'INTERRUPTED' ELSE {column} END)", ids.join(","))
}

fn mark_interrupted(conn: &Connection) -> rusqlite::Result<()> {
    let running: Vec<(i64, Option<i64>)> = conn
        .prepare("SELECT id, pid FROM runs WHERE status = 'RUNNING'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, pid) in running {
        if pid.is_some_and(alive) {
            continue;
        }
        conn.execute("UPDATE runs SET status = 'INTERRUPTED' WHERE id = ?1 AND status = 'RUNNING'", [id])?;
        conn.execute("UPDATE steps SET status = 'INTERRUPTED' WHERE run = ?1 AND status = 'RUNNING'", [id])?;
    }
    Ok(())
}

/// The columns of a run as listed, with `status` the expression [`status_expr`] gives.
fn run_columns(status: &str) -> String {
    format!("id, run_id, tool, {status}, started_at, completed_at, duration_ms, context")
}

fn run_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        tool: r.get(2)?,
        status: r.get(3)?,
        started_at: r.get(4)?,
        completed_at: r.get(5)?,
        duration_ms: u64_of(r.get(6)?),
        context: RunContext::from_json(r.get(7)?),
    })
}

const INVOCATION_COLUMNS: &str = "i.id, i.run, i.step_path, i.tool, i.parameters, i.attempt, i.result, \
     i.result_data, i.error, i.invoked_at, i.completed_at, i.duration_ms, i.context";

fn invocation_row(r: &Row<'_>) -> rusqlite::Result<Invocation> {
    Ok(Invocation {
        id: r.get(0)?,
        run: r.get(1)?,
        step_path: r.get(2)?,
        tool: r.get(3)?,
        parameters: parse(r.get(4)?).unwrap_or_default(),
        attempt: r.get(5)?,
        result: r.get(6)?,
        result_data: parse(r.get(7)?),
        error: r.get(8)?,
        invoked_at: r.get(9)?,
        completed_at: r.get(10)?,
        duration_ms: u64_of(r.get(11)?).unwrap_or(0),
        context: RunContext::from_json(r.get(12)?),
    })
}

/// Each step of a trace with its path, composite callees' and children's steps included.
fn walk<'t>(steps: &'t [StepTrace], prefix: &str, out: &mut Vec<(String, &'t StepTrace)>) {
    for s in steps {
        let path = format!("{prefix}{}", s.execution_id);
        if let Some(nested) = &s.steps {
            walk(nested, &format!("{path}/"), out);
        }
        for c in s.children.iter().flatten() {
            if let Some(nested) = &c.steps {
                walk(nested, &format!("{path}[{}]/", c.index), out);
            }
        }
        out.push((path, s));
    }
}

impl HistoryStore for SqliteStore {
    fn begin_run(&self, run: &NewRun<'_>) -> Result<i64, HistoryError> {
        // Measured before the lock: measuring a large payload must not hold up every other
        // run's writes (hostile round 4b). The run's later payloads reuse what was measured.
        let measurements = Arc::new(Payloads::counting(self.hashed.clone(), self.max_run));
        let arguments = measurements.stored_json(run.arguments, self.max_payload);
        // Committed at once: a run whose later writes fail (a full disk) is still listed.
        self.write(None, true, |c| {
            c.prepare_cached(
                "INSERT INTO runs (run_id, tool, arguments, status, started_at, started_ms, pid, context)
                 VALUES (?1, ?2, ?3, 'RUNNING', ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                run.run_id,
                run.tool,
                arguments,
                run.started_at,
                millis(run.started_at),
                i64::from(std::process::id()),
                run.context.to_json()
            ])?;
            Ok(c.last_insert_rowid())
        })
        .inspect(|id| {
            let mut all = self.payloads.lock().unwrap_or_else(PoisonError::into_inner);
            if all.len() < MEASURED_RUNS {
                all.insert(*id, measurements);
            }
        })
    }

    fn step(
        &self,
        run: i64,
        path: &str,
        tool: Option<&str>,
        status: &str,
        reason: Option<&str>,
    ) -> Result<(), HistoryError> {
        self.write(Some(run), false, |c| {
            c.prepare_cached(
                "INSERT INTO steps (run, path, seq, tool, status, reason)
                 VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run = ?1), ?3, ?4, ?5)
                 ON CONFLICT (run, path) DO UPDATE SET
                   status = excluded.status, reason = excluded.reason, tool = coalesce(excluded.tool, steps.tool)",
            )?
            .execute(params![run, path, tool, status, reason])
            .map(drop)
        })
    }

    fn invocation(&self, i: &Invocation) -> Result<(), HistoryError> {
        // Measured before the lock, as in `begin_run`.
        let (run, max) = (self.measurements(i.run), self.max_payload);
        let parameters = run.stored_json(&i.parameters, max);
        let result_data = i.result_data.as_ref().map(|v| run.stored_json(v, max));
        let error = i.error.as_deref().map(|e| run.stored_text(e, max));
        self.write(Some(i.run), false, |c| {
            c.prepare_cached(
                "INSERT INTO invocations (run, step_path, tool, parameters, attempt, result, result_data, error,
                   invoked_at, completed_at, duration_ms, context)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                i.run,
                i.step_path,
                i.tool,
                parameters,
                i.attempt,
                i.result,
                result_data,
                error,
                i.invoked_at,
                i.completed_at,
                i64_of(i.duration_ms),
                i.context.to_json()
            ])
            .map(drop)
        })
    }

    fn reject_response(&self, run: i64, path: &str, error: &str) -> Result<(), HistoryError> {
        self.write(Some(run), false, |c| {
            c.prepare_cached(
                "UPDATE invocations SET result = 'validation_error', error = ?3
                 WHERE id = (SELECT max(id) FROM invocations WHERE run = ?1 AND step_path = ?2 AND result = 'success')",
            )?
            .execute(params![run, path, error])
            .map(drop)
        })
    }

    fn end_run(&self, run: i64, trace: &Trace) -> Result<(), HistoryError> {
        // The trace as kept: every payload in it cut past the bound, like the columns.
        let max = self.max_payload;
        let measurements = self.measurements(run);
        self.payloads.lock().unwrap_or_else(PoisonError::into_inner).remove(&run);
        let trace =
            &trace.map_payloads_and_errors(&|v| measurements.cut_value(v, max), &|e| measurements.stored_text(e, max));
        let mut steps = Vec::new();
        walk(&trace.steps, "", &mut steps);
        self.write(Some(run), true, |c| {
            c.prepare_cached(
                "UPDATE runs SET status = ?2, completed_at = ?3, duration_ms = ?4, result = ?5, error = ?6, trace = ?7
                 WHERE id = ?1",
            )?
            .execute(params![
                run,
                trace.status.as_str(),
                trace.ended_at,
                i64_of(trace.duration_ms),
                trace.result.as_ref().map(json),
                trace.error.as_ref().and_then(|e| serde_json::to_string(e).ok()),
                trace.to_json()
            ])?;
            for (path, s) in &steps {
                c.prepare_cached(
                    "INSERT INTO steps (run, path, seq, tool, status, reason, started_at, completed_at, duration_ms,
                       arguments, result)
                     VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run = ?1), ?3, ?4, ?5, ?6, ?7,
                       ?8, ?9, ?10)
                     ON CONFLICT (run, path) DO UPDATE SET tool = excluded.tool, status = excluded.status,
                       reason = excluded.reason, started_at = excluded.started_at,
                       completed_at = excluded.completed_at, duration_ms = excluded.duration_ms,
                       arguments = excluded.arguments, result = excluded.result",
                )?
                .execute(params![
                    run,
                    path,
                    s.tool.as_str(),
                    s.status.as_str(),
                    s.reason.as_deref().or(s.error.as_deref()),
                    s.started_at.as_deref(),
                    s.completed_at.as_deref(),
                    s.started_ms.map(|_| i64_of(s.duration_ms)),
                    s.arguments.as_ref().map(json),
                    s.result.as_ref().map(json)
                ])?;
            }
            Ok(())
        })?;
        // Best effort: the run is recorded whole whatever trimming meets (a full disk, a
        // lock held elsewhere), and the next run's end tries again.
        let _ = self.trim(run);
        Ok(())
    }

    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRow>, HistoryError> {
        for (key, _) in &filter.context {
            RunContext::check_key(key)?;
        }
        let limit = filter.limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.with(|c| {
            let status = status_expr("status", "id", &dead_runs(c)?);
            let mut sql = format!(
                "SELECT {} FROM runs
                 WHERE (?1 IS NULL OR tool GLOB ?1) AND (?2 IS NULL OR {status} = ?2) AND (?3 IS NULL OR started_ms >= ?3)",
                run_columns(&status)
            );
            let mut values: Vec<rusqlite::types::Value> = vec![
                filter.tool.clone().into(),
                filter.status.clone().into(),
                filter.since_ms.into(),
                limit.into(),
            ];
            for (key, value) in &filter.context {
                // The key is checked (letters, digits, `_`): quoted, it is a JSON path member.
                values.push(format!("$.\"{key}\"").into());
                values.push(value.clone().into());
                sql.push_str(&format!(" AND json_extract(context, ?{}) IS ?{}", values.len() - 1, values.len()));
            }
            sql.push_str(" ORDER BY started_ms DESC, id DESC LIMIT ?4");
            c.prepare(&sql)?.query_map(rusqlite::params_from_iter(values), run_row)?.collect()
        })
    }

    fn run(&self, id: &str) -> Result<Option<RunDetail>, HistoryError> {
        self.with(|c| {
            let dead = dead_runs(c)?;
            let by = if id.parse::<i64>().is_ok() { "id" } else { "run_id" };
            let found = c
                .query_row(
                    &format!(
                        "SELECT {}, arguments, result, error, trace FROM runs WHERE {by} = ?1",
                        run_columns(&status_expr("status", "id", &dead))
                    ),
                    [id],
                    |r| {
                        Ok((
                            run_row(r)?,
                            r.get::<_, Option<String>>(8)?,
                            r.get::<_, Option<String>>(9)?,
                            r.get::<_, Option<String>>(10)?,
                            r.get::<_, Option<String>>(11)?,
                        ))
                    },
                )
                .optional()?;
            let Some((run, arguments, result, error, trace)) = found else { return Ok(None) };
            let steps = c
                .prepare(&format!(
                    "SELECT path, tool, {}, reason, started_at, completed_at, duration_ms FROM steps
                     WHERE run = ?1 ORDER BY seq",
                    status_expr("status", "run", &dead)
                ))?
                .query_map([run.id], |r| {
                    Ok(StepRow {
                        path: r.get(0)?,
                        tool: r.get(1)?,
                        status: r.get(2)?,
                        reason: r.get(3)?,
                        started_at: r.get(4)?,
                        completed_at: r.get(5)?,
                        duration_ms: u64_of(r.get(6)?),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let invocations = c
                .prepare_cached(&format!(
                    "SELECT {INVOCATION_COLUMNS} FROM invocations i WHERE i.run = ?1 ORDER BY i.id"
                ))?
                .query_map([run.id], invocation_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(RunDetail {
                run,
                arguments: parse(arguments).unwrap_or_default(),
                result: parse(result),
                error: parse(error),
                steps,
                invocations,
                trace: trace.and_then(|t| Trace::from_json(&t).ok()),
            }))
        })
    }

    fn invocations(&self, filter: &RunFilter) -> Result<Vec<Invocation>, HistoryError> {
        self.with(|c| {
            c.prepare(&format!(
                "SELECT {INVOCATION_COLUMNS} FROM invocations i JOIN runs r ON r.id = i.run
                 WHERE (?1 IS NULL OR i.tool GLOB ?1) AND (?2 IS NULL OR i.result = ?2)
                   AND (?3 IS NULL OR r.started_ms >= ?3)
                 ORDER BY i.id"
            ))?
            .query_map(params![filter.tool, filter.status, filter.since_ms], invocation_row)?
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_of_a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 99").unwrap();
        let e = SqliteStore::open(&path).unwrap_err();
        assert!(e.0.contains("schema version 99, newer than this tdsl knows (4)"), "{e}");
    }

    /// Hostile round 10 (outside): the history keeps every payload, and was readable by
    /// every local user.
    #[cfg(unix)]
    #[test]
    fn the_history_is_private_to_its_user() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/tdsl/history.db");
        drop(SqliteStore::open(&path).unwrap());
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        assert_eq!(mode(&dir.path().join("new/tdsl")), 0o700);
        assert_eq!(mode(&path), 0o600);
        // One made readable by others (by an older tdsl), with its WAL: made private.
        let old = dir.path().join("old.db");
        drop(SqliteStore::open(&old).unwrap());
        let wal = dir.path().join("old.db-wal");
        std::fs::write(&wal, b"").unwrap();
        for p in [&old, &wal] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        make_private(&old, "old.db").unwrap();
        assert_eq!((mode(&old), mode(&wal)), (0o600, 0o600));
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(SqliteStore::open(&old).unwrap());
        assert_eq!(mode(&old), 0o600);
        // A folder that exists is the user's choice: left as it is.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        drop(SqliteStore::open(&dir.path().join("third.db")).unwrap());
        assert_eq!(mode(dir.path()), 0o755);
        assert_eq!(mode(&dir.path().join("third.db")), 0o600);
    }
}
