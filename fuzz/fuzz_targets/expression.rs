//! The equation tools' expression parser: any text parses or gives an error
//! whose column lies within the text (plus one, for "at the end").
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(error) = solvergate::equations::parse::parse(text) {
        assert!(error.column >= 1 && error.column <= text.chars().count() + 1);
    }
});
