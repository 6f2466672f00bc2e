#![no_main]
//! See `tdsl::fuzzing::compile`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::compile(data));
