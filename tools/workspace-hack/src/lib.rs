//! Holds no code: its `Cargo.toml` unifies the dependency features of the test build and the
//! Python wheel's build, so one compiles what the other reuses.
