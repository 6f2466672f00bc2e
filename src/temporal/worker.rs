//! `tdsl worker --engine temporal`: a worker that runs the workflow that interprets
//! composites ([`TdslWorkflow`], `interp.rs`) and the activity that calls primitive tools
//! ([`TdslActivities`], `activity.rs`), and the replay of recorded histories.

use std::path::PathBuf;
use std::time::Duration;

use temporalio_client::{Client, ClientOptions, Connection as TemporalConnection, ConnectionOptions, Url};
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

pub use super::activity::TdslActivities;
use super::activity::HEARTBEAT_EVERY;
pub use super::interp::TdslWorkflow;
use super::{Connection, INTERPRETER_VERSION};

/// Replays a workflow history (JSON, as `tdsl run --engine temporal --temporal-history`
/// writes it) against this build's interpreter, with no server: `Err` when this
/// interpreter would issue other commands than the ones recorded (a change that needs
/// `ctx.patched`, docs/distributed.md).
pub fn replay(history_json: &[u8]) -> Result<(), String> {
    use temporalio_client::WorkflowHistory;
    use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
    let history = WorkflowHistory::from_json(history_json).map_err(|e| format!("not a workflow history: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let options = WorkflowReplayerOptions::new()
            .register_workflow::<TdslWorkflow>()
            .map_err(|e| format!("cannot register the workflow: {e}"))?
            .build();
        let replayer = WorkflowReplayer::new(options).map_err(|e| format!("cannot make a replayer: {e}"))?;
        replayer.replay_workflow(history).await.map_err(|e| format!("the history does not replay: {e}"))
    })
}

/// The server's URL from `--temporal-address` (`HOST:PORT`, or a URL).
pub fn server_url(address: &str) -> Result<Url, String> {
    let text = if address.contains("://") { address.to_string() } else { format!("http://{address}") };
    Url::parse(&text).map_err(|e| format!("--temporal-address `{address}`: {e}"))
}

/// A client of the server, in the connection's namespace.
pub async fn connect(conn: &Connection) -> Result<Client, String> {
    let url = server_url(&conn.address)?;
    let connection = TemporalConnection::connect(ConnectionOptions::new(url).identity("tdsl".to_string()).build())
        .await
        .map_err(|e| format!("cannot connect to the Temporal server at {} (--temporal-address): {e}", conn.address))?;
    Client::new(connection, ClientOptions::new(conn.namespace.clone()).build())
        .map_err(|e| format!("cannot make a Temporal client: {e}"))
}

/// Runs a worker until the process ends: the workflow and the activity on the task queue;
/// `concurrency` bounds the activities (tool calls) it runs at once.
pub async fn run_worker(conn: &Connection, root: PathBuf, concurrency: usize) -> Result<(), String> {
    let runtime = Runtime::from_current_tokio(Default::default()).map_err(|e| format!("cannot start the SDK: {e}"))?;
    // A worker may start before its server (both deployed at once): it waits for it, for a
    // minute, saying so once.
    let mut waited = 0;
    let client = loop {
        match connect(conn).await {
            Ok(c) => break c,
            Err(e) if waited < 60 => {
                if waited == 0 {
                    eprintln!("tdsl worker: {e}; trying again every second for a minute");
                }
                waited += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    };
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(100))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(concurrency.max(1)))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .build();
    let options = WorkerOptions::new(conn.task_queue.clone())
        .register_workflow::<TdslWorkflow>()
        .map_err(|e| format!("cannot register the workflow: {e}"))?
        .register_activities(TdslActivities::new(root))
        .tuner(tuner)
        // The SDK sends an activity's heartbeats at most every 0.8 × its heartbeat timeout
        // (16 s for a batch's 20 s), and a cancelled run reaches an activity only in the
        // answer to a heartbeat: at most every HEARTBEAT_EVERY, whatever the timeout, so that
        // a batch hears of a cancel within a second or two (docs/distributed.md).
        .default_heartbeat_throttle_interval(HEARTBEAT_EVERY)
        .max_heartbeat_throttle_interval(HEARTBEAT_EVERY)
        .build();
    let mut worker = Worker::new(&runtime, client, options).map_err(|e| format!("cannot start the worker: {e}"))?;
    eprintln!(
        "tdsl worker: task queue `{}` on {} (namespace `{}`), interpreter v{INTERPRETER_VERSION}",
        conn.task_queue, conn.address, conn.namespace
    );
    worker.run().await.map_err(|e| format!("the worker stopped: {e}"))
}
