//! Helpers of the model tests: their fixtures' paths and the reference vectors
//! (`.fvecs`) they are compared with.

use std::path::{Path, PathBuf};

/// `tests/fixtures/MODEL/NAME` (of the root crate, beside this one).
pub fn fixture(model: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(model)
        .join(name)
}

/// Reads an `.fvecs` file: per vector an i32 dimension, then that many f32, little-endian.
pub fn read_fvecs(path: &Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("reference vectors");
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let dim = i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 4;
        let row = bytes[at..at + dim * 4]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        at += dim * 4;
        out.push(row);
    }
    out
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}
