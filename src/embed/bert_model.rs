//! The BERT encoder on candle's tensors: token ids to token states. Embeddings (word,
//! position, token type, then LayerNorm), then `num_hidden_layers` layers, each
//! self-attention and a feed-forward block with a residual LayerNorm after each.
//!
//! Written here on candle-core and candle-nn rather than taken from candle-transformers: that
//! crate compiles some hundred models (74 CPU-seconds of every release build, and again in
//! every lint) for the one folio runs. The operations and their order are candle-
//! transformers' own, so the vectors are the same (`tests/embedders/bert_embedder.rs`
//! compares them with sentence-transformers' reference vectors).

use candle_core::{DType, Module, Result, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// A BERT `config.json`: the fields the encoder reads (others are ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Config {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    #[serde(default)]
    pub(crate) hidden_act: Activation,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "two")]
    pub(crate) type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub(crate) layer_norm_eps: f64,
    /// Only `absolute` (the default) is supported.
    #[serde(default)]
    pub(crate) position_embedding_type: Option<String>,
}

fn two() -> usize {
    2
}

fn default_eps() -> f64 {
    1e-12
}

/// The feed-forward block's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Activation {
    /// GELU with the error function (BERT's, MiniLM's, BGE's, E5's).
    #[default]
    Gelu,
    /// GELU's tanh approximation.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh")]
    GeluApproximate,
    Relu,
}

impl Activation {
    fn apply(self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Gelu => xs.gelu_erf(),
            Activation::GeluApproximate => xs.gelu(),
            Activation::Relu => xs.relu(),
        }
    }
}

/// The encoder's weights, loaded.
pub(crate) struct BertModel {
    embeddings: Embeddings,
    layers: Vec<Layer>,
}

struct Embeddings {
    words: Embedding,
    positions: Embedding,
    /// The first position id: 0 for BERT; XLM-RoBERTa counts from `padding_idx + 1`.
    first_position: u32,
    token_types: Embedding,
    norm: LayerNorm,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    heads: usize,
    head_size: usize,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    activation: Activation,
    output: Linear,
    output_norm: LayerNorm,
}

impl BertModel {
    /// The weights under `vb` (at its root, as sentence-transformers saves them, under
    /// `bert.` as a pretraining or classification checkpoint does, or under `roberta.` as an
    /// XLM-RoBERTa classifier does).
    pub(crate) fn load(vb: VarBuilder, config: &Config) -> Result<BertModel> {
        if let Some(kind) = config
            .position_embedding_type
            .as_deref()
            .filter(|k| *k != "absolute")
        {
            candle_core::bail!("position_embedding_type `{kind}` is not supported (absolute is)");
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            candle_core::bail!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size,
                config.num_attention_heads
            );
        }
        Self::load_at(vb.clone(), config).or_else(|root| {
            Self::load_at(vb.pp("bert"), config)
                .or_else(|_| Self::load_at(vb.pp("roberta"), config))
                .map_err(|_| root)
        })
    }

    /// The same model with position ids counted from `first` (XLM-RoBERTa's
    /// `padding_idx + 1`): right-padded rows keep every real token's position.
    pub(crate) fn with_first_position(mut self, first: u32) -> BertModel {
        self.embeddings.first_position = first;
        self
    }

    fn load_at(vb: VarBuilder, config: &Config) -> Result<BertModel> {
        let embeddings = Embeddings::load(vb.pp("embeddings"), config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(BertModel { embeddings, layers })
    }

    /// The token states (batch, tokens, hidden) of `ids` (batch, tokens; u32) with token
    /// types `types`; `mask` (batch, tokens) is 1 on real tokens, 0 on padding.
    pub(crate) fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let mut states = self.embeddings.forward(ids, types)?;
        // 0 where a token may be attended to, the lowest f32 where it is padding.
        let mask = mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(DType::F32)?;
        let mask =
            (mask.ones_like()? - &mask)?.broadcast_mul(&Tensor::new(f32::MIN, mask.device())?)?;
        for layer in &self.layers {
            states = layer.forward(&states, &mask)?;
        }
        Ok(states)
    }
}

impl Embeddings {
    fn load(vb: VarBuilder, config: &Config) -> Result<Embeddings> {
        let hidden = config.hidden_size;
        Ok(Embeddings {
            words: embedding(config.vocab_size, hidden, vb.pp("word_embeddings"))?,
            positions: embedding(
                config.max_position_embeddings,
                hidden,
                vb.pp("position_embeddings"),
            )?,
            first_position: 0,
            token_types: embedding(
                config.type_vocab_size,
                hidden,
                vb.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(hidden, config.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, ids: &Tensor, types: &Tensor) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let states = (self.words.forward(ids)? + self.token_types.forward(types)?)?;
        let first = self.first_position;
        let positions = Tensor::arange(first, first + tokens as u32, ids.device())?;
        let states = states.broadcast_add(&self.positions.forward(&positions)?)?;
        self.norm.forward(&states)
    }
}

impl Layer {
    fn load(vb: VarBuilder, config: &Config) -> Result<Layer> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let eps = config.layer_norm_eps;
        let attention = vb.pp("attention");
        let own = attention.pp("self");
        Ok(Layer {
            query: linear(hidden, hidden, own.pp("query"))?,
            key: linear(hidden, hidden, own.pp("key"))?,
            value: linear(hidden, hidden, own.pp("value"))?,
            heads: config.num_attention_heads,
            head_size: hidden / config.num_attention_heads,
            attention_out: linear(hidden, hidden, attention.pp("output").pp("dense"))?,
            attention_norm: layer_norm(hidden, eps, attention.pp("output").pp("LayerNorm"))?,
            intermediate: linear(hidden, inner, vb.pp("intermediate").pp("dense"))?,
            activation: config.hidden_act,
            output: linear(inner, hidden, vb.pp("output").pp("dense"))?,
            output_norm: layer_norm(hidden, eps, vb.pp("output").pp("LayerNorm"))?,
        })
    }

    /// (batch, tokens, hidden) to (batch, heads, tokens, head size).
    fn heads(&self, xs: &Tensor) -> Result<Tensor> {
        let (batch, tokens, _) = xs.dims3()?;
        xs.reshape((batch, tokens, self.heads, self.head_size))?
            .transpose(1, 2)?
            .contiguous()
    }

    fn forward(&self, states: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let query = self.heads(&self.query.forward(states)?)?;
        let key = self.heads(&self.key.forward(states)?)?;
        let value = self.heads(&self.value.forward(states)?)?;
        let scores = query.matmul(&key.t()?)?;
        let scores = (scores / (self.head_size as f64).sqrt())?.broadcast_add(mask)?;
        let weights = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let context = weights
            .matmul(&value)?
            .transpose(1, 2)?
            .contiguous()?
            .flatten_from(D::Minus2)?;
        let attended = (self.attention_out.forward(&context)? + states)?;
        let attended = self.attention_norm.forward(&attended)?;
        let inner = self
            .activation
            .apply(&self.intermediate.forward(&attended)?)?;
        let out = (self.output.forward(&inner)? + &attended)?;
        self.output_norm.forward(&out)
    }
}
