//! For the `tests/retention_*.rs` suites: a retention controller running against a test
//! world's server and clock, with its metrics and Events at hand.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kube_gc::controllers::retention::engine::{
    RetentionController, RetentionMetrics, RetentionOptions,
};
use kube_gc::controllers::Wiring;
use kube_gc::events::CollectingRecorder;
use kube_gc::runtime::controller::ControllerError;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ttl_support::World;

/// A running retention controller.
pub struct Running {
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), ControllerError>>,
    pub metrics: Arc<RetentionMetrics>,
    pub recorder: Arc<CollectingRecorder>,
}

impl Running {
    /// Stops the controller and waits for it to end, which it must without an error.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task
            .await
            .expect("the controller task")
            .expect("the controller ran");
    }
}

/// The defaults, with policies' status written every second.
pub fn options() -> RetentionOptions {
    RetentionOptions {
        status_interval: Duration::from_secs(1),
        ..RetentionOptions::default()
    }
}

/// Starts a retention controller with [`options`] on the world's client and clock.
pub fn run(world: &World) -> Running {
    let metrics = Arc::new(RetentionMetrics::default());
    let recorder = Arc::new(CollectingRecorder::new());
    let controller = RetentionController::builder(world.harness.client.clone(), options())
        .wiring(
            Wiring::default()
                .clock(Arc::clone(&world.clock))
                .recorder(Arc::clone(&recorder) as _),
        )
        .metrics(Arc::clone(&metrics))
        .build();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));
    Running {
        shutdown,
        task,
        metrics,
        recorder,
    }
}
