//! Stage reports from a long-running service call to whoever is listening.
//!
//! Services say where they are (validating, running, parsing, complete);
//! the MCP face turns that into progress and log notifications. Stages are
//! status updates, not a completion percentage: no solver offers a
//! reliable one. While a solver runs, [`LiveFigures`] say what it has found
//! so far. A [`Progress`] with no listener drops reports for free; one made
//! with [`Progress::into_slot`] keeps only the latest figures (a background
//! job's status reads them).

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Where a call is. The number is the progress value clients see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Checking the arguments and the files before anything runs.
    Validating = 1,
    /// The runtime (or script) is running.
    Running = 2,
    /// Reading what the run printed into a result.
    Parsing = 3,
    /// The result is ready.
    Complete = 4,
    /// Not a stage: news while running (solutions so far, the objective),
    /// for a terminal's status line. The MCP face does not forward it,
    /// since progress values there must strictly increase.
    Incumbent = 5,
}

/// What a running solve has reported so far, read from its output as it
/// arrives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiveFigures {
    /// Solutions the solver has printed so far.
    pub solutions: u64,
    /// The objective of the latest one; `null` on a satisfaction model or
    /// before the first solution.
    pub objective: Option<serde_json::Value>,
    /// The best bound on the objective the solver has reported with its
    /// latest solution (a CP-SAT script's `best_objective_bound`); absent
    /// where the solver reports none while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<serde_json::Value>,
}

impl LiveFigures {
    /// `3 solution(s), best objective 42, bound 40` (the latest of an
    /// improving run is its best).
    pub fn text(&self) -> String {
        let mut text = format!("{} solution(s)", self.solutions);
        if let Some(objective) = &self.objective {
            text.push_str(&format!(", best objective {objective}"));
        }
        if let Some(bound) = &self.bound {
            text.push_str(&format!(", bound {bound}"));
        }
        text
    }
}

/// Where the latest [`LiveFigures`] of a run are kept for readers.
pub type LiveSlot = Arc<Mutex<Option<LiveFigures>>>;

/// One stage report.
#[derive(Debug, Clone)]
pub struct ProgressUpdate {
    /// The stage the call has reached.
    pub stage: Stage,
    /// What is happening, in a few words (`reading the solver output`).
    pub message: String,
    /// Step `done` of `total` within the stage, for a stage that repeats
    /// one kind of work (the unsat-core search's checks); `None` otherwise.
    pub step: Option<(u32, u32)>,
    /// With [`Stage::Incumbent`]: the figures so far.
    pub live: Option<LiveFigures>,
}

/// A sender of stage reports; cloning shares the listener.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    listener: Option<UnboundedSender<ProgressUpdate>>,
    slot: Option<LiveSlot>,
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
                slot: None,
            },
            receiver,
        )
    }

    /// Keeps only the latest live figures, in `slot`.
    pub fn into_slot(slot: LiveSlot) -> Self {
        Progress {
            listener: None,
            slot: Some(slot),
        }
    }

    /// Whether anyone listens (so a service can skip work nobody reads).
    pub fn is_listening(&self) -> bool {
        self.listener.is_some() || self.slot.is_some()
    }

    /// Reports what a running solve has found so far.
    pub fn report_live(&self, live: LiveFigures, message: impl Into<String>) {
        if let Some(slot) = &self.slot
            && let Ok(mut kept) = slot.lock()
        {
            *kept = Some(live.clone());
        }
        if let Some(listener) = &self.listener {
            let _ = listener.send(ProgressUpdate {
                stage: Stage::Incumbent,
                message: message.into(),
                step: None,
                live: Some(live),
            });
        }
    }

    /// Reports that the call reached `stage`, with a few words on what it is
    /// doing; a no-op when nobody listens.
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
                live: None,
            });
        }
    }
}
