//! The composer (SPEC §14, issue 31): seed 000's four phases with a language model.
//!
//! 1. **Decompose**: the model splits the query into 2–6 sub-questions
//!    ([`DecompositionResult`]), checked by the seed's rules (count, unique ids, known
//!    dependencies, no cycle, each question at least 10 characters).
//! 2. **Plan**: the model writes a tdsl plan (SPEC §13) from the sub-questions, the guide and
//!    the tools listing (`tdsl://guide`, `tdsl://tools`), with a [`ToolMapping`] per
//!    sub-question; the plan is checked by the plan checker ([`crate::plans::PlanDesk`]) and by
//!    the seed's planning rules, and every problem goes back to the model, up to
//!    [`ComposeConfig::repair_rounds`] times.
//! 3. **Execute**: the plan runs with the engine (retries, breaker, timeouts, trace) under
//!    the plan limits, with the phase's timeout as its deadline.
//! 4. **Synthesize**: the model answers the query from the results ([`ComposedResponse`]).
//!
//! The model is a [`ModelClient`]: [`openai::OpenAi`] (chat completions), [`anthropic::Anthropic`]
//! (Messages), or the host's own. Every phase has a timeout; a phase that fails ends the
//! composition with `FAILED` or `TIMEOUT` and what was done so far. Time and randomness are
//! the engine's ([`crate::exec::Time`], [`crate::exec::Random`]), so tests run on a virtual
//! clock. `docs/compose.md` tells the whole story.

pub mod anthropic;
mod client;
mod conversation;
mod model;
pub mod openai;
mod phases;
mod prompts;
mod providers;
mod record;
pub mod sampling;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::json;

pub use client::{Message, ModelClient, ModelError, ModelReply, ModelRequest, Phase, Usage};
pub use model::{
    ComposedResponse, CompositionResult, CompositionStatus, DecompositionResult, ExecutionPlan, ExecutionStep, Intent,
    PhaseUsage, SubQuestion, ToolMapping,
};
pub use providers::client_for;

use crate::exec::retry::RetryPolicy;
use crate::exec::{CancelToken, Observer, Random, RunStatus, Runner, SeededRandom, StepStatus, SystemTime, Time};
use crate::host::{HostRunner, ToolEnv};
use crate::plans::{Callable, PlanDesk, PlanLimits, PlanRefused, RunPlanOptions};
use crate::ranges::{Range, RangeError};
use conversation::PhaseError;
use phases::steps_of;

/// `--decompose-timeout`: phase 1's timeout (10 s by default, seed 000's target).
pub const DECOMPOSE_TIMEOUT: Range =
    Range { name: "decompose timeout", min: 0.1, max: 600.0, integer: false, unit: "seconds" };
/// `--plan-timeout`: phase 2's timeout, repair rounds included (15 s).
pub const PLAN_TIMEOUT: Range = Range { name: "plan timeout", min: 0.1, max: 600.0, integer: false, unit: "seconds" };
/// `--execute-timeout`: phase 3's timeout, the plan's deadline (120 s).
pub const EXECUTE_TIMEOUT: Range =
    Range { name: "execute timeout", min: 0.1, max: 3600.0, integer: false, unit: "seconds" };
/// `--synthesize-timeout`: phase 4's timeout (30 s).
pub const SYNTHESIZE_TIMEOUT: Range =
    Range { name: "synthesize timeout", min: 0.1, max: 600.0, integer: false, unit: "seconds" };
/// `--repair-rounds`: how many times a refused plan goes back to the model (2).
pub const REPAIR_ROUNDS: Range = Range { name: "repair rounds", min: 0.0, max: 5.0, integer: true, unit: "" };

/// The environment variables of the model providers' keys. The processes the plan's tools
/// start never get them ([`Composer::with_tool_env`]; `docs/compose.md`, "What each process
/// gets"), whichever provider the composition uses.
pub const KEY_VARIABLES: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Repair rounds of phases 1 and 4: one, with the violation named (`docs/compose.md`).
pub const ANSWER_REPAIR_ROUNDS: u32 = 1;

/// How a composition runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ComposeConfig {
    /// Phase 1's timeout in seconds (10).
    pub decompose_timeout: f64,
    /// Phase 2's timeout in seconds (15).
    pub plan_timeout: f64,
    /// Phase 3's timeout in seconds (120).
    pub execute_timeout: f64,
    /// Phase 4's timeout in seconds (30).
    pub synthesize_timeout: f64,
    /// Rounds a refused plan goes back to the model (2).
    pub repair_rounds: u32,
    /// Retries of a model request answered 429 or 5xx (the run's retry policy; a
    /// `Retry-After` replaces the back-off, capped at `max_delay_seconds`).
    pub retry: RetryPolicy,
    /// The most characters of one step's output the synthesis is shown (8,000).
    pub max_output_chars: usize,
}

impl Default for ComposeConfig {
    fn default() -> ComposeConfig {
        ComposeConfig {
            decompose_timeout: 10.0,
            plan_timeout: 15.0,
            execute_timeout: 120.0,
            synthesize_timeout: 30.0,
            repair_rounds: 2,
            retry: RetryPolicy::default(),
            max_output_chars: 8000,
        }
    }
}

impl ComposeConfig {
    /// Every setting in its range.
    pub fn validate(&self) -> Result<(), RangeError> {
        DECOMPOSE_TIMEOUT.check(self.decompose_timeout)?;
        PLAN_TIMEOUT.check(self.plan_timeout)?;
        EXECUTE_TIMEOUT.check(self.execute_timeout)?;
        SYNTHESIZE_TIMEOUT.check(self.synthesize_timeout)?;
        REPAIR_ROUNDS.check(f64::from(self.repair_rounds))?;
        self.retry.validate()
    }
}

/// Why a composition ended when its cancel token was cancelled (`FAILED`, this in `error`).
pub const CANCELLED: &str = "cancelled (the composition was interrupted)";

/// Called when a phase starts (a terminal's progress line).
pub type PhaseHook = Arc<dyn Fn(CompositionStatus) + Send + Sync>;

/// Told the composition as it starts and as each phase starts (the history's record).
type Journal<'a> = &'a mut dyn FnMut(&CompositionResult);

/// Runs compositions over one tool root with one model.
pub struct Composer {
    client: Arc<dyn ModelClient>,
    plans: PlanDesk,
    callable: Vec<Callable>,
    listing: String,
    runner: Arc<dyn Runner>,
    config: ComposeConfig,
    time: Arc<dyn Time>,
    random: Arc<dyn Random>,
    observer: Option<Arc<dyn Observer>>,
    on_phase: Option<PhaseHook>,
    cancel: Option<CancelToken>,
}

impl std::fmt::Debug for Composer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Composer")
            .field("model", &self.client.model())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Composer {
    /// A composer of the tools under `root` (every tool that loads, named as `serve --mcp`
    /// names them) with `client`. The error names a root that cannot be read.
    pub fn new(client: Arc<dyn ModelClient>, root: &Path) -> Result<Composer, String> {
        let config = ComposeConfig::default();
        let (server, _skipped) = crate::mcp::McpServer::load(root, &[])?;
        let callable: Vec<Callable> = server
            .tools()
            .iter()
            .map(|s| Callable { name: s.name.clone(), tool_path: Some(s.tool_path.clone()) })
            .collect();
        let limits = PlanLimits { deadline_seconds: config.execute_timeout, ..PlanLimits::default() };
        let server = server.with_plans(
            crate::mcp::plans::PlanOptions { limits: limits.clone(), files: None },
            Arc::new(crate::mcp::upstream::Upstreams::new(Vec::new())),
        );
        let listing = server.plans().map(|p| p.tools_listing()).unwrap_or_default();
        let plans = PlanDesk::with_served(root, callable.clone()).with_limits(limits);
        let runner = Arc::new(HostRunner::new().with_env(ToolEnv::Inherit.withholding(KEY_VARIABLES)));
        Ok(Composer::from_parts(client, plans, callable, listing, runner))
    }

    /// A composer of what `plans` may call: `callable` names the tools a mapping may name,
    /// `listing` is what the model is shown of them, `runner` runs the plan's tools (`serve
    /// --compose` builds one from its plans side: [`crate::mcp::plans::PlanServer`]).
    pub(crate) fn from_parts(
        client: Arc<dyn ModelClient>,
        plans: PlanDesk,
        callable: Vec<Callable>,
        listing: String,
        runner: Arc<dyn Runner>,
    ) -> Composer {
        let config = ComposeConfig::default();
        let limits = PlanLimits { deadline_seconds: config.execute_timeout, ..plans.limits().clone() };
        Composer {
            client,
            plans: plans.with_limits(limits),
            callable,
            listing,
            runner,
            config,
            time: Arc::new(SystemTime::default()),
            random: Arc::new(SeededRandom::new(seed())),
            observer: None,
            on_phase: None,
            cancel: None,
        }
    }

    /// Replaces the configuration (check it with [`ComposeConfig::validate`] first).
    pub fn with_config(mut self, config: ComposeConfig) -> Composer {
        let limits = PlanLimits { deadline_seconds: config.execute_timeout, ..self.plans.limits().clone() };
        self.plans = self.plans.with_limits(limits);
        self.config = config;
        self
    }

    /// Starts the plan's `exec:` tools and `mcp:` servers with the environment `env` allows
    /// (`--clean-env`, `--pass-env`), never with the variables of [`KEY_VARIABLES`] (nor
    /// any other `env` withholds: a host that reads its key from another variable names it
    /// with [`ToolEnv::withholding`]). By default: tdsl's environment without those keys.
    pub fn with_tool_env(mut self, env: ToolEnv) -> Composer {
        self.runner = Arc::new(HostRunner::new().with_env(env.withholding(KEY_VARIABLES)));
        self
    }

    /// Replaces the runner of the plan's tools (the command line's [`HostRunner`], without
    /// the keys in its environment, by default). The environment of what a host's own
    /// runner starts is the host's to decide.
    pub fn with_runner(mut self, runner: Arc<dyn Runner>) -> Composer {
        self.runner = runner;
        self
    }

    /// Replaces the clock (a [`crate::exec::ManualTime`] in tests).
    pub fn with_time(mut self, time: Arc<dyn Time>) -> Composer {
        self.time = time;
        self
    }

    /// Replaces the randomness (ids and retry jitter).
    pub fn with_random(mut self, random: Arc<dyn Random>) -> Composer {
        self.random = random;
        self
    }

    /// Receives the plan run's events (the history's recorder, progress).
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Composer {
        self.observer = Some(observer);
        self
    }

    /// Called as each phase starts.
    pub fn on_phase(mut self, hook: PhaseHook) -> Composer {
        self.on_phase = Some(hook);
        self
    }

    /// Ends the composition when `cancel` is cancelled (the command line's signals): a model
    /// request in flight is abandoned, the plan's run is cancelled (its tools' processes
    /// ended, as for `tdsl run`), and the composition ends `FAILED` in the phase it was in,
    /// saying it was cancelled.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Composer {
        self.cancel = Some(cancel);
        self
    }

    fn cancelled(&self, phase: Phase) -> Result<(), PhaseError> {
        match &self.cancel {
            Some(c) if c.is_cancelled() => {
                Err(PhaseError { timeout: false, error: format!("{}: {CANCELLED}", phase.as_str()) })
            }
            _ => Ok(()),
        }
    }

    /// The tools listing the model is shown (`tdsl://tools`).
    pub fn tools_listing(&self) -> &str {
        &self.listing
    }

    fn now_iso(&self) -> String {
        iso(self.time.wall_ms())
    }

    fn id(&self, prefix: &str) -> String {
        let hi = (self.random.next_f64() * f64::from(1u32 << 24)) as u64;
        let lo = (self.random.next_f64() * f64::from(1u32 << 24)) as u64;
        format!("{prefix}_{:06x}{:06x}", hi, lo)
    }

    fn enter(&self, result: &mut CompositionResult, status: CompositionStatus, journal: Journal<'_>) {
        result.status = status;
        if let Some(h) = &self.on_phase {
            h(status);
        }
        journal(result);
    }

    /// Runs the four phases for `query`. Never fails: a phase that does ends the
    /// composition with `FAILED` or `TIMEOUT`, the error, and what was done so far.
    pub fn compose(&self, query: &str) -> CompositionResult {
        self.compose_journaled(query, &mut |_| {})
    }

    /// [`Composer::compose`], telling `journal` the composition as it starts (status
    /// `PENDING`) and as each phase starts.
    fn compose_journaled(&self, query: &str, journal: Journal<'_>) -> CompositionResult {
        let start = self.time.monotonic_ms();
        let model = self.client.model();
        let mut result = CompositionResult {
            composition_id: self.id("comp"),
            query: query.to_string(),
            decomposition: None,
            plan: None,
            execution: None,
            response: None,
            status: CompositionStatus::Pending,
            success: false,
            errors: Vec::new(),
            error: None,
            phase_durations: IndexMap::new(),
            total_duration_ms: None,
            started_at: Some(self.now_iso()),
            completed_at: None,
            model_used: model,
            usage: IndexMap::new(),
            trace: None,
        };
        journal(&result);
        let end = self.run_phases(query, &mut result, journal);
        if let Err(e) = end {
            result.status = if e.timeout { CompositionStatus::Timeout } else { CompositionStatus::Failed };
            result.errors.push(e.error.clone());
            result.error = Some(e.error);
        }
        result.success = matches!(result.status, CompositionStatus::Success | CompositionStatus::Partial);
        result.total_duration_ms = Some(self.time.monotonic_ms().saturating_sub(start));
        result.completed_at = Some(self.now_iso());
        result
    }

    fn run_phases(&self, query: &str, result: &mut CompositionResult, journal: Journal<'_>) -> Result<(), PhaseError> {
        if query.trim().is_empty() {
            return Err(PhaseError { timeout: false, error: "the query is empty".to_string() });
        }
        // A host may skip `validate`: out of range is an error here, never a panic later.
        if let Err(e) = self.config.validate() {
            return Err(PhaseError { timeout: false, error: format!("the configuration: {e}") });
        }
        // Phase 1.
        self.cancelled(Phase::Decompose)?;
        self.enter(result, CompositionStatus::Decomposing, journal);
        let t = self.time.monotonic_ms();
        let decomposed = self.decompose(query, result);
        let ms = self.time.monotonic_ms().saturating_sub(t);
        result.phase_durations.insert(Phase::Decompose.as_str().into(), ms);
        let (sub_questions, reasoning) = decomposed?;
        result.decomposition = Some(DecompositionResult {
            decomposition_id: self.id("dec"),
            original_query: query.to_string(),
            question_count: sub_questions.len(),
            has_dependencies: sub_questions.iter().any(|s| !s.depends_on.is_empty()),
            sub_questions,
            decomposition_reasoning: reasoning,
            phase_duration_ms: ms,
            model_used: Some(self.client.model()),
            created_at: self.now_iso(),
        });
        let subs = result.decomposition.as_ref().map(|d| d.sub_questions.clone()).unwrap_or_default();

        // Phase 2.
        self.cancelled(Phase::Plan)?;
        self.enter(result, CompositionStatus::Planning, journal);
        let t = self.time.monotonic_ms();
        let planned = self.plan(query, &subs, result);
        let ms = self.time.monotonic_ms().saturating_sub(t);
        result.phase_durations.insert(Phase::Plan.as_str().into(), ms);
        let (mut plan, text) = planned?;
        plan.phase_duration_ms = ms;
        let plan_ids: Vec<String> = plan.steps.iter().map(|s| s.step_id.clone()).collect();
        result.plan = Some(plan);

        // Phase 3.
        self.cancelled(Phase::Execute)?;
        self.enter(result, CompositionStatus::Executing, journal);
        let t = self.time.monotonic_ms();
        let options = RunPlanOptions {
            cancel: self.cancel.as_ref().map(CancelToken::child).unwrap_or_default(),
            observer: self.observer.clone(),
            time: Some(self.time.clone()),
            ..RunPlanOptions::default()
        };
        let ran =
            self.plans.run(&text, crate::value::Value::from(json!({"query": query})), self.runner.clone(), &options);
        result.phase_durations.insert(Phase::Execute.as_str().into(), self.time.monotonic_ms().saturating_sub(t));
        let run = match ran {
            Ok(run) => run,
            Err(PlanRefused::Invalid(check)) => {
                return Err(PhaseError {
                    timeout: false,
                    error: format!("execute: the plan did not check: {}", check.render()),
                })
            }
            Err(refused) => return Err(PhaseError { timeout: false, error: format!("execute: {refused}") }),
        };
        let mut trace = run.trace.clone();
        // Seed 000: the trace names the plan it ran.
        if let Some(p) = &result.plan {
            trace.plan_id = p.plan_id.clone();
        }
        result.execution = serde_json::to_value(&trace).ok();
        result.trace = Some(trace);
        // A cancelled run is not synthesized: its trace says what had finished.
        self.cancelled(Phase::Execute)?;
        let succeeded = run.trace.steps.iter().filter(|s| s.status == StepStatus::Completed).count();
        if !run.status.is_ok() {
            let why =
                run.failure_summary.clone().unwrap_or_else(|| format!("the plan's run ended {}", run.status.as_str()));
            if succeeded == 0 {
                return Err(PhaseError { timeout: run.status == RunStatus::Timeout, error: format!("execute: {why}") });
            }
            result.errors.push(format!("execute: {why}"));
        }
        // Sub-questions whose steps failed.
        let failed_steps: HashSet<&str> = run
            .trace
            .steps
            .iter()
            .filter(|s| matches!(s.status, StepStatus::Failed | StepStatus::Timeout | StepStatus::Cancelled))
            .map(|s| s.execution_id.as_str())
            .collect();
        let mappings = result.plan.as_ref().map(|p| p.tool_mappings.clone()).unwrap_or_default();
        let steps = result.plan.as_ref().map(|p| p.steps.clone()).unwrap_or_default();
        let mut failed_components: Vec<String> = Vec::new();
        for sq in &subs {
            let ids = steps_of(&sq.id, &mappings, &steps);
            if ids.iter().any(|id| failed_steps.contains(id.as_str())) && !failed_components.contains(&sq.id) {
                failed_components.push(sq.id.clone());
            }
        }

        // Phase 4.
        self.cancelled(Phase::Synthesize)?;
        self.enter(result, CompositionStatus::Synthesizing, journal);
        let t = self.time.monotonic_ms();
        let results = self.results_for_synthesis(&run);
        let synthesized = self.synthesize(query, &subs, &mappings, &results, &plan_ids, &failed_components, result);
        let ms = self.time.monotonic_ms().saturating_sub(t);
        result.phase_durations.insert(Phase::Synthesize.as_str().into(), ms);
        let answer = synthesized?;
        let mut failed = failed_components;
        for f in answer.failed_components {
            if !failed.contains(&f) {
                failed.push(f);
            }
        }
        let status = if run.status == RunStatus::Success && failed.is_empty() {
            CompositionStatus::Success
        } else {
            CompositionStatus::Partial
        };
        result.response = Some(ComposedResponse {
            answer: answer.answer,
            confidence: answer.confidence,
            supporting_data: answer.supporting_data,
            citations: answer.citations,
            caveats: answer.caveats,
            failed_components: failed,
            reasoning: answer.reasoning,
            phase_duration_ms: ms,
            model_used: Some(self.client.model()),
            created_at: self.now_iso(),
        });
        result.status = status;
        Ok(())
    }
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// A seed for ids and jitter from the clock and the process.
fn seed() -> u64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

#[cfg(test)]
mod tests {
    use super::conversation::{parse_answer, Problem};
    use super::phases::validate_decomposition;
    use super::*;
    use serde_json::Value as Json;

    fn sq(id: &str, q: &str, deps: &[&str]) -> SubQuestion {
        SubQuestion {
            id: id.into(),
            question: q.into(),
            intent: Intent::Descriptive,
            entities: vec![],
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            priority: 1,
        }
    }

    #[test]
    fn the_seeds_decomposition_rules() {
        let ok = [sq("a", "What is in the notes?", &[]), sq("b", "What does the report say?", &["a"])];
        assert_eq!(validate_decomposition(&ok), Ok(()));
        assert_eq!(validate_decomposition(&ok[..1]).unwrap_err(), "Expected 2-6 sub-questions, got 1");
        let dup = [sq("a", "What is in the notes?", &[]), sq("a", "What does the report say?", &[])];
        assert!(validate_decomposition(&dup).unwrap_err().starts_with("Duplicate sub-question IDs"));
        let bad_dep = [sq("a", "What is in the notes?", &["z"]), sq("b", "What does the report say?", &[])];
        assert!(validate_decomposition(&bad_dep).unwrap_err().starts_with("Invalid dependency: z"));
        let cycle = [sq("a", "What is in the notes?", &["b"]), sq("b", "What does the report say?", &["a"])];
        assert_eq!(validate_decomposition(&cycle).unwrap_err(), "Circular dependencies detected: a → b → a");
        let short = [sq("a", "Notes?", &[]), sq("b", "What does the report say?", &[])];
        assert!(validate_decomposition(&short).unwrap_err().starts_with("Sub-question too short: a"));
    }

    #[test]
    fn a_configuration_out_of_range_or_an_empty_query_is_an_error_not_a_panic() {
        struct Never;
        impl ModelClient for Never {
            fn model(&self) -> String {
                "test:never".into()
            }
            fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
                panic!("no request may be made")
            }
        }
        let composer = Composer::new(Arc::new(Never), Path::new("examples/document-analysis")).unwrap();
        let r = composer.compose("  ");
        assert_eq!((r.status, r.error.as_deref()), (CompositionStatus::Failed, Some("the query is empty")));
        let composer = composer.with_config(ComposeConfig { execute_timeout: f64::NAN, ..ComposeConfig::default() });
        let r = composer.compose("What do the documents say about the budget?");
        assert_eq!(r.status, CompositionStatus::Failed);
        assert!(r.error.unwrap().starts_with("the configuration: `execute timeout` must be"));
    }

    #[test]
    fn answers_in_fences_are_read_and_prose_is_a_problem() {
        let a: Result<Json, Problem> = parse_answer("```json\n{\"a\": 1}\n```", "x");
        assert_eq!(a.ok(), Some(json!({"a": 1})));
        let p: Result<Json, Problem> = parse_answer("Sure! Here are the sub-questions: …", "decomposition_result");
        assert!(p.err().unwrap().feedback.contains("not JSON"));
    }
}
