//! A BERT-family encoder exported to ONNX, run by onnxruntime through the `ort` crate
//! (feature `onnx`): the int8 copy of all-MiniLM-L6-v2 that `../shared/bench/embed.py` runs
//! as `minilm-onnx-int8`. The library is loaded at run time (`load-dynamic`) from
//! `ORT_DYLIB_PATH`, e.g. the `libonnxruntime.so` of the `onnxruntime` pip wheel, so building
//! folio downloads and links nothing.
//!
//! The model takes `input_ids`, `attention_mask` and `token_type_ids` (int64, batch x
//! tokens) and returns the token states (`last_hidden_state`, batch x tokens x hidden);
//! tokenizing, pooling and prefixes are `bert.rs`'s, as for the candle model. A
//! sequence-classification export (a cross-encoder, `rerank/cross.rs`) takes the same inputs
//! and returns one logit per row.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::Session;
use ort::value::Tensor;

use super::EmbedError;

/// The environment variable naming onnxruntime's shared library.
pub const ORT_DYLIB_PATH: &str = "ORT_DYLIB_PATH";

/// One onnxruntime session over an encoder (its runs are serialized: onnxruntime spreads
/// one run over every core).
pub struct OnnxEncoder {
    session: Mutex<Session>,
}

/// onnxruntime allows one environment per process. Only a working one is kept: after a
/// failure (a wrong `ORT_DYLIB_PATH`, say) the next model load tries again.
static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();

/// Serialises the attempts to make it.
static INIT: Mutex<()> = Mutex::new(());

/// Loads onnxruntime from the shared library `lib` (instead of the one `ORT_DYLIB_PATH`
/// names) unless it is loaded already; every ONNX model of the process then runs on it.
pub fn init_onnxruntime(lib: &Path) -> Result<(), EmbedError> {
    environment(Some(lib))
        .map(|_| ())
        .map_err(|reason| EmbedError::Model {
            path: lib.to_path_buf(),
            reason,
        })
}

/// The environment, made from `lib` or else `ORT_DYLIB_PATH` on first use.
fn environment(lib: Option<&Path>) -> Result<&'static Environment, String> {
    if let Some(env) = ENVIRONMENT.get() {
        return Ok(env);
    }
    let _init = INIT
        .lock()
        .map_err(|_| "an earlier initialisation panicked".to_string())?;
    if let Some(env) = ENVIRONMENT.get() {
        return Ok(env);
    }
    let lib = match lib {
        Some(lib) => lib.as_os_str().to_owned(),
        None => std::env::var_os(ORT_DYLIB_PATH)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                format!(
                    "set {ORT_DYLIB_PATH} to onnxruntime's shared library (e.g. \
                     onnxruntime/capi/libonnxruntime.so.1.32.0 of the onnxruntime pip wheel)"
                )
            })?,
    };
    let env = ort::init_from(&lib)
        .map_err(|e| e.to_string())?
        .with_name("folio")
        .build()
        .map_err(|e| e.to_string())?;
    Ok(ENVIRONMENT.get_or_init(|| env))
}

impl OnnxEncoder {
    /// Opens the ONNX file `path` with onnxruntime's CPU provider.
    pub fn load(path: &Path) -> Result<OnnxEncoder, EmbedError> {
        let fail = |reason: String| EmbedError::Model {
            path: path.to_path_buf(),
            reason,
        };
        let env = environment(None).map_err(&fail)?;
        let session = Session::builder(env)
            .and_then(|mut b| b.commit_from_file(path))
            .map_err(|e| fail(e.to_string()))?;
        for input in ["input_ids", "attention_mask", "token_type_ids"] {
            if !session.inputs().iter().any(|i| i.name() == input) {
                return Err(fail(format!("the model has no input `{input}`")));
            }
        }
        if session.outputs().is_empty() {
            return Err(fail("the model has no output".into()));
        }
        Ok(OnnxEncoder {
            session: Mutex::new(session),
        })
    }

    /// Token states of one padded batch, row-major `(rows, tokens, hidden)`: `ids` and
    /// `mask` are `rows x tokens`.
    pub fn states(
        &self,
        ids: &[u32],
        mask: &[u32],
        rows: usize,
        hidden: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        let tokens = ids.len() / rows.max(1);
        let types = vec![0; ids.len()];
        self.run(
            ids,
            mask,
            &types,
            &[rows as i64, tokens as i64, hidden as i64],
        )
    }

    /// One logit per row of a padded batch of a sequence-classification export (output
    /// `logits`, `rows x 1`): `ids`, `mask` and token types `types` are `rows x tokens`.
    pub(crate) fn logits(
        &self,
        ids: &[u32],
        mask: &[u32],
        types: &[u32],
        rows: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        self.run(ids, mask, types, &[rows as i64, 1])
    }

    /// The first output of one run, refused unless its shape is `want`.
    fn run(
        &self,
        ids: &[u32],
        mask: &[u32],
        types: &[u32],
        want: &[i64],
    ) -> Result<Vec<f32>, EmbedError> {
        let rows = want.first().copied().unwrap_or(0);
        let shape = [rows, ids.len() as i64 / rows.max(1)];
        let long = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
        let inference = |e: ort::Error| EmbedError::Inference(e.to_string());
        let inputs = ort::inputs! {
            "input_ids" => Tensor::from_array((shape, long(ids))).map_err(inference)?,
            "attention_mask" => Tensor::from_array((shape, long(mask))).map_err(inference)?,
            "token_type_ids" => Tensor::from_array((shape, long(types))).map_err(inference)?,
        };
        let mut session = self
            .session
            .lock()
            .map_err(|_| EmbedError::Inference("an earlier run panicked".into()))?;
        let outputs = session.run(inputs).map_err(inference)?;
        let (out_shape, values) = outputs[0].try_extract_tensor::<f32>().map_err(inference)?;
        if out_shape.as_ref() != want {
            return Err(EmbedError::Inference(format!(
                "the model answered shape {out_shape:?}, expected {want:?}"
            )));
        }
        Ok(values.to_vec())
    }
}
