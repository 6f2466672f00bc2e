#![no_main]
//! See `tdsl::fuzzing::tool`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::tool(data));
