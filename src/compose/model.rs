//! Seed 000's models, under its names: what each phase produces and the top-level
//! [`CompositionResult`]. Fields the seed does not have are marked (ext).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::client::Usage;
use crate::exec::Trace;

/// `SubQuestion.intent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Intent {
    /// Why something happens.
    Causal,
    /// How things compare.
    Comparative,
    /// What will happen.
    Predictive,
    /// What is.
    Descriptive,
    /// What an experiment would show.
    Experimental,
}

/// The intent words, as the model is told them.
pub(crate) const INTENTS: &[&str] = &["CAUSAL", "COMPARATIVE", "PREDICTIVE", "DESCRIPTIVE", "EXPERIMENTAL"];

fn one() -> i64 {
    1
}

/// An atomic sub-question of the query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubQuestion {
    /// Unique sub-question identifier (`sq_1`, … when the model gives none).
    #[serde(default)]
    pub id: String,
    /// The atomic sub-question text (10–500 characters).
    pub question: String,
    /// Its intent.
    pub intent: Intent,
    /// Extracted entities.
    #[serde(default)]
    pub entities: Vec<String>,
    /// Ids of the sub-questions this one depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Execution priority (1 = highest, up to 10).
    #[serde(default = "one")]
    pub priority: i64,
}

/// What the model answers in phase 1.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct DecompositionAnswer {
    pub sub_questions: Vec<SubQuestion>,
    pub decomposition_reasoning: String,
}

/// Phase 1's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecompositionResult {
    /// `dec_` and 12 hex digits.
    pub decomposition_id: String,
    /// The user's query.
    pub original_query: String,
    /// 2–6 sub-questions.
    pub sub_questions: Vec<SubQuestion>,
    /// Why this decomposition.
    pub decomposition_reasoning: String,
    /// The number of sub-questions.
    pub question_count: usize,
    /// Whether any sub-question depends on another.
    pub has_dependencies: bool,
    /// How long the phase took.
    pub phase_duration_ms: u64,
    /// `PROVIDER:MODEL`.
    pub model_used: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// A sub-question mapped to a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolMapping {
    /// `SubQuestion.id`.
    pub sub_question_id: String,
    /// The tool, as `tdsl://tools` names it.
    pub tool_name: String,
    /// Its category (free text: the tool root has no categories).
    pub tool_category: String,
    /// Who provides it (`tdsl`, or an upstream server's name).
    pub agent_name: String,
    /// Confidence in the choice, 0–1.
    pub confidence: f64,
    /// (ext) The plan's steps that answer the sub-question; by default the steps that call
    /// `tool_name`.
    #[serde(default)]
    pub execution_ids: Vec<String>,
}

/// What the model answers in phase 2.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct PlanAnswer {
    pub tool_mappings: Vec<ToolMapping>,
    pub plan: Json,
    pub planning_reasoning: String,
}

/// One step of the plan, as seed 000 describes it (read off the tdsl plan).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutionStep {
    /// The step's `execution_id`.
    pub step_id: String,
    /// The sub-question it answers (`""` for a helper step no mapping names).
    pub sub_question_id: String,
    /// Its `tool_definition_path`.
    pub tool_name: String,
    /// Its `arguments`, REFs as written.
    pub input_mapping: Json,
    /// Not used: the tools' declared responses are checked instead.
    pub expected_output_schema: Option<Json>,
    /// The steps it waits for (REFs and `dependencies`).
    pub depends_on_steps: Vec<String>,
    /// Its `timeout_seconds` (60 by default).
    pub timeout_seconds: f64,
    /// Its `retry.max_retries` (2 by default).
    pub max_retries: u64,
    /// Its sub-question's priority.
    pub priority: i64,
}

/// Phase 2's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutionPlan {
    /// `plan_` and 12 hex digits.
    pub plan_id: String,
    /// Sub-question → tool.
    pub tool_mappings: Vec<ToolMapping>,
    /// The steps, in plan order.
    pub steps: Vec<ExecutionStep>,
    /// The plan's levels: steps of one level run concurrently.
    pub parallel_groups: Vec<Vec<String>>,
    /// Why this plan.
    pub planning_reasoning: String,
    /// The number of steps.
    pub step_count: usize,
    /// The number of distinct tools.
    pub tool_count: usize,
    /// How long the phase took.
    pub phase_duration_ms: u64,
    /// `PROVIDER:MODEL`.
    pub model_used: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// (ext) The tdsl plan (SPEC §13) that ran.
    pub plan: Json,
    /// (ext) How many repair rounds it took (0: the first plan checked).
    pub repair_rounds: u32,
    /// (ext) The warnings of its check.
    pub warnings: Vec<Json>,
}

/// What the model answers in phase 4.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ComposedAnswer {
    pub answer: String,
    pub confidence: f64,
    #[serde(default)]
    pub supporting_data: serde_json::Map<String, Json>,
    #[serde(default)]
    pub citations: Vec<String>,
    #[serde(default)]
    pub caveats: Vec<String>,
    #[serde(default)]
    pub failed_components: Vec<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
}

/// Phase 4's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComposedResponse {
    /// The answer (at least 50 characters).
    pub answer: String,
    /// Confidence, 0–1.
    pub confidence: f64,
    /// Key data points.
    pub supporting_data: serde_json::Map<String, Json>,
    /// The execution ids of the steps the answer rests on.
    pub citations: Vec<String>,
    /// Limitations.
    pub caveats: Vec<String>,
    /// Sub-questions that could not be answered: those whose steps failed, and any the
    /// model names.
    pub failed_components: Vec<String>,
    /// How the results were combined.
    pub reasoning: Option<String>,
    /// How long the phase took.
    pub phase_duration_ms: u64,
    /// `PROVIDER:MODEL`.
    pub model_used: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The composition's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompositionStatus {
    /// Not started.
    Pending,
    /// Phase 1.
    Decomposing,
    /// Phase 2.
    Planning,
    /// Phase 3.
    Executing,
    /// Phase 4.
    Synthesizing,
    /// An answer, every step succeeded.
    Success,
    /// An answer, but some steps or sub-questions failed.
    Partial,
    /// A phase failed.
    Failed,
    /// A phase ran out of time.
    Timeout,
}

impl CompositionStatus {
    /// The word (`DECOMPOSING`).
    pub fn as_str(self) -> &'static str {
        match self {
            CompositionStatus::Pending => "PENDING",
            CompositionStatus::Decomposing => "DECOMPOSING",
            CompositionStatus::Planning => "PLANNING",
            CompositionStatus::Executing => "EXECUTING",
            CompositionStatus::Synthesizing => "SYNTHESIZING",
            CompositionStatus::Success => "SUCCESS",
            CompositionStatus::Partial => "PARTIAL",
            CompositionStatus::Failed => "FAILED",
            CompositionStatus::Timeout => "TIMEOUT",
        }
    }
}

/// (ext) Model requests and tokens of one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseUsage {
    /// HTTP requests made (retries included).
    pub requests: u32,
    /// Input tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
}

impl PhaseUsage {
    pub(crate) fn add(&mut self, u: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(u.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(u.output_tokens);
    }
}

/// The top-level result of a composition.
#[derive(Clone, Debug, Serialize)]
pub struct CompositionResult {
    /// `comp_` and 12 hex digits.
    pub composition_id: String,
    /// The user's query.
    pub query: String,
    /// Phase 1's output.
    pub decomposition: Option<DecompositionResult>,
    /// Phase 2's output.
    pub plan: Option<ExecutionPlan>,
    /// Phase 3's output: the run's trace (seed 000's `ExecutionTrace`, SPEC §6.7).
    pub execution: Option<Json>,
    /// Phase 4's output.
    pub response: Option<ComposedResponse>,
    /// `SUCCESS`, `PARTIAL`, `FAILED`, `TIMEOUT` at the end.
    pub status: CompositionStatus,
    /// Whether an answer came out (`SUCCESS` or `PARTIAL`).
    pub success: bool,
    /// Every error met, in order (repair rounds and retries included).
    pub errors: Vec<String>,
    /// The error that ended the composition.
    pub error: Option<String>,
    /// Milliseconds per phase (`decompose`, `plan`, `execute`, `synthesize`), for the
    /// phases that started.
    pub phase_durations: IndexMap<String, u64>,
    /// Milliseconds from start to end.
    pub total_duration_ms: Option<u64>,
    /// RFC 3339.
    pub started_at: Option<String>,
    /// RFC 3339.
    pub completed_at: Option<String>,
    /// (ext) `PROVIDER:MODEL`.
    pub model_used: String,
    /// (ext) Model requests and tokens per phase.
    pub usage: IndexMap<String, PhaseUsage>,
    /// The run's trace, for `--trace` and the history (it is `execution` as JSON).
    #[serde(skip)]
    pub trace: Option<Trace>,
}

impl CompositionResult {
    /// The result as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
