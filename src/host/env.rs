//! What a tool's process starts with: its environment ([`ToolEnv`]) and the path of its
//! program. One place for both, read by the `exec:` runner ([`super::runner`]) and the MCP
//! client that starts stdio servers ([`super::mcp_client`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `PATH` a tool gets under [`ToolEnv::Clean`] unless `PATH` is passed: the standard
/// system search path (the one systemd gives services), so that `exec:python3` finds the
/// system's programs without tdsl's own `PATH` (which may name a user's folders) leaking.
pub(crate) const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment the processes of `exec:` tools and `mcp:` servers start with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolEnv {
    /// tdsl's whole environment (the default): every variable, secrets included.
    #[default]
    Inherit,
    /// Only the variables named (those tdsl's environment has), `PATH` as [`CLEAN_PATH`]
    /// unless it is named, and what tdsl sets itself (`TDSL_TOOL`).
    Clean {
        /// The variables passed on.
        pass: Vec<String>,
    },
    /// tdsl's whole environment but the variables named ([`ToolEnv::withholding`]: the
    /// model provider's key under `tdsl compose`).
    InheritExcept {
        /// The variables not passed on.
        withheld: Vec<String>,
    },
}

impl ToolEnv {
    /// [`ToolEnv::Clean`] passing `names`: each must be a variable name (not empty, without
    /// `=` or NUL).
    pub fn clean<S: AsRef<str>>(names: &[S]) -> Result<ToolEnv, String> {
        let mut pass = Vec::new();
        for n in names {
            let n = n.as_ref();
            if n.is_empty() || n.contains('=') || n.contains('\0') {
                return Err(format!("{n:?} is not an environment variable's name"));
            }
            pass.push(n.to_string());
        }
        Ok(ToolEnv::Clean { pass })
    }

    /// The same policy without the variables `names`, whatever it passes otherwise (a
    /// variable named in `--pass-env` too is withheld).
    pub fn withholding<S: AsRef<str>>(self, names: &[S]) -> ToolEnv {
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        match self {
            ToolEnv::Inherit => ToolEnv::InheritExcept { withheld: names.iter().map(|n| n.to_string()).collect() },
            ToolEnv::Clean { mut pass } => {
                pass.retain(|p| !names.contains(&p.as_str()));
                ToolEnv::Clean { pass }
            }
            ToolEnv::InheritExcept { mut withheld } => {
                withheld.extend(names.iter().map(|n| n.to_string()));
                withheld.sort();
                withheld.dedup();
                ToolEnv::InheritExcept { withheld }
            }
        }
    }

    /// The whole environment of a process under this policy, or `None` to inherit tdsl's.
    pub fn variables(&self) -> Option<Vec<(String, std::ffi::OsString)>> {
        let pass = match self {
            ToolEnv::Inherit => return None,
            ToolEnv::Clean { pass } => pass,
            ToolEnv::InheritExcept { withheld } => {
                // A variable whose name is not Unicode is not passed either (a host's oddity,
                // not something a tool needs).
                return Some(
                    std::env::vars_os()
                        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                        .filter(|(k, _)| !withheld.contains(k))
                        .collect(),
                );
            }
        };
        let mut vars: Vec<(String, std::ffi::OsString)> =
            pass.iter().filter_map(|n| std::env::var_os(n).map(|v| (n.clone(), v))).collect();
        if !pass.iter().any(|n| n == "PATH") {
            vars.push(("PATH".to_string(), CLEAN_PATH.into()));
        }
        Some(vars)
    }

    /// Sets a command's environment under this policy (before tdsl's own variables).
    pub fn apply(&self, cmd: &mut Command) {
        if let Some(vars) = self.variables() {
            cmd.env_clear().envs(vars);
        }
    }
}

/// The program to start: relative paths with a `/` are relative to the tool file's folder.
pub(crate) fn program_path(program: &str, tool_file: Option<&Path>) -> PathBuf {
    let p = Path::new(program);
    match tool_file.and_then(Path::parent) {
        Some(dir) if program.contains('/') && p.is_relative() => dir.join(p),
        _ => p.to_path_buf(),
    }
}
