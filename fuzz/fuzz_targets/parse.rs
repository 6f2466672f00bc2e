#![no_main]
//! See `tdsl::fuzzing::parse`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::parse(data));
