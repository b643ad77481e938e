//! A CP-SAT script's stdout, as the envelope parser reads it: it must never
//! panic, and an accepted envelope has one of the five statuses.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(Ok(envelope)) = solvergate::cpsat::envelope::last_envelope(&text) {
        assert!(
            solvergate::cpsat::envelope::STATUSES.contains(&envelope.status.as_str()),
            "{}",
            envelope.status
        );
    }
});
