//! Talking to the model: one request with the retry policy for 429 and 5xx within the phase's
//! deadline, a cancel that does not wait for the model, and a phase's conversation, where every
//! problem with an answer goes back to the model for another round.

use std::time::Duration;

use serde_json::Value as Json;

use super::client::{Message, ModelError, ModelReply, ModelRequest, Phase};
use super::model::CompositionResult;
use super::{prompts, Composer};

/// How a phase ended without its result.
#[derive(Debug)]
pub(super) struct PhaseError {
    pub(super) timeout: bool,
    pub(super) error: String,
}

/// What was wrong with an answer: the text that goes back to the model, and the lines for
/// `errors`.
pub(super) struct Problem {
    pub(super) feedback: String,
    pub(super) errors: Vec<String>,
}

impl Problem {
    pub(super) fn one(text: String) -> Problem {
        Problem { feedback: text.clone(), errors: vec![text] }
    }
}

impl Composer {
    /// One model request with the retry policy for 429 and 5xx, within the phase's deadline.
    pub(super) fn ask(
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
    pub(super) fn complete(&self, request: &ModelRequest) -> Result<Result<ModelReply, ModelError>, PhaseError> {
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
    pub(super) fn converse<T>(
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
                        echo(reply.text, self.plans.limits().max_bytes.saturating_mul(2))
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
}

/// A refused reply as the next round hands it back to the model: whole up to `max` bytes
/// (twice the largest plan the server takes: a longer reply is no valid answer of any phase),
/// else its start and how long it was — an 8 MiB reply, echoed whole in each round, made
/// every later request of the phase carry all of them (to a sampling client, or to a paid API).
fn echo(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut here: the reply was {} bytes, more than any valid answer)", &text[..end], text.len())
}

/// The answer's JSON as the phase's type, read by [`prompts::reply_json`] (a JSON object
/// alone, in a fenced block, or after prose; every required field named when some are
/// missing).
pub(super) fn parse_answer<T: serde::de::DeserializeOwned>(text: &str, name: &str) -> Result<T, Problem> {
    let json = prompts::reply_json(text, name).map_err(Problem::one)?;
    serde_json::from_value(json).map_err(|e| Problem::one(format!("the answer is not a valid {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::echo;

    #[test]
    fn a_long_refused_reply_is_handed_back_cut() {
        assert_eq!(echo("short".to_string(), 10), "short");
        let long = echo("é".repeat(10), 5);
        assert_eq!(long, "éé… (cut here: the reply was 20 bytes, more than any valid answer)");
    }
}
