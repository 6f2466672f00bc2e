//! The file functions: argument conversion only; the rules are in `crate::files::ops`.
//! Registered as [`Implementation::File`], so they are never folded.

use super::*;

/// A version object, as [`version_value`] makes it: closed, so that a misspelt field
/// (`.id` for `.version_id`) is caught before the expression runs.
fn version_type() -> Type {
    Type::object(
        [
            (Arc::from("version_id"), Type::Str),
            (Arc::from("created_at"), str_or_null()),
            (Arc::from("size"), Type::Int),
            (Arc::from("author"), str_or_null()),
            (Arc::from("message"), str_or_null()),
        ],
        false,
    )
}

/// Fuel one file operation costs before it runs: a system call or more, far more work
/// than an instruction, so a loop of file reads runs out of fuel after at most
/// `fuel / FILE_OP_FUEL` operations.
const FILE_OP_FUEL: usize = 1000;

/// The runner's file store, or the error every file function gives without one.
fn store(r: &dyn Caller) -> Result<&dyn FileStore, Failure> {
    r.files().ok_or_else(|| FnError::new(Code::NoFileStore, "no file store configured; pass --files DIR").into())
}

/// A file error, blamed on parameter `param` (element `index` of it, for a list).
fn file_err(e: FileError, param: usize, index: Option<usize>) -> Failure {
    FnError { code: e.code, message: e.message, param: Some(param), index }.into()
}

/// The path of a file value: a string, or an object's string `path`.
fn file_path(v: &Value) -> Option<&str> {
    match v {
        Value::Str(s) => Some(s),
        Value::Object(o) => o.get("path").and_then(Value::as_str),
        _ => None,
    }
}

const FILE_VALUE: &str = "a path string or an object with a string `path`";

fn path_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<&'a str, Failure> {
    file_path(args.get(i)).ok_or_else(|| type_err(i, name, FILE_VALUE, args.get(i)))
}

fn opt_str_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<Option<&'a str>, Failure> {
    match args.get(i) {
        Value::Null => Ok(None),
        Value::Str(s) => Ok(Some(s)),
        other => Err(type_err(i, name, "a string or null", other)),
    }
}

/// The largest file a read may return: the file limit, and never more than a string may hold.
fn max_file_bytes(r: &dyn Caller) -> u64 {
    r.limits().max_file_bytes.min(r.limits().max_string_len) as u64
}

fn version_value(v: Version) -> Value {
    let opt = |s: Option<String>| s.map_or(Value::Null, |s| Value::str(&s));
    let created = v
        .created_at_millis
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or(Value::Null, |t| Value::str(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
    Value::object_from([
        ("version_id", Value::str(&v.id)),
        ("created_at", created),
        ("size", Value::Int(i64::try_from(v.size).unwrap_or(i64::MAX))),
        ("author", opt(v.author)),
        ("message", opt(v.message)),
    ])
}

/// `list_files`: the signature; the body follows.
pub(super) fn list_files() -> Function {
    file(
        Signature::new(
            "list_files",
            vec![Param::required("directory_path", Type::Str), Param::optional("pattern", str_or_null(), Value::Null)],
            fixed(list_of(Type::Str)),
            "paths in a directory matching a glob, sorted, at most 50",
        ),
        list_files_body,
    )
}

fn list_files_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let dir = path_param(args, 0, "directory_path")?;
    let pattern = opt_str_param(args, 1, "pattern")?;
    let max_entries = r.limits().max_listing_entries;
    let listing = ops::list(store(r)?, dir, pattern, max_entries).map_err(|e| {
        let param = usize::from(e.code == Code::InvalidGlob);
        file_err(e, param, None)
    })?;
    r.charge(listing.visited)?;
    Ok(Value::list(listing.paths.iter().map(|p| Value::str(p)).collect()))
}

/// `read_file`: the signature; the body follows.
pub(super) fn read_file() -> Function {
    file(
        Signature::new(
            "read_file",
            vec![Param::required("file_path", Type::File), Param::optional("version_id", str_or_null(), Value::Null)],
            fixed(Type::Str),
            "a file's content",
        ),
        read_file_body,
    )
}

fn read_file_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let version = opt_str_param(args, 1, "version_id")?;
    let text = ops::read_text(store(r)?, path, version, max_file_bytes(r)).map_err(|e| {
        let param = usize::from(e.code == Code::UnknownVersion);
        file_err(e, param, None)
    })?;
    r.charge(text.len() / 64)?;
    r.alloc(text.len())?;
    Ok(Value::str(&text))
}

/// `read_files`: the signature; the body follows.
pub(super) fn read_files() -> Function {
    file(
        Signature::new(
            "read_files",
            vec![Param::required("file_paths", list_or_null())],
            fixed(list_of(Type::Str)),
            "the contents of at most 5 files",
        ),
        read_files_body,
    )
}

fn read_files_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let paths = list_arg(args, 0, "file_paths")?;
    if paths.len() > MAX_READ_FILES {
        return Err(FnError::arg(
            Code::TooManyFiles,
            0,
            format!("reads at most {MAX_READ_FILES} files, but {} paths were given", paths.len()),
        )
        .into());
    }
    let max = max_file_bytes(r);
    let mut out = Vec::with_capacity(paths.len());
    for (i, v) in paths.iter().enumerate() {
        let Some(path) = file_path(v) else {
            let msg = format!("`file_paths` must hold {FILE_VALUE}s, found {:#}", v.kind());
            return Err(FnError::element(Code::RuntimeType, 0, i, msg).into());
        };
        let text = ops::read_text(store(r)?, path, None, max).map_err(|e| file_err(e, 0, Some(i)))?;
        r.charge(text.len() / 64)?;
        r.alloc(text.len())?;
        out.push(Value::str(&text));
    }
    Ok(Value::list(out))
}

/// `list_file_versions`: the signature; the body follows.
pub(super) fn list_file_versions() -> Function {
    file(
        Signature::new(
            "list_file_versions",
            vec![Param::required("file_path", Type::File)],
            fixed(list_of(version_type())),
            "a file's versions, newest first",
        ),
        list_file_versions_body,
    )
}

fn list_file_versions_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let versions = ops::versions(store(r)?, path).map_err(|e| file_err(e, 0, None))?;
    check_list_len(&*r, versions.len())?;
    r.charge(versions.len())?;
    Ok(Value::list(versions.into_iter().map(version_value).collect()))
}

/// `describe_version`: the signature; the body follows.
pub(super) fn describe_version() -> Function {
    file(
        Signature::new(
            "describe_version",
            vec![Param::required("file_path", Type::File), Param::optional("version_id", str_or_null(), Value::Null)],
            fixed(version_type()),
            "one version of a file",
        ),
        describe_version_body,
    )
}

fn describe_version_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let version = opt_str_param(args, 1, "version_id")?;
    let v = ops::describe(store(r)?, path, version).map_err(|e| {
        let param = usize::from(e.code == Code::UnknownVersion);
        file_err(e, param, None)
    })?;
    Ok(version_value(v))
}
