//! `NAME=JSON` flags and the JSON object file beside them: `eval`'s and `repl`'s `--vars FILE`
//! with `--var NAME=JSON`, `run`'s `--args FILE` with `--arg NAME=JSON`. One reading for all
//! three: the file's object first, then each flag in order (a later one wins).

use std::path::Path;

use super::UsageError;
use crate::value::{Map, SmolStr, Value};

/// The object of `file` (the flag `file_flag`, e.g. `--args`) with each `NAME=JSON` of
/// `specs` (the flag `flag`, e.g. `--arg`) set in it; the error names the flag and says how
/// to pass a string.
pub(crate) fn named_values(file: Option<&Path>, specs: &[String], flag: &str) -> Result<Value, UsageError> {
    let mut map = Map::default();
    if let Some(path) = file {
        let text =
            crate::input::read_text(path).map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
        match serde_json::from_str::<Value>(&text).as_ref() {
            Ok(Value::Object(o)) => map = (**o).clone(),
            Ok(other) => {
                return Err(UsageError(format!("{} must hold a JSON object, found {:#}", path.display(), other.kind())))
            }
            Err(e) => return Err(UsageError(format!("{} is not valid JSON: {e}", path.display()))),
        }
    }
    for spec in specs {
        let Some((name, json)) = spec.split_once('=').filter(|(name, _)| !name.is_empty()) else {
            return Err(UsageError(format!("{flag} {spec:?} must be NAME=JSON")));
        };
        let v: Value = serde_json::from_str(json).map_err(|e| {
            UsageError(format!(
                "{flag} {name}: {json:?} is not JSON ({e}); to pass a string, quote it: {flag} '{name}=\"{json}\"'"
            ))
        })?;
        map.insert(SmolStr::new(name), v);
    }
    Ok(Value::object(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(specs: &[&str]) -> Result<String, String> {
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        named_values(None, &specs, "--arg").map(|v| v.to_string()).map_err(|e| e.0)
    }

    #[test]
    fn each_flag_sets_one_name_and_a_later_one_wins() {
        assert_eq!(read(&["a=1", "b=\"x=y\"", "a=[2]"]).unwrap(), r#"{"a":[2],"b":"x=y"}"#);
    }

    #[test]
    fn a_flag_without_a_name_or_with_text_that_is_not_json_is_refused_saying_how() {
        assert_eq!(read(&["a"]).unwrap_err(), r#"--arg "a" must be NAME=JSON"#);
        assert_eq!(read(&["=1"]).unwrap_err(), r#"--arg "=1" must be NAME=JSON"#);
        let e = read(&["name=ada"]).unwrap_err();
        assert!(
            e.starts_with(r#"--arg name: "ada" is not JSON ("#) && e.ends_with(r#"quote it: --arg 'name="ada"'"#),
            "{e}"
        );
    }
}
