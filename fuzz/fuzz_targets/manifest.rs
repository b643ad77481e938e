//! A saved artifact's manifest bytes: the reader must never panic, and what
//! it accepts names only bare file names.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(manifest) = solvergate::artifacts::manifest::ArtifactManifest::parse(data) {
        for file in &manifest.files {
            assert!(!file.name.contains('/') && file.name != ".." && file.name != ".");
        }
    }
});
