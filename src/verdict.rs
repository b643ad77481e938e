//! A checker's verdict, typed: the one value saves, races, experiments,
//! replays and the CLI's exit code read to decide whether an answer was
//! verified.
//!
//! Shared by the MiniZinc and CP-SAT services (each grades its own
//! checker's output into a [`Verdict`]), so neither imports the other.
//!
//! [`RaceStatus`] lives here too: a portfolio race (`jobs`) and a CP-SAT
//! experiment (`cpsat`) both end `winner` or `no_winner`, and this module is
//! the one both may import.
//!
//! The rule a maintainer must not break: only [`Verdict::Accepted`] is a
//! pass. A verdict is a positive act of a checker that ran to its end;
//! silence, an error, a timeout or anything ambiguous is a non-pass with a
//! reason of its own, never a default to `accepted`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a checker said about an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The checker ran to its end and said the answer is correct.
    Accepted,
    /// The checker ran and said the answer is wrong.
    Rejected,
    /// The checker ran to its end but said neither (no output, or output
    /// without a verdict).
    NoVerdict,
    /// The checker did not run to a verdict: an evaluation error, an
    /// assertion, a crash, a type error, output lost past the cap.
    Error,
    /// The checker ran out of time.
    Timeout,
}

impl Verdict {
    /// Whether the answer passed: only [`Verdict::Accepted`] does.
    pub fn is_accepted(self) -> bool {
        self == Verdict::Accepted
    }

    /// The verdict as it reads in the JSON (`no_verdict`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::NoVerdict => "no_verdict",
            Verdict::Error => "error",
            Verdict::Timeout => "timeout",
        }
    }

    /// How bad a verdict is when several are combined into one (the worst
    /// wins, see `minizinc::checker`): a rejection outranks an error, which
    /// outranks silence, which outranks a timeout, which outranks a pass.
    pub fn severity(self) -> u8 {
        match self {
            Verdict::Accepted => 0,
            Verdict::Timeout => 1,
            Verdict::NoVerdict => 2,
            Verdict::Error => 3,
            Verdict::Rejected => 4,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a race of several attempts (a portfolio, an experiment) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RaceStatus {
    /// An attempt won; the result names it.
    Winner,
    /// No attempt produced a result the race could trust.
    NoWinner,
}

impl RaceStatus {
    /// The status as it reads in the JSON (`no_winner`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RaceStatus::Winner => "winner",
            RaceStatus::NoWinner => "no_winner",
        }
    }

    /// `winner` when there is one, else `no_winner`.
    pub fn of<T>(winner: &Option<T>) -> RaceStatus {
        match winner {
            Some(_) => RaceStatus::Winner,
            None => RaceStatus::NoWinner,
        }
    }
}

impl std::fmt::Display for RaceStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_is_the_worst_verdict_and_a_pass_the_least() {
        let by_severity = [
            Verdict::Accepted,
            Verdict::Timeout,
            Verdict::NoVerdict,
            Verdict::Error,
            Verdict::Rejected,
        ];
        for pair in by_severity.windows(2) {
            assert!(pair[0].severity() < pair[1].severity(), "{pair:?}");
        }
        assert!(Verdict::Accepted.is_accepted());
        assert!(
            by_severity[1..]
                .iter()
                .all(|verdict| !verdict.is_accepted())
        );
    }

    #[test]
    fn serialises_in_snake_case() {
        let text = serde_json::to_string(&Verdict::NoVerdict).unwrap();
        assert_eq!(text, "\"no_verdict\"");
        assert_eq!(Verdict::NoVerdict.as_str(), "no_verdict");
    }

    #[test]
    fn race_statuses_serialise_in_snake_case() {
        for status in [RaceStatus::Winner, RaceStatus::NoWinner] {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(text, format!("\"{status}\""));
            let back: RaceStatus = serde_json::from_str(&text).unwrap();
            assert_eq!(back, status);
        }
        assert_eq!(RaceStatus::NoWinner.as_str(), "no_winner");
        assert_eq!(RaceStatus::of(&Some(1)), RaceStatus::Winner);
        assert_eq!(RaceStatus::of::<u8>(&None), RaceStatus::NoWinner);
    }
}
