//! A CP-SAT checker's stdout, as the checker protocol reads its verdict:
//! it must never panic; an accepted verdict has no errors when it is
//! `accepted`, and was read from the last non-empty line; a refusal says
//! why.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solvergate::cpsat::LineStatus;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match solvergate::fuzzing::checker_verdict(&text) {
        Ok(line) => {
            assert!(line.status != LineStatus::Accepted || line.errors.is_empty());
            let last = text.lines().map(str::trim).rfind(|line| !line.is_empty());
            assert!(last.is_some_and(|line| line.starts_with('{')), "{last:?}");
        }
        Err(reason) => assert!(!reason.to_string().is_empty()),
    }
});
