//! Stage reports from a long-running service call to whoever is listening.
//!
//! Services say where they are (validating, running, parsing, complete);
//! the MCP face turns that into progress and log notifications. Stages are
//! status updates, not a completion percentage: no solver offers a
//! reliable one. A [`Progress`] with no listener drops reports for free.

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Where a call is. The number is the progress value clients see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Validating = 1,
    Running = 2,
    Parsing = 3,
    Complete = 4,
    /// Not a stage: news while running (solutions so far, the objective),
    /// for a terminal's status line. The MCP face does not forward it,
    /// since progress values there must strictly increase.
    Incumbent = 5,
}

/// One stage report.
#[derive(Debug, Clone)]
pub struct ProgressUpdate {
    pub stage: Stage,
    pub message: String,
    /// Step `done` of `total` within the stage, for a stage that repeats
    /// one kind of work (the unsat-core search's checks); `None` otherwise.
    pub step: Option<(u32, u32)>,
}

/// A sender of stage reports; cloning shares the listener.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    listener: Option<UnboundedSender<ProgressUpdate>>,
}

impl Progress {
    /// Reports go nowhere.
    pub fn none() -> Self {
        Progress::default()
    }

    /// A sender and the receiver its reports arrive on, in order.
    pub fn channel() -> (Progress, UnboundedReceiver<ProgressUpdate>) {
        let (sender, receiver) = unbounded_channel();
        (
            Progress {
                listener: Some(sender),
            },
            receiver,
        )
    }

    /// Whether anyone listens (so a service can skip work nobody reads).
    pub fn is_listening(&self) -> bool {
        self.listener.is_some()
    }

    pub fn report(&self, stage: Stage, message: impl Into<String>) {
        self.send(stage, None, message.into());
    }

    /// Reports step `done` of `total` within `stage` (steps count from 1).
    pub fn report_step(&self, stage: Stage, done: u32, total: u32, message: impl Into<String>) {
        self.send(stage, Some((done, total)), message.into());
    }

    fn send(&self, stage: Stage, step: Option<(u32, u32)>, message: String) {
        if let Some(listener) = &self.listener {
            let _ = listener.send(ProgressUpdate {
                stage,
                message,
                step,
            });
        }
    }
}
