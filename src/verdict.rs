//! A checker's verdict, typed: the one value saves, races, experiments,
//! replays and the CLI's exit code read to decide whether an answer was
//! verified.
//!
//! Shared by the MiniZinc and CP-SAT services (each grades its own
//! checker's output into a [`Verdict`]), so neither imports the other.
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
    // Plain comments, not doc comments: the published schema stays a plain
    // string enum (the field that carries it says what each value means).
    // The checker ran to its end and said the answer is correct.
    Accepted,
    // The checker ran and said the answer is wrong.
    Rejected,
    // The checker ran to its end but said neither (no output, or output
    // without a verdict).
    NoVerdict,
    // The checker did not run to a verdict: an evaluation error, an
    // assertion, a crash, a type error, output lost past the cap.
    Error,
    // The checker ran out of time.
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
    /// wins): a rejection outranks an error, which outranks silence, which
    /// outranks a timeout, which outranks a pass.
    pub fn severity(self) -> u8 {
        match self {
            Verdict::Accepted => 0,
            Verdict::Timeout => 1,
            Verdict::NoVerdict => 2,
            Verdict::Error => 3,
            Verdict::Rejected => 4,
        }
    }

    /// The worse of two verdicts.
    pub fn worst(self, other: Verdict) -> Verdict {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_verdict_wins_whatever_the_order() {
        let all = [
            Verdict::Accepted,
            Verdict::Rejected,
            Verdict::NoVerdict,
            Verdict::Error,
            Verdict::Timeout,
        ];
        for a in all {
            assert_eq!(a.worst(Verdict::Accepted), a);
            assert_eq!(Verdict::Accepted.worst(a), a);
            assert_eq!(a.worst(Verdict::Rejected), Verdict::Rejected);
            for b in all {
                assert_eq!(a.worst(b), b.worst(a));
            }
        }
        assert!(Verdict::Accepted.is_accepted());
        assert!(all[1..].iter().all(|verdict| !verdict.is_accepted()));
    }

    #[test]
    fn serialises_in_snake_case() {
        let text = serde_json::to_string(&Verdict::NoVerdict).unwrap();
        assert_eq!(text, "\"no_verdict\"");
        assert_eq!(Verdict::NoVerdict.as_str(), "no_verdict");
    }
}
