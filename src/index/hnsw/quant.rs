//! 8-bit scalar quantisation for graph walks.
//!
//! A walk is bound by memory traffic: each distance fetches a random vector. The graph
//! keeps a byte per dimension (`x ≈ offset + scale * code`, per-dimension min/max over the
//! rows it was built on), a quarter of the f32 traffic. A query becomes one 16-bit integer
//! weight per dimension, so a distance is an integer dot product of weights and codes
//! (`vpmaddwd`: 32 dimensions per instruction, against 16 converted and multiplied in f32
//! before). The planner re-scores the walk's final candidates on the f32 vectors, so
//! returned scores are exact.

use super::super::distance::prefetch_lines;
use super::super::metric::Metric;
use super::super::pages;
use super::super::vectors::VectorSet;

/// Codes of a graph's vectors and the per-dimension affine map back to floats.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Codes {
    pub(crate) offset: Vec<f32>,
    pub(crate) scale: Vec<f32>,
    /// `n` rows of `dim` bytes, starting on a cache line.
    pub(crate) bytes: pages::LineBytes,
    /// L2 only: `Σ (scale · code)²` per row, the part of a squared distance the integer
    /// dot product leaves out. Empty for the other metrics.
    norms: Vec<f32>,
    l2: bool,
}

impl Codes {
    /// Fits the per-dimension ranges to `vectors` (no rows yet).
    pub(crate) fn fit(vectors: VectorSet<'_>) -> Codes {
        let dim = vectors.dim();
        let mut lo = vec![f32::INFINITY; dim];
        let mut hi = vec![f32::NEG_INFINITY; dim];
        for row in vectors.as_slice().chunks_exact(dim) {
            for ((l, h), &x) in lo.iter_mut().zip(hi.iter_mut()).zip(row) {
                if x.is_finite() {
                    *l = l.min(x);
                    *h = h.max(x);
                }
            }
        }
        let (offset, scale) = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| match h - l {
                range if range.is_finite() && range > 0.0 => (l, range / 255.0),
                _ if l.is_finite() => (l, 0.0),
                _ => (0.0, 0.0),
            })
            .unzip();
        Codes::from_parts(vectors.metric(), offset, scale, Vec::new())
    }

    /// Codes from stored ranges and rows (rows of `offset.len()` bytes).
    pub(crate) fn from_parts(
        metric: Metric,
        offset: Vec<f32>,
        scale: Vec<f32>,
        bytes: Vec<u8>,
    ) -> Codes {
        let mut codes = Codes {
            offset,
            scale,
            bytes: bytes.into(),
            norms: Vec::new(),
            l2: metric == Metric::L2,
        };
        codes.extend_norms();
        codes
    }

    /// Appends the codes of rows `self.len()..` of `vectors`.
    pub(crate) fn extend(&mut self, vectors: VectorSet<'_>) {
        let start = self.bytes.len();
        self.push_rows(&vectors.as_slice()[start..]);
    }

    /// Appends the codes of `rows` (whole rows of this table's dimension), e.g. one stored
    /// block at a time when the f32 rows are not to be held together.
    pub(crate) fn push_rows(&mut self, rows: &[f32]) {
        let dim = self.offset.len();
        if dim == 0 {
            return;
        }
        self.bytes.reserve(rows.len());
        for row in rows.chunks_exact(dim) {
            for ((&x, &o), &s) in row.iter().zip(&self.offset).zip(&self.scale) {
                // Out-of-range and NaN inputs saturate (`as` clamps, NaN -> 0).
                let code = if s > 0.0 { ((x - o) / s).round() } else { 0.0 };
                self.bytes.push(code as u8);
            }
        }
        self.extend_norms();
    }

    /// Computes the norms of the rows that have none yet (L2 only).
    fn extend_norms(&mut self) {
        let dim = self.dim();
        if !self.l2 || dim == 0 {
            return;
        }
        let rows = self.bytes[self.norms.len() * dim..].chunks_exact(dim);
        let scale = &self.scale;
        // In f64, so each norm is within one rounding (the bounds count on it).
        self.norms.extend(rows.map(|code| {
            code.iter()
                .zip(scale)
                .map(|(&c, &s)| (f64::from(s) * f64::from(c)).powi(2))
                .sum::<f64>() as f32
        }));
    }

    /// Replaces the codes with those of every row of `vectors` (of this table's
    /// dimension) under the ranges already held: what decoding a graph stored without its
    /// codes does. [`Codes::extend`] computes them, the same `f32` arithmetic as when the
    /// graph was built, so the same rows give the same bytes.
    pub(crate) fn recompute(&mut self, vectors: VectorSet<'_>) {
        self.bytes = pages::LineBytes::default();
        self.norms.clear();
        self.extend(vectors);
    }

    /// Dimension of the coded vectors.
    pub(crate) fn dim(&self) -> usize {
        self.offset.len()
    }

    /// Rows coded.
    fn rows(&self) -> u32 {
        (self.bytes.len() / self.dim().max(1)) as u32
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.bytes.len() + 4 * self.norms.len() + 8 * self.dim()
    }

    /// Starts fetching what scoring row `id` reads: its code and, for L2, its norm.
    #[inline(always)]
    pub(crate) fn prefetch(&self, id: u32) {
        prefetch_lines(self.row(id));
        if let Some(norm) = self.norms.get(id as usize) {
            prefetch_lines(std::slice::from_ref(norm));
        }
    }

    /// The code of row `id`.
    #[inline(always)]
    pub(crate) fn row(&self, id: u32) -> &[u8] {
        let dim = self.dim();
        let start = id as usize * dim;
        &self.bytes[start..start + dim]
    }
}

/// How far each coded row is from what its code decodes to (`|x - x̂|`, rounded up), and
/// the largest row norm: what turns a code score into bounds on the exact score (see
/// [`QuantQuery::bounds`]), so a scan of the codes can read only the rows that may rank.
/// 4 bytes a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Residuals {
    dist: Vec<f32>,
    largest: f32,
}

impl Residuals {
    /// Measures `rows` (whole rows, the next ones after those measured, already coded in
    /// `codes`). A row beyond the codes is not measured, so its bounds stay unknown.
    pub(crate) fn extend(&mut self, codes: &Codes, rows: &[f32]) {
        let dim = codes.dim();
        if dim == 0 {
            return;
        }
        for row in rows.chunks_exact(dim) {
            let id = self.dist.len() as u32;
            if id >= codes.rows() {
                return;
            }
            let code = codes.row(id);
            let (mut apart, mut norm) = (0.0f64, 0.0f64);
            for (i, &x) in row.iter().enumerate() {
                let decoded =
                    f64::from(codes.offset[i]) + f64::from(codes.scale[i]) * f64::from(code[i]);
                apart += (f64::from(x) - decoded).powi(2);
                norm += f64::from(x).powi(2);
            }
            // Rounded up, so the f32 is never below the distance (NaN stays NaN).
            let up = |v: f64| (v.sqrt() * (1.0 + 1e-6)) as f32;
            self.dist.push(up(apart));
            self.largest = self.largest.max(up(norm));
        }
    }
}

/// A query prepared against a [`Codes`] table: `score(id)` approximates the exact score
/// of row `id` (up to a per-query constant for L2, which does not change order).
pub(crate) struct QuantQuery<'a> {
    codes: &'a Codes,
    /// The code weights (dot: `query * scale`; L2: `(query - offset) * scale`) divided by
    /// `step` and rounded.
    weights: Vec<i16>,
    /// Dot: `step`; L2: `2 * step`.
    step: f32,
    /// Dot: `query · offset`.
    bias: f32,
    /// How far the integer weights take a score from the one the codes' rows give (the
    /// weights' rounding times the largest codes), for [`QuantQuery::bounds`].
    rounding: f32,
    /// L2: `|query - offset|²`, the constant `score` leaves out; dot: `|query|`.
    reach: f32,
    kernel: Kernel,
}

/// `Σ weights[i] * code[i]` over the common length.
type Kernel = fn(&[i16], &[u8]) -> i32;

impl<'a> QuantQuery<'a> {
    /// `query` prepared for the codes' metric (unit length for cosine).
    pub(crate) fn new(codes: &'a Codes, query: &[f32]) -> Self {
        let l2 = codes.l2;
        let real: Vec<f32> = if l2 {
            query
                .iter()
                .zip(&codes.offset)
                .zip(&codes.scale)
                .map(|((q, o), s)| (q - o) * s)
                .collect()
        } else {
            query.iter().zip(&codes.scale).map(|(q, s)| q * s).collect()
        };
        let bias = if l2 {
            0.0
        } else {
            // In f64: the bounds count on it within one rounding.
            let bias: f64 = query
                .iter()
                .zip(&codes.offset)
                .map(|(&q, &o)| f64::from(q) * f64::from(o))
                .sum();
            bias as f32
        };
        let largest = real.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        let step = if largest > 0.0 {
            largest / weight_limit(real.len())
        } else {
            0.0
        };
        let weights: Vec<i16> = real
            .iter()
            // `as` saturates and maps NaN to 0; |w / step| <= the limit otherwise.
            .map(|&w| {
                if step > 0.0 {
                    (w / step).round() as i16
                } else {
                    0
                }
            })
            .collect();
        // Against the weights in exact arithmetic (f64 holds these products exactly
        // enough): each code is at most 255, and L2 doubles the dot product.
        let origin = |i: usize| if l2 { f64::from(codes.offset[i]) } else { 0.0 };
        let off: f64 = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let exact = (f64::from(query[i]) - origin(i)) * f64::from(codes.scale[i]);
                (f64::from(step) * f64::from(w) - exact).abs()
            })
            .sum();
        let rounding = (if l2 { 2.0 } else { 1.0 } * 255.0 * off) as f32;
        let reach = (0..query.len())
            .map(|i| (f64::from(query[i]) - origin(i)).powi(2))
            .sum::<f64>();
        QuantQuery {
            codes,
            weights,
            step: if l2 { 2.0 * step } else { step },
            bias,
            rounding,
            reach: (if l2 { reach } else { reach.sqrt() }) as f32,
            kernel: kernel(),
        }
    }

    /// `(estimate, error)`: the exact score of row `id` (as [`crate::index::distance`]
    /// computes it) lies within `error` of `estimate`, given how far the row is from its
    /// code (`residuals`). Non-finite when nothing is known (a NaN row or query).
    ///
    /// With `x̂` the row the code decodes to and `e = x - x̂`: a dot product is off by
    /// `q · e`, at most `|q| |e|` (Cauchy-Schwarz); a squared distance by
    /// `2 (q - x̂) · e - |e|²`, at most `2 |q - x̂| |e| + |e|²`, where `|q - x̂|²` is the
    /// estimate itself. Both plus the weights' rounding, the roundings of the few f32
    /// operations here (their terms are each within one rounding: the norms, `reach` and
    /// `bias` are summed in f64, the kernel in integers) and the exact kernel's own
    /// (`d + 2` roundings of what it sums: `|q - x|²`, or at most `|q| |x|`).
    #[inline(always)]
    pub(crate) fn bounds(&self, id: u32, residuals: &Residuals) -> (f32, f32) {
        let (Some(&e), true) = (residuals.dist.get(id as usize), id < self.codes.rows()) else {
            return (0.0, f32::INFINITY);
        };
        let dot = (self.kernel)(&self.weights, self.codes.row(id)) as f32 * self.step;
        let ops = 4.0 * f32::EPSILON;
        let kernel = 2.0 * (self.weights.len() as f32 + 2.0) * f32::EPSILON;
        let (estimate, error) = if self.codes.l2 {
            let norm = self.codes.norms[id as usize];
            let estimate = dot - norm - self.reach;
            // `|q - x̂|²`, bounded above.
            let apart = (self.rounding - estimate).max(0.0);
            let far = apart.sqrt() + e;
            let error = self.rounding
                + 2.0 * apart.sqrt() * e
                + e * e
                + ops * (dot.abs() + norm + self.reach)
                + kernel * far * far;
            (estimate, error)
        } else {
            let estimate = dot + self.bias;
            let error = self.rounding
                + self.reach * e
                + ops * (dot.abs() + self.bias.abs())
                + kernel * self.reach * residuals.largest;
            (estimate, error)
        };
        if estimate.is_finite() && error.is_finite() {
            // Summing the error rounded it too.
            (estimate, error * (1.0 + ops))
        } else {
            (0.0, f32::INFINITY)
        }
    }

    /// Starts fetching what `score(id)` will read.
    #[inline(always)]
    pub(crate) fn prefetch(&self, id: u32) {
        self.codes.prefetch(id);
    }

    /// Approximate score of row `id`, higher is better; never NaN.
    #[inline(always)]
    pub(crate) fn score(&self, id: u32) -> f32 {
        let dot = (self.kernel)(&self.weights, self.codes.row(id)) as f32 * self.step;
        let s = if self.codes.l2 {
            dot - self.codes.norms[id as usize]
        } else {
            dot + self.bias
        };
        if s.is_nan() {
            f32::NEG_INFINITY
        } else {
            s
        }
    }
}

/// Largest integer weight for `dim` dimensions: `dim * 255 * limit` must fit an `i32`, so
/// no partial sum of any kernel overflows (21,931 at 384 dimensions, 15 bits up to 257).
fn weight_limit(dim: usize) -> f32 {
    let limit = i32::MAX as usize / (255 * dim.max(1));
    limit.clamp(1, i16::MAX as usize) as f32
}

fn kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512bw") {
        return avx512::dot;
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        return avx2::dot;
    }
    scalar_dot
}

fn scalar_dot(weights: &[i16], code: &[u8]) -> i32 {
    weights
        .iter()
        .zip(code)
        .map(|(&w, &c)| i32::from(w) * i32::from(c))
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    pub(super) fn dot(weights: &[i16], code: &[u8]) -> i32 {
        // SAFETY: installed by `kernel()` only after AVX2 was detected.
        unsafe { dot_impl(weights, code) }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn dot_impl(weights: &[i16], code: &[u8]) -> i32 {
        let len = code.len().min(weights.len());
        let (pc, pw) = (code.as_ptr(), weights.as_ptr());
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i + 16 <= len {
            // SAFETY: `i + 16 <= len` bounds both reads (16 bytes, 16 i16), unaligned.
            let (c, w) = unsafe {
                (
                    _mm256_cvtepu8_epi16(_mm_loadu_si128(pc.add(i).cast())),
                    _mm256_loadu_si256(pw.add(i).cast()),
                )
            };
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(c, w));
            i += 16;
        }
        let lanes = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let lanes = _mm_add_epi32(lanes, _mm_unpackhi_epi64(lanes, lanes));
        let lanes = _mm_add_epi32(lanes, _mm_shuffle_epi32::<0b01>(lanes));
        _mm_cvtsi128_si32(lanes) + super::scalar_dot(&weights[i..len], &code[i..len])
    }
}

/// Thirty-two dimensions per step, two accumulators.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    pub(super) fn dot(weights: &[i16], code: &[u8]) -> i32 {
        // SAFETY: installed by `kernel()` only after AVX-512BW was detected.
        unsafe { dot_impl(weights, code) }
    }

    /// # Safety
    /// The CPU must support AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn dot_impl(weights: &[i16], code: &[u8]) -> i32 {
        let len = code.len().min(weights.len());
        let (pc, pw) = (code.as_ptr(), weights.as_ptr());
        // SAFETY: callers check `i + 32 <= len`, which bounds both reads (32 bytes, 32
        // i16), unaligned.
        let step = |i: usize| unsafe {
            _mm512_madd_epi16(
                _mm512_cvtepu8_epi16(_mm256_loadu_si256(pc.add(i).cast())),
                _mm512_loadu_si512(pw.add(i).cast()),
            )
        };
        let (mut acc0, mut acc1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut i = 0;
        while i + 64 <= len {
            acc0 = _mm512_add_epi32(acc0, step(i));
            acc1 = _mm512_add_epi32(acc1, step(i + 32));
            i += 64;
        }
        if i + 32 <= len {
            acc0 = _mm512_add_epi32(acc0, step(i));
            i += 32;
        }
        _mm512_reduce_add_epi32(_mm512_add_epi32(acc0, acc1))
            + super::scalar_dot(&weights[i..len], &code[i..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels() -> Vec<Kernel> {
        let mut kernels: Vec<Kernel> = vec![scalar_dot];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                kernels.push(avx2::dot);
            }
            if is_x86_feature_detected!("avx512bw") {
                kernels.push(avx512::dot);
            }
        }
        kernels
    }

    #[test]
    fn kernels_sum_exactly_at_every_length() {
        for len in 0..200usize {
            let weights: Vec<i16> = (0..len)
                .map(|i| ((i * 7919 % 65_535) as i32 - 32_767) as i16)
                .collect();
            let code: Vec<u8> = (0..len).map(|i| (i * 31 % 256) as u8).collect();
            let naive: i64 = weights
                .iter()
                .zip(&code)
                .map(|(&w, &c)| i64::from(w) * i64::from(c))
                .sum();
            if naive.abs() > i64::from(i32::MAX) {
                continue;
            }
            for kernel in kernels() {
                assert_eq!(i64::from(kernel(&weights, &code)), naive, "length {len}");
            }
        }
    }

    #[test]
    fn weights_at_the_limit_never_overflow() {
        for dim in [1, 7, 128, 384, 1536, 4096] {
            let limit = weight_limit(dim) as i16;
            let code = vec![u8::MAX; dim];
            for sign in [1, -1] {
                let weights = vec![sign * limit; dim];
                let expected = i64::from(sign) * i64::from(limit) * 255 * dim as i64;
                for kernel in kernels() {
                    assert_eq!(i64::from(kernel(&weights, &code)), expected, "dim {dim}");
                }
            }
        }
    }

    #[test]
    fn bounds_hold_the_exact_score_even_outside_the_fitted_range() {
        let dim = 24;
        // Codes fitted on the first half; the second half lies partly outside that range
        // (its codes saturate), and one row is NaN.
        let mut data: Vec<f32> = (0..80 * dim)
            .map(|i| ((i * 7919) % 1013) as f32 / 101.0 - 5.0)
            .collect();
        data[40 * dim..].iter_mut().for_each(|x| *x *= 1.7);
        data[79 * dim] = f32::NAN;
        let query: Vec<f32> = (0..dim).map(|i| (i as f32 / 7.0).sin() * 3.0).collect();
        for metric in [Metric::L2, Metric::Dot, Metric::Cosine] {
            let mut rows = data.clone();
            let mut q = query.clone();
            if metric == Metric::Cosine {
                rows.chunks_exact_mut(dim).for_each(|r| {
                    crate::index::distance::normalize(r);
                });
                crate::index::distance::normalize(&mut q);
            }
            let half = VectorSet::new(&rows[..40 * dim], dim, metric).unwrap();
            let mut codes = Codes::fit(half);
            codes.push_rows(&rows);
            let mut residuals = Residuals::default();
            residuals.extend(&codes, &rows);
            let prepared = QuantQuery::new(&codes, &q);
            let exacts: Vec<f32> = rows
                .chunks_exact(dim)
                .take(40)
                .map(|row| crate::index::distance::score(metric, &q, row))
                .collect();
            let spread = exacts.iter().fold(f32::MIN, |m, &x| m.max(x))
                - exacts.iter().fold(f32::MAX, |m, &x| m.min(x));
            let (mut tight, mut known) = (0, 0);
            for (id, row) in rows.chunks_exact(dim).enumerate() {
                let (estimate, error) = prepared.bounds(id as u32, &residuals);
                let exact = crate::index::distance::score(metric, &q, row);
                if row.iter().any(|x| x.is_nan()) {
                    assert_eq!(error, f32::INFINITY, "{metric:?}: a NaN row is unknown");
                    continue;
                }
                known += 1;
                assert!(
                    (exact - estimate).abs() <= error,
                    "{metric:?} row {id}: exact {exact}, estimate {estimate} ± {error}"
                );
                // Within the fitted range a bound is a small part of the scores' spread.
                tight += usize::from(id < 40 && error < 0.05 * spread);
            }
            assert_eq!(known, 79);
            assert!(
                tight > 30,
                "{metric:?}: bounds too loose to prune ({tight} of 40)"
            );
        }
        // A row past what was measured has no bounds.
        let vectors = VectorSet::new(&data[..40 * dim], dim, Metric::L2).unwrap();
        let mut codes = Codes::fit(vectors);
        codes.extend(vectors);
        let prepared = QuantQuery::new(&codes, &query);
        assert_eq!(prepared.bounds(3, &Residuals::default()).1, f32::INFINITY);
    }

    #[test]
    fn quantised_scores_track_exact_scores() {
        let dim = 37;
        let data: Vec<f32> = (0..50 * dim)
            .map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0)
            .collect();
        let query: Vec<f32> = (0..dim).map(|i| i as f32 / 10.0 - 1.0).collect();
        for metric in [Metric::L2, Metric::Dot] {
            let vectors = VectorSet::new(&data, dim, metric).unwrap();
            let mut codes = Codes::fit(vectors);
            codes.extend(vectors);
            let prepared = QuantQuery::new(&codes, &query);
            // L2 scores are exact up to `|query - offset|²`.
            let constant: f32 = match metric {
                Metric::L2 => query
                    .iter()
                    .zip(&codes.offset)
                    .map(|(q, o)| (q - o) * (q - o))
                    .sum(),
                _ => 0.0,
            };
            let origin = |i: usize| match metric {
                Metric::L2 => codes.offset[i],
                _ => 0.0,
            };
            let weights: Vec<f32> = (0..dim)
                .map(|i| (query[i] - origin(i)) * codes.scale[i])
                .collect();
            let largest = weights.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            let rounding = largest / weight_limit(dim) / 2.0 * 255.0 * dim as f32;
            for id in 0..50 {
                let row = vectors.row(id);
                let exact = crate::index::distance::score(metric, &query, row);
                let approx = prepared.score(id) - constant;
                // Each coordinate is off by at most half a step, each weight by half an
                // integer step: bound the score error.
                let coded: f32 = (0..dim)
                    .map(|i| {
                        let half = codes.scale[i] / 2.0;
                        let l2 = 2.0 * (query[i] - row[i]).abs() + half;
                        half * l2.max(query[i].abs())
                    })
                    .sum();
                let bound = coded + if metric == Metric::L2 { 2.0 } else { 1.0 } * rounding;
                assert!(
                    (exact - approx).abs() <= bound + 1e-3 * exact.abs().max(1.0),
                    "{metric:?} {exact} {approx} {bound}"
                );
            }
        }
    }
}
