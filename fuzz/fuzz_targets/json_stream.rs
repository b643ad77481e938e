//! MiniZinc's `--json-stream` output, as the solve parser reads it, with and
//! without a checker: it must never panic, whatever a solver prints.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = solvergate::minizinc::stream::parse(&text, false);
    let _ = solvergate::minizinc::stream::parse(&text, true);
});
