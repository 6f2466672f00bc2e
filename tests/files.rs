//! The file functions and the file stores.
//!
//! - A shared suite (`shared_suite!`) runs every behaviour of the five functions against
//!   the in-memory store and the local directory store, built from the same fixture tree,
//!   and checks that the VM and the reference evaluator agree on each call.
//! - Local-only tests cover what only a disk has: symbolic links (out of the root, into
//!   it, in loops), special files, names that are not UTF-8, host paths.
//! - Git tests build a repository with fixed authors and dates and read its versions back.
//! - CLI tests run the real binary with `--files`.

mod common;
use common::tdsl;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::json;
use tdsl::testing::files::{FileStore, LocalStore, MemoryStore, Version};
use tdsl::{Code, Engine, EvalError, Limits, Value};

/// Every fixture file's modification time: 2025-01-02T03:04:05Z.
const MTIME_MILLIS: i64 = 1_735_787_045_000;
const MTIME_ISO: &str = "2025-01-02T03:04:05.000Z";

/// The file size limit the fixture engines run with.
const FILE_LIMIT: usize = 1000;

const NOTES: &str = "first line\nsecond line\n";

/// The fixture tree: path and content.
fn tree() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("README.md".into(), b"# Fixture\n".to_vec()),
        ("notes.txt".into(), NOTES.into()),
        ("bom.json".into(), "\u{feff}{\"a\": 1}".into()),
        ("exact.txt".into(), vec![b'x'; FILE_LIMIT]),
        ("big.txt".into(), vec![b'x'; FILE_LIMIT + 1]),
        ("data/config.json".into(), b"{\"name\": \"tdsl\"}".to_vec()),
        ("data/empty.txt".into(), Vec::new()),
        ("reports/q1.txt".into(), b"Q1\n".to_vec()),
        ("reports/q2.txt".into(), b"Q2\n".to_vec()),
        ("reports/draft.md".into(), b"# Draft\n".to_vec()),
        ("reports/2025/annual.txt".into(), b"2025\n".to_vec()),
        ("reports/2025/h1/summary.txt".into(), b"H1\n".to_vec()),
        ("bin/logo.png".into(), vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
        ("bin/nul.txt".into(), b"a\0b".to_vec()),
        ("bin/latin1.txt".into(), b"caf\xe9".to_vec()),
        ("odd names/caf\u{e9} & co [1].txt".into(), b"odd\n".to_vec()),
    ];
    for i in 0..60 {
        files.push((format!("many/f{i:02}.txt"), format!("{i:02}").into_bytes()));
    }
    files
}

/// A store holding the fixture tree, and engines over it.
struct Fixture {
    store: Arc<dyn FileStore>,
    /// The directory of a local store, removed when the fixture is dropped.
    dir: Option<tempfile::TempDir>,
}

fn memory_fixture() -> Fixture {
    let mut store = MemoryStore::new();
    for (path, content) in tree() {
        store.commit(&path, Version::current(0, Some(MTIME_MILLIS)), content).expect("fixture path");
    }
    Fixture { store: Arc::new(store), dir: None }
}

/// Writes the fixture tree under `root`, every file with the fixture's modification time.
fn write_tree(root: &Path) {
    for (path, content) in tree() {
        write_file(&root.join(path), &content);
    }
}

fn write_file(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_millis(MTIME_MILLIS as u64);
    std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(mtime)).expect("set mtime");
}

fn local_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    write_tree(&root);
    let store = LocalStore::open(&root).expect("open");
    assert!(!store.uses_git(), "the temporary directory {} is inside a git work tree", root.display());
    Fixture { store: Arc::new(store), dir: Some(dir) }
}

impl Fixture {
    fn engine(&self) -> Engine {
        self.engine_with(Limits { max_file_bytes: FILE_LIMIT, ..Limits::default() })
    }

    fn engine_with(&self, limits: Limits) -> Engine {
        Engine::new().with_limits(limits).with_file_store(self.store.clone())
    }

    /// The root on disk (local stores only).
    fn root(&self) -> PathBuf {
        let dir = self.dir.as_ref().expect("a local fixture");
        std::fs::canonicalize(dir.path().join("root")).expect("root exists")
    }

    /// Evaluates `src` with `vars` in the VM and the reference evaluator, which must agree.
    fn run_in(&self, engine: &Engine, src: &str, vars: serde_json::Value) -> Result<Value, EvalError> {
        let vars = Value::from(&vars);
        let program = engine.compile(src).unwrap_or_else(|d| panic!("`{src}` does not compile: {d:?}"));
        let vm = program.eval(&vars);
        let reference = program.eval_reference(&vars, &vars);
        match (&vm, &reference) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "`{src}`: the VM and the reference evaluator disagree"),
            (Err(a), Err(b)) => assert_eq!(a.code, b.code, "`{src}`: the VM and the reference evaluator disagree"),
            _ => panic!("`{src}`: the VM gives {vm:?}, the reference evaluator {reference:?}"),
        }
        vm
    }

    fn run(&self, src: &str) -> Result<Value, EvalError> {
        self.run_in(&self.engine(), src, json!({}))
    }

    fn ok(&self, src: &str) -> serde_json::Value {
        match self.run(src) {
            Ok(v) => serde_json::to_value(&v).expect("a result converts to serde_json"),
            Err(e) => panic!("`{src}` failed: {} {e}", e.code),
        }
    }

    fn err(&self, src: &str) -> EvalError {
        self.err_with(src, json!({}))
    }

    fn err_with(&self, src: &str, vars: serde_json::Value) -> EvalError {
        match self.run_in(&self.engine(), src, vars) {
            Ok(v) => panic!("`{src}` should fail, but gave {v}"),
            Err(e) => e,
        }
    }

    fn code(&self, src: &str) -> Code {
        self.err(src).code
    }
}

/// The text of the source `src` that span `e.span` covers.
fn blamed<'s>(src: &'s str, e: &EvalError) -> &'s str {
    &src[e.span.start as usize..e.span.end as usize]
}

// ---------------------------------------------------------------------------------------
// The shared suite: each function runs on both stores.

macro_rules! shared_suite {
    ($($test:ident),* $(,)?) => {
        mod memory_store {
            $( #[test] fn $test() { super::$test(&super::memory_fixture()); } )*
        }
        mod local_store {
            $( #[test] fn $test() { super::$test(&super::local_fixture()); } )*
        }
    };
}

shared_suite!(
    list_files_directly_in_a_directory,
    list_files_with_patterns,
    list_files_recursively,
    list_files_keeps_the_first_50_sorted,
    list_files_errors,
    list_files_walk_limit,
    read_file_reads_text,
    read_file_refuses_binary_content,
    read_file_size_limit,
    read_file_errors,
    read_files_in_order,
    read_files_at_most_5,
    read_files_errors_name_the_element,
    versions_without_history,
    unknown_versions,
    escapes_are_refused_by_every_function,
    rooted_paths_name_the_store_root,
    rooted_listings_read_back,
    a_trailing_slash_never_reads_a_file,
    odd_text_is_refused_by_every_function,
    the_vm_and_the_reference_evaluator_share_the_store,
);

fn list_files_directly_in_a_directory(fx: &Fixture) {
    let root = json!(["README.md", "big.txt", "bom.json", "exact.txt", "notes.txt"]);
    assert_eq!(fx.ok(r#"list_files(directory_path=".")"#), root);
    assert_eq!(fx.ok(r#"list_files("")"#), root);
    assert_eq!(fx.ok(r#"list_files(".", pattern=null)"#), root);
    assert_eq!(fx.ok(r#"list_files(".", pattern="")"#), root);
    let reports = json!(["reports/draft.md", "reports/q1.txt", "reports/q2.txt"]);
    assert_eq!(fx.ok(r#"list_files("reports")"#), reports);
    assert_eq!(fx.ok(r#"list_files("reports/")"#), reports);
    assert_eq!(fx.ok(r#"list_files("./data/../reports")"#), reports);
    assert_eq!(fx.ok(r#"list_files("data")"#), json!(["data/config.json", "data/empty.txt"]));
    assert_eq!(fx.ok(r#"list_files("odd names")"#), json!(["odd names/caf\u{e9} & co [1].txt"]));
}

fn list_files_with_patterns(fx: &Fixture) {
    assert_eq!(fx.ok(r#"list_files("reports", pattern="*.txt")"#), json!(["reports/q1.txt", "reports/q2.txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "q?.txt")"#), json!(["reports/q1.txt", "reports/q2.txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "{q1,draft}.*")"#), json!(["reports/draft.md", "reports/q1.txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "[!q]*")"#), json!(["reports/draft.md"]));
    assert_eq!(fx.ok(r#"list_files("reports", "2025/*")"#), json!(["reports/2025/annual.txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "*/*/*.txt")"#), json!(["reports/2025/h1/summary.txt"]));
    assert_eq!(fx.ok(r#"list_files("odd names", "*\\[1\\]*")"#), json!(["odd names/caf\u{e9} & co [1].txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "*.pdf")"#), json!([]));
    // A pattern matches the path below the directory, not the path from the root.
    assert_eq!(fx.ok(r#"list_files(".", "reports/q1.txt")"#), json!(["reports/q1.txt"]));
    assert_eq!(fx.ok(r#"list_files("reports", "reports/q1.txt")"#), json!([]));
}

fn list_files_recursively(fx: &Fixture) {
    assert_eq!(
        fx.ok(r#"list_files("reports", "**/*.txt")"#),
        json!(["reports/2025/annual.txt", "reports/2025/h1/summary.txt", "reports/q1.txt", "reports/q2.txt"])
    );
    assert_eq!(fx.ok(r#"list_files(".", "**/*.json")"#), json!(["bom.json", "data/config.json"]));
    assert_eq!(fx.ok(r#"list_files(".", "**/h1/*")"#), json!(["reports/2025/h1/summary.txt"]));
}

fn list_files_keeps_the_first_50_sorted(fx: &Fixture) {
    let all = fx.ok(r#"list_files("many")"#);
    let all = all.as_array().expect("a list");
    assert_eq!(all.len(), 50);
    assert_eq!(all[0], json!("many/f00.txt"));
    assert_eq!(all[49], json!("many/f49.txt"));
    assert_eq!(fx.ok(r#"length(list_files("many", "f5*"))"#), json!(10));
    assert_eq!(fx.ok(r#"length(list_files(".", "**/*.txt"))"#), json!(50));
}

fn list_files_errors(fx: &Fixture) {
    assert_eq!(fx.code(r#"list_files("notes.txt")"#), Code::NotADirectory);
    assert_eq!(fx.code(r#"list_files("nosuch")"#), Code::FileNotFound);
    assert_eq!(fx.code(r#"list_files("notes.txt/x")"#), Code::FileNotFound);
    let src = r#"list_files(".", pattern="[a-")"#;
    let e = fx.err(src);
    assert_eq!(e.code, Code::InvalidGlob);
    assert_eq!(blamed(src, &e), r#""[a-""#, "the error points at the pattern");
    assert!(e.message.contains("invalid glob pattern \"[a-\""), "{}", e.message);
    // Wrong types are caught by the checker when known, at run time otherwise.
    assert_eq!(fx.err_with(r#"list_files(".", pattern=p)"#, json!({"p": 7})).code, Code::RuntimeType);
}

fn list_files_walk_limit(fx: &Fixture) {
    let src = r#"list_files("many")"#;
    let roomy = fx.engine_with(Limits { max_listing_entries: 60, ..Limits::default() });
    assert!(fx.run_in(&roomy, src, json!({})).is_ok());
    let tight = fx.engine_with(Limits { max_listing_entries: 59, ..Limits::default() });
    let e = fx.run_in(&tight, src, json!({})).expect_err("over the limit");
    assert_eq!(e.code, Code::ListingTooLarge);
    assert!(e.message.contains("more than the limit of 59"), "{}", e.message);
    // Fuel pays for the walk too.
    let starved = fx.engine_with(Limits { fuel: 30, ..Limits::default() });
    assert_eq!(fx.run_in(&starved, src, json!({})).expect_err("out of fuel").code, Code::FuelExhausted);
}

fn read_file_reads_text(fx: &Fixture) {
    assert_eq!(fx.ok(r#"read_file(file_path="notes.txt")"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_file({path: "notes.txt"})"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_file("./reports/../notes.txt")"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_file("data/empty.txt")"#), json!(""));
    assert_eq!(fx.ok(r#"read_file("odd names/caf\u00e9 & co [1].txt")"#), json!("odd\n"));
    // A byte-order mark is dropped, so the text parses as JSON.
    assert_eq!(fx.ok(r#"json_parse(read_file("bom.json")).a"#), json!(1));
    assert_eq!(fx.ok(r#"map(list_files("reports", "q*"), template="read_file(item)")"#), json!(["Q1\n", "Q2\n"]));
}

fn read_file_refuses_binary_content(fx: &Fixture) {
    for (path, detail) in [
        ("bin/logo.png", "a byte that is not UTF-8 at byte 0"),
        ("bin/nul.txt", "a NUL byte at byte 1"),
        ("bin/latin1.txt", "a byte that is not UTF-8 at byte 3"),
    ] {
        let e = fx.err(&format!("read_file({path:?})"));
        assert_eq!(e.code, Code::BinaryFile, "{path}");
        assert!(e.message.contains(&format!("{path:?} is not UTF-8 text ({detail})")), "{}", e.message);
    }
}

fn read_file_size_limit(fx: &Fixture) {
    assert_eq!(fx.ok(r#"length(read_file("exact.txt"))"#), json!(FILE_LIMIT));
    let e = fx.err(r#"read_file("big.txt")"#);
    assert_eq!(e.code, Code::FileTooLarge);
    assert!(e.message.contains("\"big.txt\" is 1001 bytes, over the file size limit of 1000 bytes"), "{}", e.message);
    // The string limit bounds a read too.
    let small_strings = fx.engine_with(Limits { max_string_len: 10, ..Limits::default() });
    let e = fx.run_in(&small_strings, r#"read_file("notes.txt")"#, json!({})).expect_err("over the string limit");
    assert_eq!(e.code, Code::FileTooLarge);
    // The default limit (1 MiB) takes the big file.
    let defaults = fx.engine_with(Limits::default());
    assert!(fx.run_in(&defaults, r#"read_file("big.txt")"#, json!({})).is_ok());
}

fn read_file_errors(fx: &Fixture) {
    assert_eq!(fx.code(r#"read_file("reports")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"read_file(".")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"read_file("nosuch.txt")"#), Code::FileNotFound);
    assert_eq!(fx.code(r#"read_file("notes.txt/more")"#), Code::FileNotFound);
    let e = fx.err_with("read_file(f)", json!({"f": {"name": "notes.txt"}}));
    assert_eq!(e.code, Code::RuntimeType);
    assert!(e.message.contains("a path string or an object with a string `path`"), "{}", e.message);
    let e = fx.err(r#"read_file("nosuch.txt")"#);
    assert_eq!(e.message, "no file or directory \"nosuch.txt\" in the file store");
    assert_eq!(e.function.as_deref(), Some("read_file"));
}

fn read_files_in_order(fx: &Fixture) {
    assert_eq!(
        fx.ok(r#"read_files(["reports/q2.txt", "reports/q1.txt", {path: "reports/q2.txt"}])"#),
        json!(["Q2\n", "Q1\n", "Q2\n"])
    );
    assert_eq!(fx.ok("read_files(null)"), json!([]));
    assert_eq!(fx.ok("read_files([])"), json!([]));
    assert_eq!(fx.ok(r#"read_files(list_files("reports", "q*"))"#), json!(["Q1\n", "Q2\n"]));
}

fn read_files_at_most_5(fx: &Fixture) {
    let five = fx.ok(r#"read_files(slice(list_files("many"), 0, 5))"#);
    assert_eq!(five, json!(["00", "01", "02", "03", "04"]));
    // Six is refused before anything is read: the paths need not even exist.
    let src = "read_files(file_paths=paths)";
    let six = json!({"paths": ["a", "b", "c", "d", "e", "f"]});
    let e = fx.err_with(src, six);
    assert_eq!(e.code, Code::TooManyFiles);
    assert_eq!(e.message, "reads at most 5 files, but 6 paths were given");
    assert_eq!(blamed(src, &e), "paths");
    assert_eq!(fx.code(r#"read_files(slice(list_files("many"), 0, 6))"#), Code::TooManyFiles);
}

fn read_files_errors_name_the_element(fx: &Fixture) {
    let e = fx.err_with("read_files(paths)", json!({"paths": ["notes.txt", "nosuch.txt"]}));
    assert_eq!(e.code, Code::FileNotFound);
    assert_eq!(e.location.as_deref(), Some("$.paths[1]"));
    let e = fx.err_with("read_files(paths)", json!({"paths": ["notes.txt", 42]}));
    assert_eq!(e.code, Code::RuntimeType);
    assert_eq!(e.location.as_deref(), Some("$.paths[1]"));
    assert_eq!(fx.code(r#"read_files(["notes.txt", "bin/nul.txt"])"#), Code::BinaryFile);
    assert_eq!(fx.err_with("read_files(p)", json!({"p": "notes.txt"})).code, Code::RuntimeType);
}

fn versions_without_history(fx: &Fixture) {
    let current = json!({
        "version_id": "current", "created_at": MTIME_ISO, "size": NOTES.len(), "author": null, "message": null
    });
    assert_eq!(fx.ok(r#"list_file_versions("notes.txt")"#), json!([current]));
    assert_eq!(fx.ok(r#"list_file_versions({path: "notes.txt"})"#), json!([current]));
    assert_eq!(fx.ok(r#"describe_version("notes.txt")"#), current);
    assert_eq!(fx.ok(r#"describe_version("notes.txt", version_id="current")"#), current);
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="current")"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id=null)"#), json!(NOTES));
    assert_eq!(fx.ok(r#"describe_version("data/empty.txt").size"#), json!(0));
    assert_eq!(fx.code(r#"list_file_versions("reports")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"list_file_versions("nosuch.txt")"#), Code::FileNotFound);
    assert_eq!(fx.code(r#"describe_version("nosuch.txt")"#), Code::FileNotFound);
}

fn unknown_versions(fx: &Fixture) {
    for src in [
        r#"read_file("notes.txt", version_id="v2")"#,
        r#"describe_version("notes.txt", version_id="0123456789abcdef")"#,
    ] {
        let e = fx.err(src);
        assert_eq!(e.code, Code::UnknownVersion, "{src}");
        assert!(blamed(src, &e).starts_with("\""), "`{src}`: the error points at the version id");
    }
    let e = fx.err(r#"read_file("notes.txt", version_id="v2")"#);
    assert_eq!(e.message, "\"notes.txt\" has no version \"v2\"");
    assert_eq!(fx.err_with(r#"read_file("notes.txt", version_id=v)"#, json!({"v": 2})).code, Code::RuntimeType);
}

/// Every function, with the path in variable `p`.
const CALLS: [&str; 5] =
    ["list_files(p)", "read_file(p)", "read_files([p])", "list_file_versions(p)", "describe_version(p)"];

fn escapes_are_refused_by_every_function(fx: &Fixture) {
    // `/etc/passwd` and `/` were here while a leading `/` was the host's root; SPEC §4.5
    // makes it the store's (see `rooted_paths_name_the_store_root`). Climbing above the
    // store's root from `/` is still an escape.
    for path in [
        "..",
        "../outside.txt",
        "reports/../../outside.txt",
        "./../outside.txt",
        "/..",
        "/../etc/passwd",
        "/reports/../../outside.txt",
        "//../outside.txt",
    ] {
        for call in CALLS {
            let e = fx.err_with(call, json!({ "p": path }));
            assert_eq!(e.code, Code::PathEscapesRoot, "{call} with {path:?}: {e}");
            assert!(e.message.contains(&format!("{path:?}")), "{call} with {path:?}: {e}");
        }
    }
}

/// SPEC §4.5: a leading `/` names the store's root, never the host's.
fn rooted_paths_name_the_store_root(fx: &Fixture) {
    assert_eq!(fx.ok(r#"read_file("/notes.txt")"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_file(file_path="/reports/q1.txt")"#), json!("Q1\n"));
    assert_eq!(fx.ok(r#"read_file("/reports/../notes.txt")"#), json!(NOTES));
    assert_eq!(fx.ok(r#"read_files(["/reports/q1.txt", "reports/q2.txt"])"#), json!(["Q1\n", "Q2\n"]));
    assert_eq!(fx.ok(r#"describe_version("/notes.txt").size"#), json!(NOTES.len()));
    assert_eq!(fx.ok(r#"length(list_file_versions("/notes.txt"))"#), json!(1));
    // The source document's own call, with this fixture's directory.
    assert_eq!(fx.ok(r#"list_files(directory_path="/data", pattern="*.json")"#), json!(["/data/config.json"]));
    // The host's files are not the store's: `/etc/passwd` is the store's `etc/passwd`.
    for call in CALLS {
        let e = fx.err_with(call, json!({"p": "/etc/passwd"}));
        assert_eq!(e.code, Code::FileNotFound, "{call}: {e}");
    }
    assert_eq!(fx.code(r#"read_file("/")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"read_file("/nosuch.txt")"#), Code::FileNotFound);
}

/// A listing keeps the form of its directory, so every listed path reads back as written.
fn rooted_listings_read_back(fx: &Fixture) {
    let reports = json!(["/reports/draft.md", "/reports/q1.txt", "/reports/q2.txt"]);
    assert_eq!(fx.ok(r#"list_files("/reports")"#), reports);
    assert_eq!(fx.ok(r#"list_files("/reports/")"#), reports);
    assert_eq!(fx.ok(r#"list_files("//reports")"#), reports);
    assert_eq!(fx.ok(r#"list_files("/data/../reports")"#), reports);
    assert_eq!(fx.ok(r#"list_files("/")"#), json!(["/README.md", "/big.txt", "/bom.json", "/exact.txt", "/notes.txt"]));
    assert_eq!(
        fx.ok(r#"list_files("/", "**/h1/*")"#),
        json!(["/reports/2025/h1/summary.txt"]),
        "the pattern matches below the directory, as without `/`"
    );
    assert_eq!(fx.ok(r#"length(list_files("/many"))"#), json!(50));
    assert_eq!(fx.ok(r#"map(list_files("/reports", "q*"), template="read_file(item)")"#), json!(["Q1\n", "Q2\n"]));
    assert_eq!(fx.ok(r#"read_files(list_files("/reports", "q*"))"#), json!(["Q1\n", "Q2\n"]));
    assert_eq!(fx.ok(r#"map(list_files("/reports", "q*"), template="describe_version(item).size")"#), json!([3, 3]));
    // Without the `/`, relative to the root as before.
    assert_eq!(fx.ok(r#"list_files("./reports", "q1*")"#), json!(["reports/q1.txt"]));
}

/// `notes.txt/` names a directory: it never reads the file (issue 15), whichever function.
fn a_trailing_slash_never_reads_a_file(fx: &Fixture) {
    for path in ["notes.txt/", "notes.txt/.", "notes.txt//", "/notes.txt/", "reports/q1.txt/"] {
        for call in CALLS {
            let e = fx.err_with(call, json!({ "p": path }));
            assert_eq!(e.code, Code::NotADirectory, "{call} with {path:?}: {e}");
        }
    }
    let e = fx.err(r#"read_file("notes.txt/")"#);
    assert_eq!(e.message, "\"notes.txt/\" ends with `/`, which names a directory, but \"notes.txt\" is a file");
    let src = r#"read_file("notes.txt/", version_id="current")"#;
    assert_eq!(fx.code(src), Code::NotADirectory);
    assert_eq!(blamed(src, &fx.err(src)), r#""notes.txt/""#, "the error points at the path");
    // A directory, with or without the slash, is not a file; nothing is not found.
    assert_eq!(fx.code(r#"read_file("reports/")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"describe_version("reports/.")"#), Code::NotAFile);
    assert_eq!(fx.code(r#"read_file("nosuch.txt/")"#), Code::FileNotFound);
    // Without the slash, the file reads.
    assert_eq!(fx.ok(r#"read_file("notes.txt")"#), json!(NOTES));
}

fn odd_text_is_refused_by_every_function(fx: &Fixture) {
    for path in ["a\0b", "notes\n.txt", "tab\there", "..\\outside.txt", "reports\\q1.txt", ".git/config", "x/.GIT"] {
        for call in CALLS {
            let e = fx.err_with(call, json!({ "p": path }));
            assert_eq!(e.code, Code::InvalidPath, "{call} with {path:?}: {e}");
        }
    }
    let e = fx.err_with("read_file(p)", json!({"p": "a\0b"}));
    assert_eq!(e.message, "\"a\\0b\" is not a usable path: it contains the control character '\\0'");
}

fn the_vm_and_the_reference_evaluator_share_the_store(fx: &Fixture) {
    // `Fixture::run_in` compares both on every call; this one exercises templates too.
    let src = r#"map(array=list_files("reports", "q*"), template="{p: item, size: describe_version(item).size}")"#;
    assert_eq!(fx.ok(src), json!([{"p": "reports/q1.txt", "size": 3}, {"p": "reports/q2.txt", "size": 3}]));
}

// ---------------------------------------------------------------------------------------
// Without a store

#[test]
fn without_a_store_every_file_function_fails_with_e0308() {
    let engine = Engine::new();
    for src in [
        r#"list_files(".")"#,
        r#"read_file("a.txt")"#,
        r#"read_files(["a.txt"])"#,
        r#"list_file_versions("a.txt")"#,
        r#"describe_version("a.txt")"#,
    ] {
        let program = engine.compile(src).expect("compiles");
        let e = program.eval(&Value::Null).expect_err("no store");
        assert_eq!(e.code, Code::NoFileStore, "{src}");
        assert!(e.message.ends_with("no file store configured; pass --files DIR"), "{}", e.message);
        let r = program.eval_reference(&Value::Null, &Value::Null).expect_err("no store");
        assert_eq!(r.code, Code::NoFileStore, "{src}");
    }
}

#[test]
fn file_calls_are_not_folded() {
    // A file can change between evaluations: a constant call must run every time.
    let mut store = MemoryStore::new();
    store.insert("a.txt", "one").expect("path");
    let engine = Engine::new().with_file_store(Arc::new(store));
    let program = engine.compile(r#"read_file("a.txt")"#).expect("compiles");
    assert!(program.disassemble().contains("read_file"), "{}", program.disassemble());
}

#[test]
fn memory_store_keeps_files_and_directories_apart() {
    let mut store = MemoryStore::new();
    store.insert("a/b.txt", "x").expect("a file");
    assert_eq!(store.insert("a", "y").expect_err("a is a directory").code, Code::NotAFile);
    assert_eq!(store.insert("a/b.txt/c", "z").expect_err("b.txt is a file").code, Code::NotADirectory);
    assert_eq!(store.insert("../x", "z").expect_err("escapes").code, Code::PathEscapesRoot);
    assert_eq!(store.insert("/../x", "z").expect_err("escapes").code, Code::PathEscapesRoot);
    // A leading `/` is the store's root (SPEC §4.5): `/x` is `x`.
    store.insert("/x", "z").expect("the store's x");
    let fx = Fixture { store: Arc::new(store), dir: None };
    assert_eq!(fx.ok(r#"[read_file("x"), read_file("/x")]"#), json!(["z", "z"]));
}

#[test]
fn memory_store_versions_are_newest_first() {
    let mut store = MemoryStore::new();
    let v = |id: &str, at: i64| Version {
        id: id.into(),
        created_at_millis: Some(at),
        size: 0,
        author: Some("Ada".into()),
        message: Some(format!("write {id}")),
    };
    store.commit("doc.md", v("v1", 1_000), "one").expect("path");
    store.commit("doc.md", v("v2", 2_000), "one two").expect("path");
    let fx = Fixture { store: Arc::new(store), dir: None };
    assert_eq!(
        fx.ok(r#"map(list_file_versions("doc.md"), template="[item.version_id, item.size, item.created_at]")"#),
        json!([["v2", 7, "1970-01-01T00:00:02.000Z"], ["v1", 3, "1970-01-01T00:00:01.000Z"]])
    );
    assert_eq!(fx.ok(r#"read_file("doc.md")"#), json!("one two"));
    assert_eq!(fx.ok(r#"read_file("doc.md", version_id="v1")"#), json!("one"));
    assert_eq!(fx.ok(r#"describe_version("doc.md").message"#), json!("write v2"));
}

// ---------------------------------------------------------------------------------------
// Local only: links, special files, absolute paths

#[cfg(unix)]
mod links {
    use super::*;
    use std::os::unix::fs::symlink;

    const SECRET: &str = "TOP SECRET\n";

    /// The fixture, plus `outside/` beside the root and links in the root.
    fn linked_fixture() -> Fixture {
        let fx = local_fixture();
        let root = fx.root();
        let outside = root.parent().expect("a parent").join("outside");
        write_file(&outside.join("secret.txt"), SECRET.as_bytes());
        write_file(&outside.join("dir/inner.txt"), SECRET.as_bytes());
        let links: [(&str, PathBuf); 12] = [
            ("link_out", "../outside/secret.txt".into()),
            ("abs_link_out", outside.join("secret.txt")),
            ("dir_out", "../outside".into()),
            ("reports/up_and_out", "../../outside/secret.txt".into()),
            ("chain", "link_out".into()),
            ("link_in", "notes.txt".into()),
            ("abs_link_in", root.join("reports/q1.txt")),
            ("dir_in", "reports".into()),
            ("loop", ".".into()),
            ("dangling", "nowhere.txt".into()),
            ("sneaky", "../outside/../root/notes.txt".into()),
            ("bounce", "../root/reports".into()),
        ];
        for (name, target) in links {
            symlink(&target, root.join(name)).expect("symlink");
        }
        fx
    }

    #[test]
    fn links_out_of_the_root_are_refused_by_every_function() {
        let fx = linked_fixture();
        for path in
            ["link_out", "abs_link_out", "dir_out/secret.txt", "dir_out/dir/inner.txt", "reports/up_and_out", "chain"]
        {
            for call in CALLS {
                let e = fx.err_with(call, json!({ "p": path }));
                assert_eq!(e.code, Code::PathEscapesRoot, "{call} with {path:?}: {e}");
                assert!(e.message.contains("is a symbolic link to a place outside it"), "{}", e.message);
                assert!(!e.message.contains("TOP SECRET"));
            }
        }
        // The message names the link that leaves, not only the path asked for.
        let e = fx.err(r#"read_file("dir_out/dir/inner.txt")"#);
        assert_eq!(
            e.message,
            "\"dir_out/dir/inner.txt\" leaves the file store's root: `dir_out` is a symbolic link to a place outside it"
        );
        assert_eq!(fx.code(r#"list_files("dir_out")"#), Code::PathEscapesRoot);
    }

    #[test]
    fn links_inside_the_root_are_followed() {
        let fx = linked_fixture();
        assert_eq!(fx.ok(r#"read_file("link_in")"#), json!(NOTES));
        assert_eq!(fx.ok(r#"read_file("abs_link_in")"#), json!("Q1\n"));
        assert_eq!(fx.ok(r#"read_file("sneaky")"#), json!(NOTES));
        assert_eq!(fx.ok(r#"read_file("dir_in/q1.txt")"#), json!("Q1\n"));
        assert_eq!(fx.ok(r#"read_file("bounce/q2.txt")"#), json!("Q2\n"));
        assert_eq!(fx.ok(r#"read_file("loop/loop/notes.txt")"#), json!(NOTES));
        assert_eq!(fx.ok(r#"list_files("dir_in")"#), json!(["dir_in/draft.md", "dir_in/q1.txt", "dir_in/q2.txt"]));
        assert_eq!(fx.code(r#"read_file("dangling")"#), Code::FileNotFound);
    }

    #[test]
    fn listings_leave_out_links_that_leave_and_do_not_walk_into_linked_directories() {
        let fx = linked_fixture();
        assert_eq!(
            fx.ok(r#"list_files(".")"#),
            json!(["README.md", "abs_link_in", "big.txt", "bom.json", "exact.txt", "link_in", "notes.txt", "sneaky"])
        );
        let all = fx.ok(r#"list_files(".", "**/*.txt")"#);
        let all: Vec<&str> = all.as_array().expect("a list").iter().filter_map(|v| v.as_str()).collect();
        for p in &all {
            for hidden in ["dir_in/", "loop/", "dir_out/", "bounce/", "up_and_out", "secret", "inner"] {
                assert!(!p.contains(hidden), "{p} is listed");
            }
        }
        assert_eq!(fx.ok(r#"list_files("reports")"#), json!(["reports/draft.md", "reports/q1.txt", "reports/q2.txt"]));
    }

    #[test]
    fn a_link_out_is_never_opened() {
        // A FIFO outside the root: opening it would block until a writer comes, so a store
        // that opened what a link points to would hang here instead of answering.
        let fx = local_fixture();
        let root = fx.root();
        let fifo = root.parent().expect("a parent").join("fifo");
        if !Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            panic!("mkfifo is needed for this test");
        }
        symlink(&fifo, root.join("pipe_out")).expect("symlink");
        let engine = fx.engine();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let run = |src: &str| engine.compile(src).expect("compiles").eval(&Value::Null).map_err(|e| e.code);
            let _ = tx.send((run(r#"list_files(".")"#).map(|v| v.to_string()), run(r#"read_file("pipe_out")"#)));
        });
        let (listed, read) =
            rx.recv_timeout(Duration::from_secs(20)).expect("the store answered without opening the FIFO");
        assert!(!listed.expect("listed").contains("pipe_out"));
        assert_eq!(read, Err(Code::PathEscapesRoot));
    }

    #[test]
    fn special_files_are_neither_read_nor_listed() {
        let fx = local_fixture();
        let root = fx.root();
        assert!(Command::new("mkfifo").arg(root.join("pipe")).status().is_ok_and(|s| s.success()), "mkfifo");
        assert_eq!(fx.code(r#"read_file("pipe")"#), Code::NotAFile);
        assert_eq!(fx.code(r#"list_file_versions("pipe")"#), Code::NotAFile);
        assert!(!fx.ok(r#"list_files(".")"#).to_string().contains("pipe"));
    }

    #[test]
    fn names_that_are_not_utf8_are_not_listed() {
        use std::os::unix::ffi::OsStrExt;
        let fx = local_fixture();
        let name = std::ffi::OsStr::from_bytes(b"bad\xffname.txt");
        std::fs::write(fx.root().join("data").join(name), "x").expect("write");
        assert_eq!(fx.ok(r#"list_files("data")"#), json!(["data/config.json", "data/empty.txt"]));
    }

    /// Host paths are not read as the host's, even inside the root: a leading `/` is the
    /// store's root (SPEC §4.5). This test used to read host paths under the root from it;
    /// the paths outside it are still never read.
    #[test]
    fn host_paths_are_store_paths() {
        let fx = linked_fixture();
        let root = fx.root();
        let root_text = root.to_str().expect("utf-8 temp dir").to_string();
        let vars = |p: String| json!({ "p": p });
        let run = |src: &str, p: String| fx.run_in(&fx.engine(), src, vars(p));
        for host in [
            format!("{root_text}/notes.txt"),
            format!("{root_text}/../outside/secret.txt"),
            root.parent().expect("a parent").join("outside/secret.txt").to_str().expect("utf-8").to_string(),
            format!("{root_text}-sibling/x.txt"),
        ] {
            for call in CALLS {
                let e = run(call, host.clone()).expect_err("not in the store");
                assert_eq!(e.code, Code::FileNotFound, "{call} with {host}: {e}");
            }
        }
        // Where the store has the path, `/` reads the store's file.
        write_file(&root.join("etc/passwd"), b"the store's own\n");
        assert_eq!(run("read_file(p)", "/etc/passwd".into()).expect("in the store"), Value::from("the store's own\n"));
        // Through a link that leaves, a rooted path is refused like any other.
        assert_eq!(run("read_file(p)", "/link_out".into()).expect_err("a link out").code, Code::PathEscapesRoot);
        assert_eq!(run("list_files(p)", "/dir_out".into()).expect_err("a link out").code, Code::PathEscapesRoot);
    }

    #[test]
    fn open_refuses_what_is_not_a_directory() {
        let fx = local_fixture();
        assert!(LocalStore::open(fx.root().join("notes.txt")).is_err());
        assert!(LocalStore::open(fx.root().join("nosuch")).is_err());
        assert!(LocalStore::open(fx.root().join("reports")).is_ok());
    }
}

// ---------------------------------------------------------------------------------------
// Git

/// A git repository built by the test, with fixed identities and dates.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let repo = Repo { dir: tempfile::tempdir().expect("temp dir") };
        repo.git(&["init", "-q"], "@0 +0000");
        repo
    }

    fn path(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).expect("exists")
    }

    fn git(&self, args: &[&str], date: &str) -> String {
        let out = Command::new("git")
            .current_dir(self.dir.path())
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Ada Lovelace")
            .env("GIT_AUTHOR_EMAIL", "ada@example.com")
            .env("GIT_COMMITTER_NAME", "Ada Lovelace")
            .env("GIT_COMMITTER_EMAIL", "ada@example.com")
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn write(&self, path: &str, content: &str) {
        write_file(&self.dir.path().join(path), content.as_bytes());
    }

    /// Commits everything at Unix time `secs`; the commit id.
    fn commit(&self, message: &str, secs: i64) -> String {
        let date = format!("@{secs} +0000");
        self.git(&["add", "-A"], &date);
        self.git(&["commit", "-q", "-m", message], &date);
        self.git(&["rev-parse", "HEAD"], &date)
    }

    fn fixture(&self, sub: &str) -> Fixture {
        let store = LocalStore::open(self.path().join(sub)).expect("open");
        assert!(store.uses_git(), "git is needed for this test");
        Fixture { store: Arc::new(store), dir: None }
    }
}

const T1: i64 = 1_709_283_600; // 2024-03-01T09:00:00Z
const T2: i64 = 1_709_375_400; // 2024-03-02T10:30:00Z
const T3: i64 = 1_709_463_600; // 2024-03-03T11:00:00Z
const T4: i64 = 1_709_554_500; // 2024-03-04T12:15:00Z

/// `docs/notes.txt` in three versions, with a commit between that changes another file.
fn history() -> (Repo, [String; 4]) {
    let repo = Repo::new();
    repo.write("docs/notes.txt", "one\n");
    repo.write("README.md", "readme\n");
    let c1 = repo.commit("Add notes", T1);
    repo.write("docs/notes.txt", "one\ntwo\n");
    let c2 = repo.commit("Expand notes\n\nWith a body.", T2);
    repo.write("README.md", "readme, longer\n");
    let c3 = repo.commit("Touch the readme only", T3);
    repo.write("docs/notes.txt", "one\ntwo\nthree\n");
    let c4 = repo.commit("Third line", T4);
    (repo, [c1, c2, c3, c4])
}

#[test]
fn git_versions_are_the_commits_that_changed_the_file_newest_first() {
    let (repo, [c1, c2, _c3, c4]) = history();
    let fx = repo.fixture("docs");
    let version = |id: &str, at: &str, size: usize, message: &str| json!({"version_id": id, "created_at": at, "size": size, "author": "Ada Lovelace", "message": message});
    let newest = version(&c4, "2024-03-04T12:15:00.000Z", 14, "Third line");
    assert_eq!(
        fx.ok(r#"list_file_versions("notes.txt")"#),
        json!([
            newest,
            version(&c2, "2024-03-02T10:30:00.000Z", 8, "Expand notes\n\nWith a body."),
            version(&c1, "2024-03-01T09:00:00.000Z", 4, "Add notes"),
        ])
    );
    assert_eq!(fx.ok(r#"describe_version("notes.txt")"#), newest);
    assert_eq!(fx.ok(&format!("describe_version(\"notes.txt\", version_id={c2:?}).size")), json!(8));
}

#[test]
fn git_versions_are_read_back() {
    let (repo, [c1, c2, c3, c4]) = history();
    let fx = repo.fixture("docs");
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={c1:?})")), json!("one\n"));
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={c2:?})")), json!("one\ntwo\n"));
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={c4:?})")), json!("one\ntwo\nthree\n"));
    assert_eq!(fx.ok(r#"read_file("notes.txt")"#), json!("one\ntwo\nthree\n"));
    // Every listed version reads back, at its listed size.
    let sizes = fx.ok(
        r#"map(list_file_versions("notes.txt"), template="[item.size, length(read_file(\"notes.txt\", version_id=item.version_id))]")"#,
    );
    assert_eq!(sizes, json!([[14, 14], [8, 8], [4, 4]]));
    // An abbreviated id names the same version.
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={:?})", &c1[..8])), json!("one\n"));
    // A commit that did not change the file is not one of its versions.
    assert_eq!(fx.code(&format!("read_file(\"notes.txt\", version_id={c3:?})")), Code::UnknownVersion);
    assert_eq!(fx.code(&format!("read_file(\"notes.txt\", version_id={:?})", &c1[..6])), Code::UnknownVersion);
    // `current` is always the content as it is now (SPEC §4.5): for a clean file, its newest
    // commit. (This was an unknown version before SPEC §4.5 named `current` a version id.)
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="current")"#), json!("one\ntwo\nthree\n"));
    assert_eq!(fx.ok(r#"describe_version("notes.txt", version_id="current").version_id"#), json!(c4));
    // From the repository's top, the same file has the same history.
    let top = repo.fixture("");
    assert_eq!(top.ok(r#"length(list_file_versions("docs/notes.txt"))"#), json!(3));
    assert_eq!(
        top.ok(r#"map(list_file_versions("README.md"), template="item.message")"#),
        json!(["Touch the readme only", "Add notes"])
    );
}

#[test]
fn git_changes_not_committed_are_the_current_version() {
    let (repo, [_c1, _c2, _c3, c4]) = history();
    repo.write("docs/notes.txt", "one\ntwo\nthree\nfour\n");
    repo.write("docs/new.txt", "untracked\n");
    let fx = repo.fixture("docs");
    let ids = fx.ok(r#"map(list_file_versions("notes.txt"), template="item.version_id")"#);
    assert_eq!(ids.as_array().map(Vec::len), Some(4));
    assert_eq!(ids[0], json!("current"));
    assert_eq!(ids[1], json!(c4));
    assert_eq!(
        fx.ok(r#"pick(describe_version("notes.txt"), ["version_id", "size", "created_at"])"#),
        json!({"version_id": "current", "size": 19, "created_at": MTIME_ISO})
    );
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="current")"#), json!("one\ntwo\nthree\nfour\n"));
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={c4:?})")), json!("one\ntwo\nthree\n"));
    assert_eq!(fx.ok(r#"map(list_file_versions("new.txt"), template="item.version_id")"#), json!(["current"]));
}

/// SPEC §4.5: a tag's name is a version id — the file as the tagged commit holds it.
#[test]
fn git_tags_are_version_ids() {
    let (repo, [c1, c2, c3, c4]) = history();
    repo.git(&["tag", "v1.0", &c1], "@0 +0000");
    // An annotated tag on a commit that did not change the file: the file as it then was.
    repo.git(&["tag", "-a", "v1.2", "-m", "Release 1.2", &c3], &format!("@{T3} +0000"));
    repo.git(&["tag", "release/latest", &c4], "@0 +0000");
    let fx = repo.fixture("docs");
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="v1.0")"#), json!("one\n"));
    assert_eq!(fx.ok(r#"read_file(file_path="notes.txt", version_id="v1.2")"#), json!("one\ntwo\n"));
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="release/latest")"#), json!("one\ntwo\nthree\n"));
    assert_eq!(fx.ok(r#"describe_version("notes.txt", version_id="v1.2").version_id"#), json!(c2));
    assert_eq!(
        fx.ok(r#"pick(describe_version("notes.txt", version_id="v1.0"), ["version_id", "size", "message"])"#),
        json!({"version_id": c1, "size": 4, "message": "Add notes"})
    );
    // The seed's own call shape, with the path in a variable.
    let e = fx.run_in(
        &fx.engine(),
        r#"read_file(file_path=config_path, version_id="v1.2")"#,
        json!({"config_path": "/notes.txt"}),
    );
    assert_eq!(e.map(|v| serde_json::to_value(&v).expect("converts")).expect("reads"), json!("one\ntwo\n"));
    // Only exact names: no partial names, no full ref names, no branches.
    for id in ["v1", "1.2", "tags/v1.2", "refs/tags/v1.2", "V1.2", "v1.2 ", "release"] {
        assert_eq!(fx.code(&format!("read_file(\"notes.txt\", version_id={id:?})")), Code::UnknownVersion, "{id}");
    }
    let branch = repo.git(&["rev-parse", "--abbrev-ref", "HEAD"], "@0 +0000");
    assert_eq!(fx.code(&format!("read_file(\"notes.txt\", version_id={branch:?})")), Code::UnknownVersion);
}

#[test]
fn git_tags_off_the_current_branch_and_without_the_file() {
    let (repo, [c1, _c2, _c3, _c4]) = history();
    let main = repo.git(&["rev-parse", "--abbrev-ref", "HEAD"], "@0 +0000");
    repo.git(&["checkout", "-q", "-b", "side", &c1], "@0 +0000");
    repo.write("docs/notes.txt", "side\n");
    let side = repo.commit("Side line", T4 + 60);
    repo.git(&["tag", "side-release", &side], "@0 +0000");
    repo.git(&["checkout", "-q", &main], "@0 +0000");
    let tree = repo.git(&["rev-parse", &format!("{c1}^{{tree}}")], "@0 +0000");
    repo.git(&["tag", "-a", "a-tree", "-m", "not a commit", &tree], "@0 +0000");
    // A tag from before the file existed: a commit with only another file.
    repo.write("later.txt", "later\n");
    repo.commit("Add later.txt", T4 + 120);
    repo.git(&["tag", "before-later", &c1], "@0 +0000");
    let fx = repo.fixture("");
    // Not among the listed versions (another branch), yet the tag reads it.
    assert_eq!(fx.ok(r#"read_file("docs/notes.txt", version_id="side-release")"#), json!("side\n"));
    assert_eq!(fx.ok(r#"describe_version("docs/notes.txt", version_id="side-release").version_id"#), json!(side));
    let e = fx.err(r#"read_file("later.txt", version_id="before-later")"#);
    assert_eq!(e.code, Code::UnknownVersion);
    assert!(e.message.contains("tag \"before-later\" does not hold this file"), "{}", e.message);
    let e = fx.err(r#"read_file("docs/notes.txt", version_id="a-tree")"#);
    assert_eq!(e.code, Code::UnknownVersion);
    assert!(e.message.contains("points at a tree, not a commit"), "{}", e.message);
}

/// SPEC §4.5: nothing the caller writes reaches git as an option or revision syntax. Each
/// hostile id is an unknown version — and none of them did what git would have done with it
/// (the `--output` ones would have written a file).
#[test]
fn git_hostile_version_ids_are_unknown_versions() {
    let (repo, [c1, _c2, _c3, c4]) = history();
    repo.git(&["tag", "v1.2", &c4], "@0 +0000");
    let fx = repo.fixture("docs");
    let scratch = tempfile::tempdir().expect("temp dir");
    let written = scratch.path().join("written");
    let written_text = written.to_str().expect("utf-8").to_string();
    let hostile = [
        "HEAD".to_string(),
        "HEAD~1".into(),
        "HEAD^".into(),
        "@".into(),
        "@{-1}".into(),
        "@{upstream}".into(),
        "v1.2^{tree}".into(),
        "v1.2^{commit}".into(),
        "v1.2~0".into(),
        "v1.2:notes.txt".into(),
        ":/Third".into(),
        ":notes.txt".into(),
        format!("{c1}..{c4}"),
        format!("{c1}...{c4}"),
        format!("{c4}^"),
        format!("{c4}~1"),
        format!("^{c1}"),
        "-".into(),
        "--all".into(),
        "-p".into(),
        format!("--output={written_text}"),
        format!("-o{written_text}"),
        "--exec=touch x".into(),
        "refs/tags/v1.2".into(),
        "refs/heads/main".into(),
        "FETCH_HEAD".into(),
        "ORIG_HEAD".into(),
        "*".into(),
        "v1.*".into(),
        "0000000".into(),
        "".into(),
        "\n".into(),
        format!("{c4}\n"),
        format!("{c4} --all"),
    ];
    for id in &hostile {
        for src in [
            "read_file(file_path=\"notes.txt\", version_id=v)",
            "describe_version(file_path=\"notes.txt\", version_id=v)",
        ] {
            let e = fx.err_with(src, json!({ "v": id }));
            assert_eq!(e.code, Code::UnknownVersion, "{src} with {id:?}: {e}");
            assert_eq!(blamed(src, &e), "v", "the error points at the version id");
        }
    }
    assert!(!written.exists(), "a version id reached git as an option");
    let e = fx.err(r#"read_file("notes.txt", version_id="HEAD~1")"#);
    assert!(e.message.contains("revision expressions are not read"), "{}", e.message);
    // The well-formed ids around them still work.
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="v1.2")"#), json!("one\ntwo\nthree\n"));
    assert_eq!(fx.ok(&format!("read_file(\"notes.txt\", version_id={:?})", &c1[..7])), json!("one\n"));
    // An abbreviation is hexadecimal: the same prefix in capitals names nothing.
    assert_eq!(
        fx.code(&format!("read_file(\"notes.txt\", version_id={:?})", c1[..7].to_uppercase())),
        Code::UnknownVersion
    );
}

/// Tag names that look like syntax are still only names: a tag with such a name is found by
/// exact comparison, and the syntax it resembles is not applied.
#[test]
fn git_tag_names_are_compared_not_parsed() {
    let (repo, [c1, c2, _c3, _c4]) = history();
    repo.git(&["tag", "v1.2", &c2], "@0 +0000");
    repo.git(&["tag", "--", "@x", &c1], "@0 +0000");
    let fx = repo.fixture("docs");
    assert_eq!(fx.ok(r#"read_file("notes.txt", version_id="@x")"#), json!("one\n"));
    // `v1.2~1` would be c1 to git; here it is no version.
    assert_eq!(fx.code(r#"read_file("notes.txt", version_id="v1.2~1")"#), Code::UnknownVersion);
}

#[test]
fn git_paths_are_literal_and_git_metadata_is_not_served() {
    let repo = Repo::new();
    repo.write("star*.txt", "star\n");
    repo.write("starX.txt", "x\n");
    repo.commit("Both", T1);
    repo.write("starX.txt", "x again\n");
    repo.commit("Only starX", T2);
    let fx = repo.fixture("");
    // `*` in a name is a character, not a pattern: only the commit that touched it.
    assert_eq!(fx.ok(r#"map(list_file_versions("star*.txt"), template="item.message")"#), json!(["Both"]));
    assert_eq!(fx.code(r#"read_file(".git/config")"#), Code::InvalidPath);
    assert_eq!(fx.code(r#"list_files(".git")"#), Code::InvalidPath);
    assert_eq!(fx.ok(r#"list_files(".", "**/*")"#), json!(["star*.txt", "starX.txt"]));
}

#[test]
fn without_git_a_repository_file_has_one_version() {
    let (repo, _) = history();
    let store = LocalStore::open_without_git(repo.path().join("docs")).expect("open");
    assert!(!store.uses_git());
    let fx = Fixture { store: Arc::new(store), dir: None };
    assert_eq!(fx.ok(r#"map(list_file_versions("notes.txt"), template="item.version_id")"#), json!(["current"]));
}

// ---------------------------------------------------------------------------------------
// The command line

#[test]
fn cli_eval_with_files_reads_from_the_directory() {
    let fx = local_fixture();
    let root = fx.root();
    let dir = root.to_str().expect("utf-8 temp dir");
    let o = tdsl(&["eval", r#"read_files(list_files("reports", "q*"))"#, "--files", dir, "--compact"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "[\"Q1\\n\",\"Q2\\n\"]\n");
    // The source document's call: `/` is the store's root, and the results keep it.
    let o = tdsl(&["eval", r#"list_files(directory_path="/data", pattern="*.json")"#, "--files", dir, "--compact"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "[\"/data/config.json\"]\n"), "{}", o.stderr);
    let o = tdsl(&["eval", r#"describe_version("notes.txt").size"#, "--files", dir]);
    assert_eq!((o.code, o.stdout.trim()), (0, "23"), "{}", o.stderr);
}

#[test]
fn a_version_object_has_a_known_shape_and_a_misspelt_field_is_caught_before_running() {
    let fx = local_fixture();
    let root = fx.root();
    let dir = root.to_str().expect("utf-8 temp dir");
    let o = tdsl(&["eval", r#"list_file_versions("notes.txt").last.id"#, "--files", dir]);
    assert!(o.stderr.contains("W0102"), "{}", o.stderr);
    assert!(o.stderr.contains("field `id` does not exist here"), "{}", o.stderr);
    assert!(o.stderr.contains("known fields: version_id, created_at, size, author, message"), "{}", o.stderr);
    // The declared fields are the ones a version has.
    let o = tdsl(&["eval", r#"keys(describe_version("notes.txt"))"#, "--files", dir, "--compact"]);
    assert_eq!(o.stdout.trim(), r#"["version_id","created_at","size","author","message"]"#, "{}", o.stderr);
}

#[test]
fn cli_eval_refuses_escapes_with_a_diagnostic() {
    let fx = local_fixture();
    let o = tdsl(&["eval", r#"read_file("../secret.txt")"#, "--files", fx.root().to_str().expect("utf-8")]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("E0701"), "{}", o.stderr);
    assert!(o.stderr.contains("\"../secret.txt\" leaves the file store's root"), "{}", o.stderr);
}

#[test]
fn cli_eval_without_files_says_how_to_get_them() {
    let o = tdsl(&["eval", r#"read_file("notes.txt")"#]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("E0308"), "{}", o.stderr);
    assert!(o.stderr.contains("no file store configured; pass --files DIR"), "{}", o.stderr);
}

#[test]
fn cli_eval_with_a_missing_directory_is_a_usage_error() {
    let fx = local_fixture();
    let missing = fx.root().join("nosuch");
    let o = tdsl(&["eval", "1", "--files", missing.to_str().expect("utf-8")]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--files"), "{}", o.stderr);
    let file = fx.root().join("notes.txt");
    let o = tdsl(&["eval", "1", "--files", file.to_str().expect("utf-8")]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not a directory"), "{}", o.stderr);
}

// ---------------------------------------------------------------------------------------
// Properties

mod properties {
    use super::*;
    use proptest::prelude::*;
    use tdsl::testing::files::StorePath;

    /// The lexical model of a path: its segments from the root, or `None` when `..` climbs
    /// above the root.
    fn model(text: &str) -> Option<Vec<&str>> {
        let mut stack = Vec::new();
        for seg in text.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    stack.pop()?;
                }
                s => stack.push(s),
            }
        }
        Some(stack)
    }

    proptest! {
        /// `/p` and `p` are the same path; both follow the model, and what parses never holds
        /// `.`, `..` or an empty segment.
        #[test]
        fn a_leading_slash_is_the_store_root(
            segs in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "..", ".", "", "x.txt"]), 0..10),
            slashes in 1usize..3,
        ) {
            let rel = segs.join("/");
            let rooted = format!("{}{rel}", "/".repeat(slashes));
            let (a, b) = (StorePath::parse(&rel), StorePath::parse(&rooted));
            match (model(&rel), a, b) {
                (Some(expected), Ok(a), Ok(b)) => {
                    prop_assert_eq!(&a, &b);
                    prop_assert_eq!(a.segments().collect::<Vec<_>>(), expected);
                }
                (None, Err(a), Err(b)) => {
                    prop_assert_eq!(a.code, Code::PathEscapesRoot);
                    prop_assert_eq!(b.code, Code::PathEscapesRoot);
                }
                (m, a, b) => prop_assert!(false, "{rel:?}: model {m:?}, relative {a:?}, rooted {b:?}"),
            }
        }

        /// A version id is only ever compared: any text names a version exactly when it is a
        /// listed id, `current`, or a hexadecimal prefix (≥ 7) of one; anything else is E0709.
        #[test]
        fn version_ids_are_compared_not_interpreted(id in "\\PC{0,24}") {
            let mut store = MemoryStore::new();
            let v = |id: &str| Version { id: id.into(), created_at_millis: None, size: 0, author: None, message: None };
            store.commit("doc.md", v("0123456789abcdef0123456789abcdef01234567"), "one").expect("path");
            store.commit("doc.md", v("v1.2"), "two").expect("path");
            let engine = Engine::new().with_file_store(Arc::new(store));
            let program = engine.compile(r#"read_file("doc.md", version_id=v)"#).expect("compiles");
            let r = program.eval(&Value::from(&json!({ "v": id })));
            let names = id == "v1.2"
                || id == "current"
                || (id.len() >= 7 && id.bytes().all(|b| b.is_ascii_hexdigit())
                    && "0123456789abcdef0123456789abcdef01234567".starts_with(&id));
            match r {
                Ok(_) => prop_assert!(names, "{id:?} read a version"),
                Err(e) => {
                    prop_assert!(!names, "{id:?}: {e}");
                    prop_assert_eq!(e.code, Code::UnknownVersion);
                }
            }
        }
    }
}
