#![no_main]
//! See `tdsl::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::run(data));
