//! The composer (SPEC §14, issue 31): seed 000's four phases with a language model.
//!
//! 1. **Decompose**: the model splits the query into 2–6 sub-questions
//!    ([`DecompositionResult`]), checked by the seed's rules (count, unique ids, known
//!    dependencies, no cycle, each question at least 10 characters).
//! 2. **Plan**: the model writes a tdsl plan (SPEC §13) from the sub-questions, the guide and
//!    the tools listing (`tdsl://guide`, `tdsl://tools`), with a [`ToolMapping`] per
//!    sub-question; the plan is checked by the plan checker ([`crate::plans::Plans`]) and by
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
mod model;
pub mod openai;
mod prompts;
mod providers;
mod record;
pub mod sampling;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{json, Value as Json};

pub use client::{Message, ModelClient, ModelError, ModelReply, ModelRequest, Phase, Usage};
pub use model::{
    ComposedResponse, CompositionResult, CompositionStatus, DecompositionResult, ExecutionPlan, ExecutionStep, Intent,
    PhaseUsage, SubQuestion, ToolMapping,
};
pub use providers::client_for;

use crate::exec::retry::RetryPolicy;
use crate::exec::{CancelToken, Observer, Random, RunStatus, Runner, SeededRandom, StepStatus, SystemTime, Time};
use crate::host::{HostRunner, ToolEnv};
use crate::plans::{Callable, PlanLimits, PlanRefused, Plans, RunPlanOptions};
use crate::ranges::{Range, RangeError};
use model::{ComposedAnswer, DecompositionAnswer, PlanAnswer};

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
    plans: Plans,
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

/// How a phase ended without its result.
#[derive(Debug)]
struct PhaseError {
    timeout: bool,
    error: String,
}

/// What was wrong with an answer: the text that goes back to the model, and the lines for
/// `errors`.
struct Problem {
    feedback: String,
    errors: Vec<String>,
}

impl Problem {
    fn one(text: String) -> Problem {
        Problem { feedback: text.clone(), errors: vec![text] }
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
        let plans = Plans::with_served(root, callable.clone()).with_limits(limits);
        let runner = Arc::new(HostRunner::new().with_env(ToolEnv::Inherit.withholding(KEY_VARIABLES)));
        Ok(Composer::from_parts(client, plans, callable, listing, runner))
    }

    /// A composer of what `plans` may call: `callable` names the tools a mapping may name,
    /// `listing` is what the model is shown of them, `runner` runs the plan's tools (`serve
    /// --compose` builds one from its plans side: [`crate::mcp::plans::PlanServer`]).
    pub(crate) fn from_parts(
        client: Arc<dyn ModelClient>,
        plans: Plans,
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

    /// One model request with the retry policy for 429 and 5xx, within the phase's deadline.
    fn ask(
        &self,
        request: &mut ModelRequest,
        deadline_ms: u64,
        result: &mut CompositionResult,
    ) -> Result<ModelReply, PhaseError> {
        let phase = request.phase.as_str();
        let mut retries = 0u32;
        loop {
            self.cancelled(request.phase)?;
            let left = deadline_ms.saturating_sub(self.time.monotonic_ms());
            if left == 0 {
                return Err(PhaseError { timeout: true, error: format!("{phase}: the phase ran out of time") });
            }
            request.timeout = Duration::from_millis(left);
            result.usage.entry(phase.to_string()).or_default().requests += 1;
            match self.complete(request)? {
                Ok(reply) => {
                    result.usage.entry(phase.to_string()).or_default().add(reply.usage);
                    return Ok(reply);
                }
                Err(e @ ModelError::Timeout { .. }) => {
                    return Err(PhaseError { timeout: true, error: format!("{phase}: {e} (the phase's timeout)") })
                }
                Err(e @ ModelError::Transient { .. }) if retries < self.config.retry.max_retries => {
                    let retry_after = match &e {
                        ModelError::Transient { retry_after, .. } => *retry_after,
                        _ => None,
                    };
                    let cap =
                        Duration::try_from_secs_f64(self.config.retry.max_delay_seconds).unwrap_or(Duration::ZERO);
                    let delay = match retry_after {
                        Some(d) => d.min(cap),
                        None => self.config.retry.delay(retries, self.random.as_ref()),
                    };
                    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    if self.time.monotonic_ms().saturating_add(delay_ms) >= deadline_ms {
                        return Err(PhaseError {
                            timeout: true,
                            error: format!(
                                "{phase}: {e}; waiting {:.1} s to retry would pass the phase's timeout",
                                delay.as_secs_f64()
                            ),
                        });
                    }
                    result.errors.push(format!("{phase}: {e} (retry {} in {:.1} s)", retries + 1, delay.as_secs_f64()));
                    match &self.cancel {
                        Some(c) => self.time.sleep_unless(delay, c.signal()),
                        None => self.time.sleep(delay),
                    }
                    retries += 1;
                }
                Err(e) => return Err(PhaseError { timeout: false, error: format!("{phase}: {e}") }),
            }
        }
    }

    /// The model's answer to `request`; with a cancel token, the request runs on a thread of
    /// its own so that a cancel does not wait for the model (the abandoned request ends at
    /// its timeout, or with the process).
    fn complete(&self, request: &ModelRequest) -> Result<Result<ModelReply, ModelError>, PhaseError> {
        if self.cancel.is_none() {
            return Ok(self.client.complete(request));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (client, asked) = (self.client.clone(), request.clone());
        let started = std::thread::Builder::new().name("tdsl-compose-model".to_string()).spawn(move || {
            let _ = tx.send(client.complete(&asked));
        });
        if let Err(e) = started {
            return Ok(Err(ModelError::Unreachable {
                url: self.client.model(),
                message: format!("cannot start a thread for the request: {e}"),
            }));
        }
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(answer) => return Ok(answer),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => self.cancelled(request.phase)?,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Err(ModelError::Permanent {
                        url: self.client.model(),
                        status: 0,
                        message: "the model client panicked".to_string(),
                    }))
                }
            }
        }
    }

    /// A phase's conversation: ask, check the answer with `accept`, and on a problem give it
    /// back to the model, up to `rounds` more times.
    #[allow(clippy::too_many_arguments)]
    fn converse<T>(
        &self,
        phase: Phase,
        timeout_s: f64,
        rounds: u32,
        first: String,
        schema: (&'static str, &'static str, Json),
        result: &mut CompositionResult,
        mut accept: impl FnMut(&str) -> Result<T, Problem>,
    ) -> Result<(T, u32), PhaseError> {
        let deadline = self.time.monotonic_ms().saturating_add((timeout_s * 1000.0) as u64);
        let (schema_name, schema_description, schema) = schema;
        let mut request = ModelRequest {
            phase,
            system: prompts::system(phase),
            messages: vec![Message::user(first)],
            schema_name,
            schema_description,
            schema,
            timeout: Duration::ZERO,
        };
        let mut last = String::new();
        for round in 0..=rounds {
            let reply = self.ask(&mut request, deadline, result)?;
            match accept(&reply.text) {
                Ok(v) => return Ok((v, round)),
                Err(problem) => {
                    for e in &problem.errors {
                        result.errors.push(format!("{}: round {}: {e}", phase.as_str(), round + 1));
                    }
                    last = problem.errors.first().cloned().unwrap_or_default();
                    request.messages.push(Message::assistant(if reply.text.trim().is_empty() {
                        "(no answer)".to_string()
                    } else {
                        reply.text
                    }));
                    request.messages.push(Message::user(prompts::repair(phase, &problem.feedback)));
                }
            }
        }
        let n = rounds + 1;
        Err(PhaseError {
            timeout: false,
            error: format!(
                "{}: no valid answer after {n} request{} (the last problem: {last})",
                phase.as_str(),
                if n == 1 { "" } else { "s" }
            ),
        })
    }

    fn decompose(&self, query: &str, result: &mut CompositionResult) -> Result<(Vec<SubQuestion>, String), PhaseError> {
        let first = prompts::decompose(query, &self.listing);
        let (answer, _) = self.converse(
            Phase::Decompose,
            self.config.decompose_timeout,
            ANSWER_REPAIR_ROUNDS,
            first,
            (
                "decomposition_result",
                "The query decomposed into 2-6 atomic sub-questions.",
                prompts::decomposition_schema(),
            ),
            result,
            |text| {
                let mut a: DecompositionAnswer = parse_answer(text, "decomposition_result")?;
                for (i, sq) in a.sub_questions.iter_mut().enumerate() {
                    if sq.id.trim().is_empty() {
                        sq.id = format!("sq_{}", i + 1);
                    }
                }
                validate_decomposition(&a.sub_questions).map_err(Problem::one)?;
                Ok((a.sub_questions, a.decomposition_reasoning))
            },
        )?;
        Ok(answer)
    }

    fn plan(
        &self,
        query: &str,
        subs: &[SubQuestion],
        result: &mut CompositionResult,
    ) -> Result<(ExecutionPlan, String), PhaseError> {
        let first = prompts::plan(query, subs, &self.listing);
        let ((answer, text, check), rounds) = self.converse(
            Phase::Plan,
            self.config.plan_timeout,
            self.config.repair_rounds,
            first,
            (
                "execution_plan",
                "The tdsl plan answering the sub-questions, with a tool mapping per sub-question.",
                prompts::plan_schema(),
            ),
            result,
            |reply| {
                let a: PlanAnswer = parse_answer(reply, "execution_plan")?;
                let text = match &a.plan {
                    Json::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                let check = self.plans.check(&text);
                let violations = self.planning_violations(subs, &a, &a.plan);
                if check.ok() && violations.is_empty() {
                    return Ok((a, text, check));
                }
                let mut feedback = String::new();
                let mut errors = Vec::new();
                for d in check.diagnostics.iter().filter(|d| d.severity == crate::diagnostic::Severity::Error) {
                    let pointer = if d.pointer.is_empty() { "/" } else { &d.pointer };
                    errors.push(format!("{} at plan{pointer}: {}", d.code, d.message));
                    feedback.push_str(&format!("error {} at plan{pointer}: {}\n", d.code, d.message));
                    if let Some(h) = &d.help {
                        feedback.push_str(&format!("help: {h}\n"));
                    }
                    feedback.push_str(d.rendered.trim_end());
                    feedback.push_str("\n\n");
                }
                for v in violations {
                    feedback.push_str(&format!("error: {v}\n"));
                    errors.push(v);
                }
                Err(Problem { feedback, errors })
            },
        )?;
        let deps = self.plans.dependencies(&text).unwrap_or_default();
        let deps: HashMap<String, Vec<String>> = deps.into_iter().collect();
        let instructions = answer.plan.get("instructions").and_then(Json::as_array).cloned().unwrap_or_default();
        let mut steps = Vec::new();
        for ins in &instructions {
            let id = ins.get("execution_id").and_then(Json::as_str).unwrap_or_default().to_string();
            let tool = ins.get("tool_definition_path").and_then(Json::as_str).unwrap_or_default().to_string();
            let sq = answer
                .tool_mappings
                .iter()
                .find(|m| if m.execution_ids.is_empty() { m.tool_name == tool } else { m.execution_ids.contains(&id) })
                .map(|m| m.sub_question_id.clone())
                .unwrap_or_default();
            let priority = subs.iter().find(|s| s.id == sq).map_or(1, |s| s.priority);
            steps.push(ExecutionStep {
                depends_on_steps: deps.get(&id).cloned().unwrap_or_default(),
                step_id: id,
                sub_question_id: sq,
                tool_name: tool,
                input_mapping: ins.get("arguments").cloned().unwrap_or_else(|| json!({})),
                expected_output_schema: None,
                timeout_seconds: ins.get("timeout_seconds").and_then(Json::as_f64).unwrap_or(60.0),
                max_retries: ins
                    .pointer("/retry/max_retries")
                    .and_then(Json::as_u64)
                    .unwrap_or(self.config.retry.max_retries.into()),
                priority,
            });
        }
        let tool_count = steps.iter().map(|s| s.tool_name.as_str()).collect::<HashSet<_>>().len();
        let warnings = check.diagnostics.iter().map(|d| serde_json::to_value(d).unwrap_or_default()).collect();
        let plan = ExecutionPlan {
            plan_id: self.id("plan"),
            tool_mappings: answer.tool_mappings,
            step_count: steps.len(),
            tool_count,
            steps,
            parallel_groups: check.levels.clone().unwrap_or_default(),
            planning_reasoning: answer.planning_reasoning,
            phase_duration_ms: 0,
            model_used: Some(self.client.model()),
            created_at: self.now_iso(),
            plan: answer.plan,
            repair_rounds: rounds,
            warnings,
        };
        Ok((plan, text))
    }

    /// Seed 000's planning rules that the plan checker does not already enforce: every
    /// sub-question mapped and no mapping to an unknown one, every mapped tool known, every
    /// mapped step in the plan, confidences in 0–1. (Unknown tools in the plan, step
    /// dependencies and cycles are the checker's.)
    fn planning_violations(&self, subs: &[SubQuestion], a: &PlanAnswer, plan: &Json) -> Vec<String> {
        let mut out = Vec::new();
        let ids: Vec<&str> = subs.iter().map(|s| s.id.as_str()).collect();
        for sq in subs {
            if !a.tool_mappings.iter().any(|m| m.sub_question_id == sq.id) {
                out.push(format!("sub-question `{}` has no tool mapping: every sub-question must be mapped", sq.id));
            }
        }
        let step_ids: Vec<&str> = plan
            .get("instructions")
            .and_then(Json::as_array)
            .map(|v| v.iter().filter_map(|i| i.get("execution_id").and_then(Json::as_str)).collect())
            .unwrap_or_default();
        for (i, m) in a.tool_mappings.iter().enumerate() {
            if !ids.contains(&m.sub_question_id.as_str()) {
                out.push(format!(
                    "tool_mappings[{i}] maps `{}`, which is not a sub-question (the sub-questions: {})",
                    m.sub_question_id,
                    ids.join(", ")
                ));
            }
            let known = self
                .callable
                .iter()
                .any(|c| c.name == m.tool_name || c.tool_path.as_deref() == Some(m.tool_name.as_str()));
            if !known {
                let names: Vec<&str> = self.callable.iter().map(|c| c.name.as_str()).collect();
                let near = crate::diagnostic::did_you_mean(&m.tool_name, names.iter().copied())
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                out.push(format!(
                    "tool_mappings[{i}] names the unknown tool `{}`: {near}the tools are {}",
                    m.tool_name,
                    names.join(", ")
                ));
            }
            for e in &m.execution_ids {
                if !step_ids.contains(&e.as_str()) {
                    out.push(format!("tool_mappings[{i}] names the step `{e}`, which is not in the plan"));
                }
            }
            if !(0.0..=1.0).contains(&m.confidence) {
                out.push(format!("tool_mappings[{i}].confidence is {}, and must be from 0 to 1", m.confidence));
            }
        }
        out
    }

    /// The steps' statuses and outputs for the synthesis prompt.
    fn results_for_synthesis(&self, run: &crate::plans::PlanRun) -> Json {
        let max = self.config.max_output_chars;
        let steps: Vec<Json> = run
            .trace
            .steps
            .iter()
            .map(|s| {
                let output = s.result.as_ref().map(|r| {
                    let text = serde_json::to_string(r).unwrap_or_default();
                    if text.chars().count() > max {
                        Json::String(format!(
                            "{}… (cut at {max} characters)",
                            text.chars().take(max).collect::<String>()
                        ))
                    } else {
                        serde_json::from_str(&text).unwrap_or(Json::Null)
                    }
                });
                json!({
                    "execution_id": s.execution_id,
                    "tool": s.tool_name,
                    "status": s.status.as_str(),
                    "output": output,
                    "error": s.error,
                })
            })
            .collect();
        json!({"status": run.status.as_str(), "steps": steps, "failure_summary": run.failure_summary})
    }

    #[allow(clippy::too_many_arguments)]
    fn synthesize(
        &self,
        query: &str,
        subs: &[SubQuestion],
        mappings: &[ToolMapping],
        results: &Json,
        plan_ids: &[String],
        failed: &[String],
        result: &mut CompositionResult,
    ) -> Result<ComposedAnswer, PhaseError> {
        let first = prompts::synthesize(query, subs, mappings, results, failed);
        let sq_ids: Vec<&str> = subs.iter().map(|s| s.id.as_str()).collect();
        let (answer, _) = self.converse(
            Phase::Synthesize,
            self.config.synthesize_timeout,
            ANSWER_REPAIR_ROUNDS,
            first,
            (
                "composed_response",
                "The answer to the query, composed from the tools' results.",
                prompts::composed_schema(),
            ),
            result,
            |text| {
                let a: ComposedAnswer = parse_answer(text, "composed_response")?;
                let mut problems = Vec::new();
                let n = a.answer.trim().chars().count();
                if n < 50 {
                    problems.push(format!("`answer` has {n} characters and must have at least 50"));
                }
                if !(0.0..=1.0).contains(&a.confidence) {
                    problems.push(format!("`confidence` is {}, and must be from 0 to 1", a.confidence));
                }
                for c in &a.citations {
                    if !plan_ids.contains(c) {
                        problems.push(format!(
                            "the citation `{c}` is not an execution id of the plan ({})",
                            plan_ids.join(", ")
                        ));
                    }
                }
                for f in &a.failed_components {
                    if !sq_ids.contains(&f.as_str()) {
                        problems.push(format!(
                            "`failed_components` names `{f}`, which is not a sub-question ({})",
                            sq_ids.join(", ")
                        ));
                    }
                }
                if problems.is_empty() {
                    Ok(a)
                } else {
                    Err(Problem {
                        feedback: problems.iter().map(|p| format!("error: {p}\n")).collect(),
                        errors: problems,
                    })
                }
            },
        )?;
        Ok(answer)
    }
}

/// The steps that answer sub-question `sq`: its mappings' `execution_ids`, or the steps that
/// call its mapped tools.
fn steps_of(sq: &str, mappings: &[ToolMapping], steps: &[ExecutionStep]) -> Vec<String> {
    let mut out = Vec::new();
    for m in mappings.iter().filter(|m| m.sub_question_id == sq) {
        if m.execution_ids.is_empty() {
            out.extend(steps.iter().filter(|s| s.tool_name == m.tool_name).map(|s| s.step_id.clone()));
        } else {
            out.extend(m.execution_ids.iter().cloned());
        }
    }
    out
}

/// The answer's JSON as the phase's type, read by [`prompts::reply_json`] (a JSON object
/// alone, in a fenced block, or after prose; every required field named when some are
/// missing).
fn parse_answer<T: serde::de::DeserializeOwned>(text: &str, name: &str) -> Result<T, Problem> {
    let json = prompts::reply_json(text, name).map_err(Problem::one)?;
    serde_json::from_value(json).map_err(|e| Problem::one(format!("the answer is not a valid {name}: {e}")))
}

/// Seed 000's `validate_decomposition`, in its order: 2–6 sub-questions, no duplicate ids,
/// dependencies on known ids, no cycle, each question at least 10 characters (and, from
/// `SubQuestion`'s fields, at most 500, priority 1–10).
pub fn validate_decomposition(subs: &[SubQuestion]) -> Result<(), String> {
    if !(2..=6).contains(&subs.len()) {
        return Err(format!("Expected 2-6 sub-questions, got {}", subs.len()));
    }
    let mut seen = HashSet::new();
    for sq in subs {
        if !seen.insert(sq.id.as_str()) {
            return Err(format!("Duplicate sub-question IDs detected: `{}` appears more than once", sq.id));
        }
    }
    for sq in subs {
        for dep in &sq.depends_on {
            if !seen.contains(dep.as_str()) {
                return Err(format!("Invalid dependency: {dep} (in `{}`)", sq.id));
            }
        }
    }
    if let Some(cycle) = find_cycle(subs) {
        return Err(format!("Circular dependencies detected: {}", cycle.join(" → ")));
    }
    for sq in subs {
        let n = sq.question.trim().chars().count();
        if n < 10 {
            return Err(format!("Sub-question too short: {} ({n} characters, at least 10)", sq.id));
        }
        if sq.question.chars().count() > 500 {
            return Err(format!("Sub-question too long: {} (at most 500 characters)", sq.id));
        }
        if !(1..=10).contains(&sq.priority) {
            return Err(format!("Priority out of range: {} has {} (1 to 10)", sq.id, sq.priority));
        }
    }
    Ok(())
}

/// A dependency cycle among the sub-questions, as the ids along it.
fn find_cycle(subs: &[SubQuestion]) -> Option<Vec<String>> {
    fn visit<'a>(
        id: &'a str,
        deps: &HashMap<&'a str, Vec<&'a str>>,
        state: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(id.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for d in deps.get(id).map(Vec::as_slice).unwrap_or_default() {
            if let Some(c) = visit(d, deps, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    let deps: HashMap<&str, Vec<&str>> =
        subs.iter().map(|s| (s.id.as_str(), s.depends_on.iter().map(String::as_str).collect())).collect();
    let mut state = HashMap::new();
    for s in subs {
        if let Some(c) = visit(&s.id, &deps, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
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
    use super::*;

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
