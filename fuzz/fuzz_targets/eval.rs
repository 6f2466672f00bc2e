#![no_main]
//! See `tdsl::fuzzing::eval`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::eval(data));
