//! Guards (from `seeds/001`): limits a host puts on what a workflow may do, checked on the
//! loaded [`Workflow`] before anything runs. A refused workflow makes no tool call.
//!
//! - **Allowed tools**: every tool path the run can reach (through nested composites too)
//!   must match one of the globs (`/tools/**`, `/tools/safe_*.tool`).
//! - **Maximum steps**: the steps the run can execute, counting a composite callee's steps
//!   once per step that calls it (fan-out children are bounded separately).
//! - **Maximum fan-out width**: a literal `iterate_over` list longer than this is refused
//!   before the run; a list that comes from a REF is checked when the step fans out, and
//!   the step fails.
//!
//! Two bounds are kept while the run goes, since no look at the workflow can know them:
//!
//! - **Maximum calls per run**: every call of a callee (each fan-out child's, each composite
//!   callee's and each of its steps') is counted before it starts; the call that would pass
//!   the bound does not start and the run stops (`E0816`). It bounds the run's trace.
//! - **Maximum result bytes**: the run's result, as compact JSON, is counted while it is
//!   serialized, which stops at the bound; past it the run fails (`E0817`) with no result.

use std::fmt;

use globset::GlobSet;

use super::workflow::{Tool, Workflow};
use crate::analysis::{Plan, ValuePlan};
use crate::diagnostic::Code;
use crate::runtime::MemoryPool;

/// The guards of an executor.
#[derive(Clone, Debug)]
pub struct Guards {
    allowed: Option<(Vec<String>, GlobSet)>,
    /// The most steps a run may execute (`None`: no bound).
    pub max_steps: Option<usize>,
    /// The most children one parallel step may have.
    pub max_fan_out: usize,
    /// The most calls a run may make ([`crate::ranges::MAX_CALLS_PER_RUN`]; a million by
    /// default).
    pub max_calls_per_run: usize,
    /// The most bytes of a run's result as compact JSON ([`crate::ranges::MAX_RESULT_BYTES`];
    /// 1 GiB by default).
    pub max_result_bytes: usize,
    /// The fuel of all the run's expressions together ([`crate::ranges::RUN_FUEL`]; a
    /// billion units by default): each expression still has its own
    /// ([`crate::Limits::fuel`]). Past it the expression that runs out fails with `E0401`.
    pub max_run_fuel: u64,
    /// The bytes of values the run holds at once ([`crate::ranges::RUN_MEMORY`]; 2 GiB by
    /// default): what its expressions running at that moment have built, their results,
    /// and the tool answers it keeps, each counted as [`crate::Limits::max_alloc_bytes`]
    /// counts values. Past it the expression or the call fails with `E0406`.
    pub max_run_memory: u64,
    /// A budget of memory shared with other runs (`tdsl serve`'s runs in flight), which
    /// every byte the run holds also takes from: `None` by default.
    pub shared_memory: Option<MemoryPool>,
}

impl Default for Guards {
    fn default() -> Guards {
        Guards {
            allowed: None,
            max_steps: None,
            max_fan_out: crate::runtime::Limits::default().max_fan_out,
            max_calls_per_run: crate::ranges::DEFAULT_MAX_CALLS_PER_RUN,
            max_result_bytes: crate::ranges::DEFAULT_MAX_RESULT_BYTES,
            max_run_fuel: crate::ranges::DEFAULT_RUN_FUEL,
            max_run_memory: crate::ranges::DEFAULT_RUN_MEMORY,
            shared_memory: None,
        }
    }
}

/// Why a workflow was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardError {
    /// A step calls a tool no allowed glob matches.
    ToolNotAllowed {
        /// The tool path.
        tool: String,
        /// The step that calls it (`outer/inner` inside a composite callee).
        step: String,
        /// The globs.
        allowed: Vec<String>,
    },
    /// The run could execute more steps than allowed.
    TooManySteps {
        /// How many it could execute.
        steps: usize,
        /// The bound.
        max: usize,
    },
    /// A number that configures execution is out of its range (`Options::validate`).
    OutOfRange {
        /// The setting (`timeout_seconds`, `breaker threshold`, …).
        setting: &'static str,
        /// What is wrong, with the range.
        message: String,
    },
    /// A parallel step fans out wider than allowed.
    FanOutTooWide {
        /// The step.
        step: String,
        /// Its number of children.
        width: usize,
        /// The bound.
        max: usize,
    },
}

impl GuardError {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            GuardError::ToolNotAllowed { .. } => Code::ToolNotAllowed,
            GuardError::TooManySteps { .. } => Code::TooManySteps,
            GuardError::FanOutTooWide { .. } => Code::FanOutTooWide,
            GuardError::OutOfRange { .. } => Code::SettingOutOfRange,
        }
    }
}

impl fmt::Display for GuardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardError::ToolNotAllowed { tool, step, allowed } => write!(
                f,
                "step `{step}` calls `{tool}`, which no allowed tool pattern matches (allowed: {})",
                allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            ),
            GuardError::TooManySteps { steps, max } => {
                write!(f, "the run could execute {steps} steps, more than the maximum of {max}")
            }
            GuardError::OutOfRange { message, .. } => write!(f, "the executor's options: {message}"),
            GuardError::FanOutTooWide { step, width, max } => {
                write!(f, "step `{step}` fans out to {width} children, more than the maximum of {max}")
            }
        }
    }
}

impl std::error::Error for GuardError {}

pub use crate::tool::tool_globs;

impl From<crate::ranges::RangeError> for GuardError {
    fn from(e: crate::ranges::RangeError) -> GuardError {
        GuardError::OutOfRange { setting: e.range.name, message: e.to_string() }
    }
}

impl Guards {
    /// No guards but the default fan-out width ([`crate::Limits::max_fan_out`]).
    pub fn new() -> Guards {
        Guards::default()
    }

    /// Allows only tool paths matching one of `globs` (`*` stays inside one path segment,
    /// `**` crosses them).
    pub fn allow_tools<S: AsRef<str>>(mut self, globs: &[S]) -> Result<Guards, String> {
        let set = tool_globs(globs)?;
        let written = globs.iter().map(|g| g.as_ref().to_string()).collect();
        self.allowed = Some((written, set));
        Ok(self)
    }

    /// Bounds the steps a run may execute.
    pub fn max_steps(mut self, max: usize) -> Guards {
        self.max_steps = Some(max);
        self
    }

    /// Bounds the children of one parallel step.
    pub fn max_fan_out(mut self, max: usize) -> Guards {
        self.max_fan_out = max;
        self
    }

    /// Bounds the calls a run may make (fan-out children and composite callees' steps
    /// included).
    pub fn max_calls_per_run(mut self, max: usize) -> Guards {
        self.max_calls_per_run = max;
        self
    }

    /// Bounds the bytes of a run's result as compact JSON.
    pub fn max_result_bytes(mut self, max: usize) -> Guards {
        self.max_result_bytes = max;
        self
    }

    /// Bounds the fuel of all the run's expressions together.
    pub fn max_run_fuel(mut self, max: u64) -> Guards {
        self.max_run_fuel = max;
        self
    }

    /// Bounds the bytes of values the run holds at once (its expressions' and the tool
    /// answers it keeps).
    pub fn max_run_memory(mut self, max: u64) -> Guards {
        self.max_run_memory = max;
        self
    }

    /// Takes every byte the run holds from `pool` too, a budget shared with other runs:
    /// past it the expression or the call that would take more fails with `E0406`.
    pub fn shared_memory(mut self, pool: MemoryPool) -> Guards {
        self.shared_memory = Some(pool);
        self
    }

    /// The budget of one run under these guards.
    pub(crate) fn run_budget(&self) -> crate::runtime::RunBudget {
        let b = crate::runtime::RunBudget::new(self.max_run_fuel, self.max_run_memory);
        match &self.shared_memory {
            Some(pool) => b.within(pool),
            None => b,
        }
    }

    /// Every bound in its range ([`crate::ranges`]): the executor checks this before a run.
    pub fn validate(&self) -> Result<(), crate::ranges::RangeError> {
        // Past 2^53 a usize is not exact as f64, but it is out of range either way.
        if let Some(n) = self.max_steps {
            crate::ranges::MAX_STEPS.check(n as f64)?;
        }
        crate::ranges::MAX_FAN_OUT.check(self.max_fan_out as f64)?;
        crate::ranges::MAX_CALLS_PER_RUN.check(self.max_calls_per_run as f64)?;
        crate::ranges::MAX_RESULT_BYTES.check(self.max_result_bytes as f64)?;
        crate::ranges::RUN_FUEL.check(self.max_run_fuel as f64)?;
        crate::ranges::RUN_MEMORY.check(self.max_run_memory as f64)?;
        Ok(())
    }

    /// `Err` when `result`, as compact JSON, is larger than [`Guards::max_result_bytes`]:
    /// the bytes are counted as they are serialized, into no buffer, and the count stops at
    /// the bound, so a result of gigabytes costs no more than the bound to refuse.
    pub fn check_result(&self, result: &crate::value::Value) -> Result<(), ResultTooLarge> {
        check_result(result, self.max_result_bytes)
    }

    /// Whether a tool path is allowed.
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed.as_ref().is_none_or(|(_, set)| set.is_match(tool))
    }

    /// Checks a workflow; the first problem found, in execution order.
    pub fn check(&self, workflow: &Workflow) -> Result<(), GuardError> {
        let mut steps = 0usize;
        self.walk(workflow, workflow.plan(), "", &mut steps, 0)?;
        match self.max_steps {
            Some(max) if steps > max => Err(GuardError::TooManySteps { steps, max }),
            _ => Ok(()),
        }
    }

    fn walk(
        &self,
        wf: &Workflow,
        plan: &Plan,
        prefix: &str,
        steps: &mut usize,
        depth: usize,
    ) -> Result<(), GuardError> {
        for s in &plan.steps {
            // The step's path, made only when needed (a run checks every step before it starts).
            let key = || format!("{prefix}{}", s.execution_id);
            *steps += 1;
            // A transform step calls no tool: no pattern is needed to allow it.
            if let (Some((globs, set)), Some(tool)) = (&self.allowed, &s.tool_path) {
                if !set.is_match(&**tool) {
                    return Err(GuardError::ToolNotAllowed {
                        tool: tool.to_string(),
                        step: key(),
                        allowed: globs.clone(),
                    });
                }
            }
            if let Some(ValuePlan::Literal(v)) = s.parallel.as_ref().map(|p| &p.iterate_over) {
                let width = v.as_list().map_or(0, <[_]>::len);
                if width > self.max_fan_out {
                    return Err(GuardError::FanOutTooWide { step: key(), width, max: self.max_fan_out });
                }
            }
            // Recursion is refused by the analysis; the depth bound only keeps this walk
            // finite whatever the workflow holds.
            if let (Some(Tool::Composite { plan: callee, .. }), true) = (wf.tool(s.tool()), depth < 64) {
                self.walk(wf, callee, &format!("{}/", key()), steps, depth + 1)?;
            }
        }
        Ok(())
    }
}

/// [`Guards::check_result`] with the bound `max` (both engines: a Temporal run carries the
/// bound in its options, not a `Guards`).
pub(crate) fn check_result(result: &crate::value::Value, max: usize) -> Result<(), ResultTooLarge> {
    // Measured, not written: a result that holds one long string a thousand times is
    // measured once (`json_len_at_most`), where writing it out counted every copy.
    match crate::value::json_len_at_most(result, max) {
        Some(_) => Ok(()),
        None => Err(ResultTooLarge { max }),
    }
}

/// A run's result was larger than its bound (`E0817`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultTooLarge {
    /// The bound, in bytes.
    pub max: usize,
}

impl fmt::Display for ResultTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the run's result is larger than the limit of {} bytes of JSON (`--max-result-bytes`): return less, \
             or a summary of it",
            self.max
        )
    }
}
