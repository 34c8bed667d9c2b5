//! In-process cross-encoders (feature `models`): a Hugging Face sequence-classification folder
//! (`config.json`, `tokenizer.json`, `model.safetensors`) as the BERT cross-encoders
//! (`cross-encoder/ms-marco-MiniLM-L-6-v2`) and the XLM-RoBERTa ones (`BAAI/bge-reranker-*`)
//! ship them, run on candle, or (feature `onnx`) its ONNX export run by onnxruntime.
//!
//! Each (query, text) pair is tokenized as one input by the tokenizer's own pair template
//! (`[CLS] query [SEP] text [SEP]` with token types 0 then 1; `<s> query </s></s> text </s>`),
//! cut to the model's length on the text's side only. The encoder is `bert_model.rs`'s; the
//! head reads the first token's state: BERT's pooler (dense, tanh) then `classifier`, or
//! XLM-RoBERTa's `classifier.dense`, tanh, `classifier.out_proj` (the same computation under
//! other names). The score is the one logit; models with more labels are refused rather than
//! guessed at. Pairs are batched by length as `bert.rs` batches texts.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{linear, Linear, VarBuilder};
use rayon::prelude::*;
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::super::bert::{length_batches, padded, MAX_BATCH_TOKENS};
use super::super::bert_model::{BertModel, Config};
use super::super::EmbedError;
use super::Reranker;

/// A cross-encoder: scores each text against the query with one forward pass over the pair.
pub struct CrossEncoder {
    name: String,
    pairs: PairTokenizer,
    /// Token types are the tokenizer's (BERT) or all 0 (XLM-RoBERTa has one type).
    uses_token_types: bool,
    scorer: Scorer,
}

/// What turns a padded batch of pairs into logits.
enum Scorer {
    /// candle's f32 encoder and head: batches run in parallel on rayon's threads.
    Candle {
        model: Box<BertModel>,
        head: Head,
        device: Device,
    },
    /// onnxruntime: one batch at a time, each spread over every core by onnxruntime.
    #[cfg(feature = "onnx")]
    Onnx(super::super::onnx::OnnxEncoder),
}

/// The classification head over the first token's state: `out(tanh(dense(state)))`.
struct Head {
    dense: Linear,
    out: Linear,
}

/// The model families a folder's `model_type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Bert,
    XlmRoberta,
}

/// The fields of `config.json` beyond the encoder's: the family and the head's labels.
#[derive(Deserialize)]
struct ClassifierConfig {
    model_type: String,
    #[serde(default)]
    num_labels: Option<usize>,
    #[serde(default)]
    id2label: Option<HashMap<String, String>>,
    #[serde(default)]
    pad_token_id: Option<u32>,
}

/// A folder's config read and checked: the encoder's settings, the family, the first position.
struct FolderConfig {
    encoder: Config,
    family: Family,
    first_position: u32,
}

fn inference(e: candle_core::Error) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

impl FolderConfig {
    fn read(dir: &Path) -> Result<FolderConfig, EmbedError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| EmbedError::model(&path, e))?;
        let encoder: Config =
            serde_json::from_str(&text).map_err(|e| EmbedError::model(&path, e))?;
        let head: ClassifierConfig =
            serde_json::from_str(&text).map_err(|e| EmbedError::model(&path, e))?;
        let family = match head.model_type.as_str() {
            "bert" => Family::Bert,
            "xlm-roberta" | "roberta" => Family::XlmRoberta,
            other => {
                return Err(EmbedError::model(
                    &path,
                    format!(
                        "model_type `{other}` is not supported (bert and xlm-roberta cross-encoders are)"
                    ),
                ))
            }
        };
        // Transformers writes `id2label`; `num_labels` alone is the older form. A config
        // with neither is taken at its weights: a head of another width fails to load (or,
        // exported to ONNX, answers a shape `onnx.rs` refuses).
        let labels = head
            .id2label
            .map(|labels| labels.len())
            .or(head.num_labels)
            .unwrap_or(1);
        if labels != 1 {
            return Err(EmbedError::model(
                &path,
                format!(
                    "the head has {labels} labels: a cross-encoder with one relevance logit \
                     (num_labels 1) is needed"
                ),
            ));
        }
        // RoBERTa's position ids start after the padding id (`padding_idx + 1`).
        let first_position = match family {
            Family::Bert => 0,
            Family::XlmRoberta => head.pad_token_id.unwrap_or(1) + 1,
        };
        Ok(FolderConfig {
            encoder,
            family,
            first_position,
        })
    }

    /// The longest input the position table allows, special tokens included.
    fn max_tokens(&self) -> usize {
        self.encoder
            .max_position_embeddings
            .saturating_sub(self.first_position as usize)
    }
}

impl CrossEncoder {
    /// Loads the sequence-classification folder `dir` and runs it on candle. Its name is
    /// `bert:NAME` (NAME the folder's), as the embedder of a folder is named.
    pub fn load(dir: &Path) -> Result<CrossEncoder, EmbedError> {
        let config = FolderConfig::read(dir)?;
        let weights = dir.join("model.safetensors");
        let device = Device::Cpu;
        let tensors: HashMap<String, Tensor> = candle_core::safetensors::load(&weights, &device)
            .map_err(|e| EmbedError::model(&weights, e))?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb.clone(), &config.encoder)
            .map_err(|e| EmbedError::model(&weights, e))?
            .with_first_position(config.first_position);
        let hidden = config.encoder.hidden_size;
        let (dense, out) = match config.family {
            Family::Bert => (vb.pp("bert.pooler.dense"), vb.pp("classifier")),
            Family::XlmRoberta => (vb.pp("classifier.dense"), vb.pp("classifier.out_proj")),
        };
        let head = Head {
            dense: linear(hidden, hidden, dense).map_err(|e| EmbedError::model(&weights, e))?,
            out: linear(hidden, 1, out).map_err(|e| EmbedError::model(&weights, e))?,
        };
        let scorer = Scorer::Candle {
            model: Box::new(model),
            head,
            device,
        };
        CrossEncoder::assemble("bert", dir, &config, scorer)
    }

    /// Loads the ONNX export `model` of the folder `dir`'s cross-encoder (feature `onnx`;
    /// inputs `input_ids`, `attention_mask`, `token_type_ids`, output `logits`; tokenizer and
    /// config from `dir`), run by the onnxruntime library that `ORT_DYLIB_PATH` names. Its
    /// name is `onnx:NAME`.
    #[cfg(feature = "onnx")]
    pub fn load_onnx(model: &Path, dir: &Path) -> Result<CrossEncoder, EmbedError> {
        let config = FolderConfig::read(dir)?;
        let scorer = Scorer::Onnx(super::super::onnx::OnnxEncoder::load(model)?);
        CrossEncoder::assemble("onnx", dir, &config, scorer)
    }

    fn assemble(
        kind: &str,
        dir: &Path,
        config: &FolderConfig,
        scorer: Scorer,
    ) -> Result<CrossEncoder, EmbedError> {
        let folder = dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
        Ok(CrossEncoder {
            name: format!("{kind}:{folder}"),
            pairs: PairTokenizer::load(&dir.join("tokenizer.json"), config.max_tokens())?,
            uses_token_types: config.family == Family::Bert,
            scorer,
        })
    }

    /// The longest pair the model reads, special tokens included.
    pub fn max_input_tokens(&self) -> usize {
        self.pairs.max_tokens
    }

    /// Logits of one batch of pairs (ids and token types per pair).
    fn logits(&self, ids: &[&[u32]], types: &[&[u32]]) -> Result<Vec<f32>, EmbedError> {
        let (ids, mask, longest) = padded(ids);
        let (types, _, _) = padded(types);
        let rows = mask.len() / longest;
        match &self.scorer {
            Scorer::Candle {
                model,
                head,
                device,
            } => {
                let tensor =
                    |v: Vec<u32>| Tensor::from_vec(v, (rows, longest), device).map_err(inference);
                let states = model
                    .forward(&tensor(ids)?, &tensor(types)?, &tensor(mask)?)
                    .map_err(inference)?;
                let first = states
                    .narrow(1, 0, 1)
                    .and_then(|s| s.squeeze(1))
                    .map_err(inference)?;
                head.forward(&first)
                    .and_then(|l| l.flatten_all())
                    .and_then(|l| l.to_vec1::<f32>())
                    .map_err(inference)
            }
            #[cfg(feature = "onnx")]
            Scorer::Onnx(onnx) => onnx.logits(&ids, &mask, &types, rows),
        }
    }
}

impl Head {
    fn forward(&self, first: &Tensor) -> candle_core::Result<Tensor> {
        self.out.forward(&self.dense.forward(first)?.tanh()?)
    }
}

impl Reranker for CrossEncoder {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let encoded: Vec<(Vec<u32>, Vec<u32>)> = texts
            .par_iter()
            .map(|text| self.pairs.encode(query, text))
            .collect::<Result<_, _>>()?;
        let (ids, types): (Vec<Vec<u32>>, Vec<Vec<u32>>) = encoded
            .into_iter()
            .map(|(ids, types)| {
                let types = if self.uses_token_types {
                    types
                } else {
                    vec![0; ids.len()]
                };
                (ids, types)
            })
            .unzip();
        let run = |rows: Vec<usize>| {
            let batch: Vec<&[u32]> = rows.iter().map(|&i| ids[i].as_slice()).collect();
            let batch_types: Vec<&[u32]> = rows.iter().map(|&i| types[i].as_slice()).collect();
            self.logits(&batch, &batch_types).map(|l| (rows, l))
        };
        let batches = length_batches(&ids, MAX_BATCH_TOKENS);
        let scored: Vec<(Vec<usize>, Vec<f32>)> = match self.scorer {
            Scorer::Candle { .. } => batches.into_par_iter().map(run).collect::<Result<_, _>>()?,
            #[cfg(feature = "onnx")]
            Scorer::Onnx(_) => batches.into_iter().map(run).collect::<Result<_, _>>()?,
        };
        let mut out = vec![0.0; texts.len()];
        for (rows, logits) in scored {
            if logits.len() != rows.len() {
                return Err(EmbedError::Count {
                    expected: rows.len(),
                    got: logits.len(),
                });
            }
            for (row, logit) in rows.into_iter().zip(logits) {
                out[row] = logit;
            }
        }
        Ok(out)
    }
}

/// The folder's tokenizer with its pair template, cutting the text's side of a pair; a query
/// too long for that alone is cut too (longest side first), so no pair fails on length.
struct PairTokenizer {
    text_side: Tokenizer,
    both_sides: Tokenizer,
    max_tokens: usize,
}

impl PairTokenizer {
    fn load(path: &Path, model_max: usize) -> Result<PairTokenizer, EmbedError> {
        let mut tokenizer = Tokenizer::from_file(path).map_err(|e| EmbedError::model(path, e))?;
        if tokenizer.get_post_processor().is_none() {
            return Err(EmbedError::model(
                path,
                "no post-processor: the pair template ([CLS] query [SEP] text [SEP]) is needed",
            ));
        }
        // The tokenizer's own limit when it has one (models often ship 512), never more than
        // the position table.
        let max_tokens = tokenizer
            .get_truncation()
            .map_or(model_max, |t| t.max_length.min(model_max));
        tokenizer.with_padding(None);
        let cut = |strategy| TruncationParams {
            max_length: max_tokens,
            strategy,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        let mut both_sides = tokenizer.clone();
        tokenizer
            .with_truncation(Some(cut(TruncationStrategy::OnlySecond)))
            .map_err(|e| EmbedError::model(path, e))?;
        both_sides
            .with_truncation(Some(cut(TruncationStrategy::LongestFirst)))
            .map_err(|e| EmbedError::model(path, e))?;
        Ok(PairTokenizer {
            text_side: tokenizer,
            both_sides,
            max_tokens,
        })
    }

    /// Token ids and token types of the pair.
    fn encode(&self, query: &str, text: &str) -> Result<(Vec<u32>, Vec<u32>), EmbedError> {
        let encoding = self
            .text_side
            .encode((query, text), true)
            .or_else(|_| self.both_sides.encode((query, text), true))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok((
            encoding.get_ids().to_vec(),
            encoding.get_type_ids().to_vec(),
        ))
    }
}
