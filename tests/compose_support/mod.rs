//! A scripted language-model server for the composer's tests: a small HTTP/1.1 server on a
//! loopback port (std's `TcpListener`, one thread per connection) that speaks both providers'
//! wire formats — OpenAI's chat completions (`POST …/chat/completions`: a `chat.completion`
//! object, the answer in `choices[0].message.content`) and Anthropic's Messages
//! (`POST …/v1/messages`: a `message` object, the answer as the forced `tool_use` block's
//! `input`, prose as a `text` block), with each API's error bodies — and answers each
//! request by its phase (the JSON schema's name, or the forced tool's) from a script of data
//! files (`tests/data/compose/`). Every request is recorded.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

/// The query every composition of the tests asks.
pub const QUERY: &str = "Which of our two documents can be read, and how long is the first one?";

/// What a `tdsl compose` gave.
pub struct Out {
    /// The exit status (-1 when killed).
    pub code: i32,
    /// Standard output as JSON (null when it is not).
    pub json: Json,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// How long it ran.
    pub took: Duration,
}

/// `tdsl compose` with `args`, and `key` in the provider's variable (`ANTHROPIC_API_KEY` for
/// `anthropic`, else `OPENAI_API_KEY`; the other one unset).
pub fn command(args: &[&str], provider: &str, key: &str) -> Command {
    let var = if provider == "anthropic" { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.arg("compose")
        .args(args)
        .env("NO_COLOR", "1")
        .env("XDG_DATA_HOME", crate::common::data_home())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env(var, key);
    cmd
}

/// Runs `tdsl compose` with `args` (see [`command`]) to its end.
pub fn tdsl_compose(args: &[&str], provider: &str, key: &str) -> Out {
    let started = Instant::now();
    let out = command(args, provider, key).output().expect("tdsl runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Out {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout).unwrap_or(Json::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// The arguments of a composition of [`QUERY`] over the example's tools with `model`
/// (`PROVIDER:MODEL`) at `base`, then `more`; `--no-history` unless `more` names a history.
pub fn query_args<'a>(root: &'a str, model: &'a str, base: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![QUERY, "--root", root, "--model", model, "--base-url", base];
    if !more.iter().any(|a| a.starts_with("--history")) {
        args.push("--no-history");
    }
    args.extend_from_slice(more);
    args
}

/// The example's tool root (`examples/document-analysis`).
pub fn root() -> String {
    crate::common::example("document-analysis").display().to_string()
}

/// The folder of the data files.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compose").join(name)
}

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Answer {
    /// The structured answer: a data file's text (JSON), with `@DOCS@` replaced.
    File(&'static str),
    /// Prose instead of JSON (a text block for Anthropic).
    Prose(&'static str),
    /// An error status in the provider's error format, with `Retry-After` when given.
    Status { code: u16, retry_after: Option<&'static str> },
    /// The same answer after a delay.
    Slow(u64, Box<Answer>),
}

/// One recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `POST`.
    pub method: String,
    /// The path (`/v1/chat/completions`).
    pub path: String,
    /// The headers, names lower-cased.
    pub headers: HashMap<String, String>,
    /// The body.
    pub body: String,
    /// The phase the request was for (`decompose`, `plan`, `synthesize`).
    pub phase: String,
    /// The status and body answered.
    pub response: (u16, String),
}

impl Recorded {
    /// The body as JSON.
    pub fn json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap_or(Json::Null)
    }
}

/// The server; stops when dropped.
pub struct ModelServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

struct Shared {
    script: Mutex<HashMap<String, VecDeque<Answer>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    docs: String,
    /// The key the server expects (`Authorization: Bearer` or `x-api-key`); a wrong one is
    /// a 401 whose body echoes it, as real APIs echo part of it.
    key: Option<String>,
}

impl ModelServer {
    /// Starts a server answering each phase from its queue of answers; `@DOCS@` in data files
    /// becomes the example's documents folder.
    pub fn start(script: &[(&str, Answer)], key: Option<&str>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let mut queues: HashMap<String, VecDeque<Answer>> = HashMap::new();
        for (phase, answer) in script {
            queues.entry(phase.to_string()).or_default().push_back(answer.clone());
        }
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/document-analysis/documents");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            script: Mutex::new(queues),
            requests: requests.clone(),
            docs: docs.display().to_string(),
            key: key.map(str::to_string),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                thread::spawn(move || {
                    let _ = serve(conn, &shared);
                });
            }
        });
        ModelServer { port, requests, stop }
    }

    /// `http://127.0.0.1:PORT` + `suffix`.
    pub fn url(&self, suffix: &str) -> String {
        format!("http://127.0.0.1:{}{suffix}", self.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests of one phase.
    pub fn of_phase(&self, phase: &str) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.phase == phase).collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One HTTP request as read: its method, path, headers (names lower-cased) and body.
struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
    /// The body as JSON (null when it is not).
    json: Json,
}

impl Request {
    /// Reads one request (head and `Content-Length` body) from `conn`.
    fn read(conn: &TcpStream) -> std::io::Result<Request> {
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body)?;
        let body = String::from_utf8_lossy(&body).into_owned();
        let json = serde_json::from_str(&body).unwrap_or(Json::Null);
        Ok(Request { method, path, headers, body, json })
    }

    /// The JSON schema's name (OpenAI) or the forced tool's (Anthropic).
    fn schema_name(&self) -> &str {
        self.json
            .pointer("/response_format/json_schema/name")
            .or_else(|| self.json.pointer("/tool_choice/name"))
            .and_then(Json::as_str)
            .unwrap_or_default()
    }

    /// The phase the request is for, from its schema's name.
    fn phase(&self) -> &'static str {
        match self.schema_name() {
            "decomposition_result" => "decompose",
            "execution_plan" => "plan",
            "composed_response" => "synthesize",
            _ => "unknown",
        }
    }
}

fn serve(conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let request = Request::read(&conn)?;
    let (schema_name, phase) = (request.schema_name().to_string(), request.phase().to_string());
    let Request { method, path, headers, body, json: request } = request;
    let anthropic = path.ends_with("/v1/messages");
    // Authentication as the APIs do it.
    let sent_key = if anthropic {
        headers.get("x-api-key").cloned()
    } else {
        headers.get("authorization").and_then(|a| a.strip_prefix("Bearer ").map(str::to_string))
    };
    let (status, extra, answer) = if anthropic
        && headers.get("anthropic-version").map(String::as_str) != Some("2023-06-01")
    {
        (400, None, error_body(anthropic, 400, "anthropic-version: header is required"))
    } else if shared.key.is_some() && sent_key != shared.key {
        let shown = sent_key.unwrap_or_default();
        (401, None, error_body(anthropic, 401, &format!("Incorrect API key provided: {shown}")))
    } else {
        let next = shared.script.lock().unwrap().get_mut(&phase).and_then(VecDeque::pop_front);
        match next {
            None => (500, None, error_body(anthropic, 500, &format!("the script has no answer left for `{phase}`"))),
            Some(a) => respond(a, anthropic, &schema_name, &request, &shared.docs),
        }
    };
    shared.requests.lock().unwrap().push(Recorded {
        method,
        path,
        headers,
        body,
        phase,
        response: (status, answer.clone()),
    });
    let mut out = conn;
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.len()
    );
    if let Some(r) = extra {
        head.push_str(&format!("retry-after: {r}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(answer.as_bytes())?;
    out.flush()
}

fn respond(a: Answer, anthropic: bool, tool: &str, request: &Json, docs: &str) -> (u16, Option<&'static str>, String) {
    let model = request.get("model").and_then(Json::as_str).unwrap_or("model");
    let input_tokens = (request.to_string().len() / 4) as u64;
    match a {
        Answer::Slow(ms, inner) => {
            thread::sleep(Duration::from_millis(ms));
            respond(*inner, anthropic, tool, request, docs)
        }
        Answer::Status { code, retry_after } => (code, retry_after, error_body(anthropic, code, "")),
        Answer::File(name) => {
            let text = std::fs::read_to_string(data(name)).expect("the data file").replace("@DOCS@", docs);
            let value: Json = serde_json::from_str(&text).expect("a data file of JSON");
            let usage = (input_tokens, (text.len() / 4) as u64);
            (200, None, reply(anthropic, model, Content::Structured(tool, value), usage))
        }
        Answer::Prose(text) => (200, None, reply(anthropic, model, Content::Prose(text), (input_tokens, 40))),
    }
}

/// What a model answers: the structured answer (the forced tool's input for Anthropic, the
/// message's JSON text for OpenAI) or prose.
pub enum Content<'a> {
    /// The answer for the named schema or tool.
    Structured(&'a str, Json),
    /// Text.
    Prose(&'a str),
}

/// A provider's successful reply — Anthropic's `message` or OpenAI's `chat.completion` — of
/// `model` with `content` and `(input, output)` tokens.
pub fn reply(anthropic: bool, model: &str, content: Content<'_>, (input, output): (u64, u64)) -> String {
    if anthropic {
        let (block, stop, id) = match content {
            Content::Structured(tool, value) => (
                json!({"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": tool, "input": value}),
                "tool_use",
                "msg_01XFDUDYJgAACzvnptvVoYEL",
            ),
            Content::Prose(text) => (json!({"type": "text", "text": text}), "end_turn", "msg_01XFDUDYJgAACzvnptvVoYEM"),
        };
        return json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": output}
        })
        .to_string();
    }
    let (text, id) = match content {
        Content::Structured(_, value) => (value.to_string(), "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"),
        Content::Prose(text) => (text.to_string(), "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcU"),
    };
    json!({
        "id": id, "object": "chat.completion", "created": 1764201600, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}

/// The provider's error body for a status.
fn error_body(anthropic: bool, code: u16, message: &str) -> String {
    let (kind, default) = match code {
        400 => ("invalid_request_error", "invalid request"),
        401 => ("authentication_error", "invalid x-api-key"),
        429 => ("rate_limit_error", "Rate limit reached for requests"),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    let message = if message.is_empty() { default } else { message };
    if anthropic {
        json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
    } else {
        let (t, c) = match code {
            401 => ("invalid_request_error", "invalid_api_key"),
            429 => ("requests", "rate_limit_exceeded"),
            _ => ("server_error", "server_error"),
        };
        json!({"error": {"message": message, "type": t, "param": null, "code": c}}).to_string()
    }
}

/// A hostile server for the hostile round (`tests/compose_hostile.rs`): reads each request
/// (head and body) and hands the connection to `handler`, which writes whatever bytes it
/// likes — or none. The requests' headers (names lower-cased) are recorded.
pub struct RawServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The headers of every request so far.
    pub seen: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

impl RawServer {
    /// Starts the server; each connection runs `handler` on its own thread.
    pub fn start(handler: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> RawServer {
        RawServer::by_phase(move |conn, _| handler(conn))
    }

    /// Starts the server; `handler` is also told the request's phase (`decompose`, `plan`,
    /// `synthesize`, from the JSON schema's or forced tool's name).
    pub fn by_phase(handler: impl Fn(&mut TcpStream, &str) + Send + Sync + 'static) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let handler = Arc::new(handler);
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let handler = handler.clone();
                let recorded = recorded.clone();
                thread::spawn(move || {
                    let Ok(request) = Request::read(&conn) else { return };
                    let phase = request.phase();
                    recorded.lock().unwrap().push(request.headers);
                    handler(&mut conn, phase);
                });
            }
        });
        RawServer { port, seen }
    }

    /// `http://127.0.0.1:PORT` + `suffix`.
    pub fn url(&self, suffix: &str) -> String {
        format!("http://127.0.0.1:{}{suffix}", self.port)
    }
}

/// Writes a complete 200 (or other status) answer with `body` and extra header lines.
pub fn write_answer(conn: &mut TcpStream, status: u16, extra: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let _ = conn.flush();
}

/// An OpenAI `chat.completion` whose message content is `content`.
pub fn openai_body(content: &str) -> String {
    reply(false, "m", Content::Prose(content), (1, 1))
}
