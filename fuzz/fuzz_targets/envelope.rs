//! A CP-SAT script's stdout, as the envelope parser reads it: it must never
//! panic, and an accepted envelope's status is one of the five words of the
//! contract (the type says so; the serialised word is checked).
#![no_main]

use libfuzzer_sys::fuzz_target;
use solvergate::cpsat::envelope::{ReportedStatus, last_envelope};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(Ok(envelope)) = last_envelope(&text) {
        let word = serde_json::to_value(envelope.status).ok();
        assert!(
            ReportedStatus::ALL
                .iter()
                .any(|status| word.as_ref().and_then(|w| w.as_str()) == Some(status.as_str())),
            "{word:?}"
        );
    }
});
