//! Forwards a service's stage reports to the client: a progress
//! notification when the request carried a progress token, and an info log
//! notification unless the client raised the log level.
//!
//! Reports are sent in order by one task per request; [`finish`] waits for
//! it, so every notification goes out before the tool's response.

// See mcp/mod.rs: log notifications stay for clients of older revisions.
#![allow(deprecated)]

use rmcp::RoleServer;
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{LoggingLevel, ProgressNotificationParam};
use rmcp::service::RequestContext;
use tokio::task::JoinHandle;

use crate::progress::{Progress, ProgressUpdate, Stage};

/// Starts forwarding; returns the sender for the service and the task.
pub fn start(
    context: &RequestContext<RoleServer>,
    tool: &'static str,
    log: bool,
) -> (Progress, JoinHandle<()>) {
    let (progress, mut updates) = Progress::channel();
    let token = context.meta.get_progress_token();
    let peer = context.peer.clone();
    let task = tokio::spawn(async move {
        while let Some(update) = updates.recv().await {
            if update.stage == Stage::Incumbent {
                continue;
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), progress_value(&update))
                    .with_message(update.message.clone());
                let _ = peer.notify_progress(param).await;
            }
            if log {
                let param = LoggingMessageNotificationParam::new(
                    LoggingLevel::Info,
                    serde_json::Value::String(format!("{tool}: {}", update.message)),
                );
                let _ = peer.notify_logging_message(param).await;
            }
        }
    });
    (progress, task)
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
        }
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
