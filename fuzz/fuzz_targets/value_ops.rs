#![no_main]
//! See `tdsl::fuzzing::value_ops`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tdsl::fuzzing::value_ops(data));
