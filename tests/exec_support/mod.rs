//! Helpers for the engine's tests: a tool root written to a temporary folder, a scripted
//! in-process runner that records its calls and measures concurrency, and a virtual clock.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tdsl::testing::exec::{Executor, ManualTime, Options, Run, SeededRandom, ToolCall, ToolError, Workflow};
use tdsl::Value;

/// 2026-01-01T00:00:00Z.
pub const WALL_START: i64 = 1_767_225_600_000;

/// A fresh tool root holding `files` (path under the root → text).
pub fn root(name: &str, files: &[(&str, &str)]) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("tdsl-exec-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    dir
}

/// A primitive tool declaring `args` and `responses` as `name:type` (a trailing `?` makes
/// it optional).
pub fn primitive(args: &[&str], responses: &[&str]) -> String {
    let params = |list: &[&str]| {
        list.iter()
            .map(|p| {
                let (p, required) = match p.strip_suffix('?') {
                    Some(p) => (p, false),
                    None => (*p, true),
                };
                let (name, ty) = p.split_once(':').unwrap_or((p, "any"));
                format!(r#"{{"name": "{name}", "type_name": "{ty}", "required": {required}}}"#)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        r#"{{"arguments": [{}], "responses": [{}], "system_event_endpoint": "builtin:echo"}}"#,
        params(args),
        params(responses)
    )
}

/// A primitive tool that declares nothing: any arguments, any response.
pub const ANY_TOOL: &str = r#"{"system_event_endpoint": "builtin:echo"}"#;

pub fn load(dir: &Path) -> Workflow {
    match Workflow::load(dir, &dir.join("main.tool")) {
        Ok(w) => w,
        Err(tdsl::testing::exec::LoadError::Invalid { diagnostics, .. }) => panic!("does not load: {diagnostics:#?}"),
        Err(e) => panic!("does not load: {e}"),
    }
}

pub fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// One call the runner saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub tool: String,
    pub arguments: Value,
    pub attempt: u32,
}

type Behaviour = dyn Fn(&ToolCall<'_>, usize) -> Result<Value, ToolError> + Send + Sync;

/// An in-process runner: per tool path, a behaviour given the call and how many calls of
/// that tool came before; records every call and the most calls in flight at once.
#[derive(Clone, Default)]
pub struct Script {
    behaviours: Arc<Mutex<HashMap<String, Arc<Behaviour>>>>,
    pub calls: Arc<Mutex<Vec<Seen>>>,
    counts: Arc<Mutex<HashMap<String, usize>>>,
    in_flight: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    /// How calls of `tool` behave (by default a tool echoes its arguments).
    pub fn on(
        self,
        tool: &str,
        f: impl Fn(&ToolCall<'_>, usize) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Script {
        self.behaviours.lock().unwrap().insert(tool.to_string(), Arc::new(f));
        self
    }

    /// The tools called, in call order.
    pub fn tools_called(&self) -> Vec<String> {
        self.calls.lock().unwrap().iter().map(|c| c.tool.clone()).collect()
    }

    pub fn calls_of(&self, tool: &str) -> Vec<Seen> {
        self.calls.lock().unwrap().iter().filter(|c| c.tool == tool).cloned().collect()
    }

    pub fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let n = {
            let mut counts = self.counts.lock().unwrap();
            let c = counts.entry(call.tool_path.to_string()).or_insert(0);
            *c += 1;
            *c - 1
        };
        self.calls.lock().unwrap().push(Seen {
            tool: call.tool_path.to_string(),
            arguments: call.arguments.clone(),
            attempt: call.attempt,
        });
        let behaviour = self.behaviours.lock().unwrap().get(call.tool_path).cloned();
        let out = match behaviour {
            Some(f) => f(call, n),
            None => Ok(call.arguments.clone()),
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

/// An executor with the script as runner, a virtual clock and fixed randomness.
pub fn executor(script: &Script, time: &Arc<ManualTime>, options: Options) -> Executor {
    let s = script.clone();
    Executor::new(move |c: &ToolCall<'_>| s.call(c))
        .with_time(time.clone())
        .with_random(Arc::new(SeededRandom::new(7)))
        .with_options(options)
}

pub fn clock() -> Arc<ManualTime> {
    Arc::new(ManualTime::new(WALL_START))
}

/// Runs `main.tool` of `dir` with `args`, the script, a virtual clock and `options`.
pub fn run_with(dir: &Path, args: &str, script: &Script, options: Options) -> Run {
    let wf = load(dir);
    executor(script, &clock(), options).run(&wf, json(args)).expect("not refused by a guard")
}

pub fn run(dir: &Path, args: &str, script: &Script) -> Run {
    run_with(dir, args, script, Options::default())
}

/// A step's trace by execution id.
pub fn step<'r>(run: &'r Run, id: &str) -> &'r tdsl::testing::exec::StepTrace {
    run.trace.steps.iter().find(|s| s.execution_id == id).unwrap_or_else(|| panic!("no step `{id}` in the trace"))
}

/// A result rendered as compact JSON.
pub fn show(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// A runner behaviour that "takes" virtual time until it is cancelled (a hanging tool).
pub fn hang(time: Arc<ManualTime>) -> impl Fn(&ToolCall<'_>, usize) -> Result<Value, ToolError> + Send + Sync {
    move |call, _| {
        for _ in 0..100_000 {
            if call.cancel.is_cancelled() {
                return Err(ToolError::transient("cancelled"));
            }
            tdsl::testing::exec::Time::sleep(&*time, std::time::Duration::from_millis(100));
            // A breath of real time, so the engine's waiter runs.
            call.cancel.wait(std::time::Duration::from_micros(50));
        }
        Ok(Value::Null)
    }
}

/// A root of two steps: `s` (its step object carrying `extra`, e.g. `, "retry": {…}`) and
/// `after`, which reads `REF:s.ok`.
pub fn one_step(name: &str, extra: &str) -> std::path::PathBuf {
    let main = format!(
        r#"{{"instructions": [
          {{"execution_id": "s", "tool_definition_path": "/tools/t.tool"{extra}}},
          {{"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {{"x": "REF:s.ok"}}}}
        ]}}"#
    );
    root(name, &[("/tools/t.tool", ANY_TOOL), ("main.tool", &main)])
}

pub mod cases;
#[cfg(feature = "temporal")]
pub mod temporal;
