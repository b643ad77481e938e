//! Forwards a service's stage reports to the client: a progress
//! notification when the request carried a progress token, and an info log
//! notification unless the client raised the log level.
//!
//! While a call runs, the client hears from it at least every
//! [`HEARTBEAT`]: the stage, the time so far and, for a solve, the solutions
//! found and the latest objective (new figures go out within a second, at
//! most one such update a second); the 5 s count from the last notification
//! sent, whatever it was. A
//! client that resets its request timeout on progress (the TypeScript SDK
//! does) then never gives up on a healthy long solve. Progress values rise
//! strictly, as the protocol requires: each stage has the whole numbers from
//! its own to the next, and updates within it creep toward the next.
//!
//! Reports are sent in order by one task per request; [`finish`] waits for
//! it, so every notification goes out before the tool's response.

// See mcp/mod.rs: log notifications stay for clients of older revisions.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{LoggingLevel, ProgressNotificationParam};
use rmcp::service::RequestContext;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::tasks::StatusSink;
use crate::progress::{LiveFigures, Progress, ProgressUpdate, Stage};

/// The longest a running call stays silent.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// The shortest gap between two updates of a solve's figures.
const LIVE_GAP: Duration = Duration::from_secs(1);

/// Starts forwarding; returns the sender for the service and the task.
pub fn start(
    context: &RequestContext<RoleServer>,
    tool: &'static str,
    log: bool,
) -> (Progress, JoinHandle<()>) {
    let (progress, mut updates) = Progress::channel();
    let token = context.meta.get_progress_token();
    let peer = context.peer.clone();
    // A call run as a task reports to its task, not to the client.
    let task = context.extensions.get::<StatusSink>().cloned();
    let log = log && task.is_none();
    let forwarder = tokio::spawn(async move {
        let started = Instant::now();
        let mut value = 0.0;
        let mut last_sent = started;
        let mut stage_message = String::from("starting");
        let mut live: Option<LiveFigures> = None;
        // New figures that came within LIVE_GAP of the last notification.
        let mut held = false;
        loop {
            // Due HEARTBEAT after whatever went out last, not on a fixed
            // grid (a figures update between two grid ticks must not push
            // the next notification almost two heartbeats away); held
            // figures go out once LIVE_GAP has passed.
            let due = last_sent + if held { LIVE_GAP } else { HEARTBEAT };
            let heartbeat = tokio::time::sleep_until(due);
            let (message, log_it) = tokio::select! {
                update = updates.recv() => {
                    let Some(update) = update else { break };
                    if update.stage == Stage::Incumbent {
                        live = update.live;
                        if last_sent.elapsed() < LIVE_GAP {
                            held = true;
                            continue;
                        }
                        value = creep(value);
                        (running_message(&stage_message, started, live.as_ref()), false)
                    } else {
                        value = progress_value(&update).max(creep(value));
                        stage_message = update.message.clone();
                        (update.message, true)
                    }
                }
                () = heartbeat => {
                    value = creep(value);
                    (running_message(&stage_message, started, live.as_ref()), false)
                }
            };
            last_sent = Instant::now();
            held = false;
            if let Some(task) = &task {
                task.set(&message);
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), value)
                    .with_message(message.clone());
                let _ = peer.notify_progress(param).await;
            }
            if log && log_it {
                let param = LoggingMessageNotificationParam::new(
                    LoggingLevel::Info,
                    serde_json::Value::String(format!("{tool}: {message}")),
                );
                let _ = peer.notify_logging_message(param).await;
            }
        }
    });
    (progress, forwarder)
}

/// `solving with org.gecode.gecode — 15 s, 3 solution(s), best objective 42`.
fn running_message(stage: &str, started: Instant, live: Option<&LiveFigures>) -> String {
    let seconds = started.elapsed().as_secs();
    match live {
        Some(live) => format!("{stage} — {seconds} s, {}", live.text()),
        None => format!("{stage} — {seconds} s"),
    }
}

/// The next value above `value` and below the next whole number: within a
/// stage the fractions run 1/2, 2/3, 3/4, … so a stage never runs out of
/// room (a day of 5 s heartbeats is 17,280 steps; f64 tells k/(k+1) apart
/// for k far beyond that).
fn creep(value: f64) -> f64 {
    let base = value.floor();
    let fraction = value - base;
    // The k with k/(k+1) just above the fraction.
    let k = (fraction / (1.0 - fraction)).round() + 1.0;
    base + k / (k + 1.0)
}

/// The progress value of a report: the stage number, plus the fraction
/// `done / (total + 1)` for a step, so values stay strictly increasing and
/// below the next stage's.
fn progress_value(update: &ProgressUpdate) -> f64 {
    let stage = f64::from(update.stage as u8);
    match update.step {
        Some((done, total)) => stage + f64::from(done) / (f64::from(total) + 1.0),
        None => stage,
    }
}

/// Closes the sender and waits until every report went out.
pub async fn finish(progress: Progress, task: JoinHandle<()>) {
    drop(progress);
    let _ = task.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(stage: Stage, step: Option<(u32, u32)>) -> ProgressUpdate {
        ProgressUpdate {
            stage,
            message: String::new(),
            step,
            live: None,
        }
    }

    #[test]
    fn creeping_rises_and_stays_in_its_stage() {
        let mut values = vec![2.0];
        for _ in 0..20_000 {
            values.push(creep(*values.last().unwrap()));
        }
        assert!(values.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(values.iter().all(|value| *value < 3.0));
        assert!(progress_value(&update(Stage::Parsing, None)) > values[20_000]);
        // From a step's value too.
        let step = progress_value(&update(Stage::Running, Some((7, 12))));
        assert!(creep(step) > step && creep(step) < 3.0);
    }

    #[test]
    fn steps_rise_strictly_between_their_stage_and_the_next() {
        let mut values = vec![progress_value(&update(Stage::Running, None))];
        for done in 1..=12 {
            values.push(progress_value(&update(Stage::Running, Some((done, 12)))));
        }
        values.push(progress_value(&update(Stage::Parsing, None)));
        assert!(
            values.windows(2).all(|pair| pair[0] < pair[1]),
            "{values:?}"
        );
        assert_eq!(values[0], 2.0);
        assert_eq!(values[13], 3.0);
    }
}
