//! 8-bit scalar quantisation for graph walks.
//!
//! A walk is bound by memory traffic: each distance fetches a random vector. The graph
//! keeps a byte per dimension (`x ≈ offset + scale * code`, per-dimension min/max over the
//! rows it was built on), a quarter of the f32 traffic, and walks with asymmetric
//! distances (f32 query against codes). The planner re-scores the walk's final candidates
//! on the f32 vectors, so returned scores are exact.

use super::super::vectors::VectorSet;
use super::super::Metric;

/// Codes of a graph's vectors and the per-dimension affine map back to floats.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Codes {
    pub(crate) offset: Vec<f32>,
    pub(crate) scale: Vec<f32>,
    /// `n` rows of `dim` bytes.
    pub(crate) bytes: Vec<u8>,
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
        Codes {
            offset,
            scale,
            bytes: Vec::new(),
        }
    }

    /// Appends the codes of rows `self.len()..` of `vectors`.
    pub(crate) fn extend(&mut self, vectors: VectorSet<'_>) {
        let dim = self.offset.len();
        let start = self.bytes.len();
        for row in vectors.as_slice()[start..].chunks_exact(dim) {
            for ((&x, &o), &s) in row.iter().zip(&self.offset).zip(&self.scale) {
                // Out-of-range and NaN inputs saturate (`as` clamps, NaN -> 0).
                let code = if s > 0.0 { ((x - o) / s).round() } else { 0.0 };
                self.bytes.push(code as u8);
            }
        }
    }

    /// Dimension of the coded vectors.
    pub(crate) fn dim(&self) -> usize {
        self.offset.len()
    }

    /// The code of row `id`.
    #[inline(always)]
    pub(crate) fn row(&self, id: u32) -> &[u8] {
        let dim = self.dim();
        let start = id as usize * dim;
        &self.bytes[start..start + dim]
    }
}

impl Codes {
    /// Replaces the codes with those of every row of `vectors` (of this table's
    /// dimension) under the ranges already held: what decoding a graph stored without its
    /// codes does. [`Codes::extend`] computes them, the same `f32` arithmetic as when the
    /// graph was built, so the same rows give the same bytes.
    pub(crate) fn recompute(&mut self, vectors: VectorSet<'_>) {
        self.bytes = Vec::with_capacity(vectors.len() * self.dim());
        self.extend(vectors);
    }
}

/// A query prepared against a [`Codes`] table: `score(code)` approximates the exact score
/// of the coded vector (up to a per-query constant for L2, which does not change order).
pub(crate) struct QuantQuery<'a> {
    /// Dot: `query * scale`; L2: `query - offset`.
    weights: Vec<f32>,
    /// L2 only: the scales.
    scale: &'a [f32],
    /// Dot: `query · offset`.
    bias: f32,
    l2: bool,
    kernel: Kernel,
}

type Kernel = fn(&QuantQuery<'_>, &[u8]) -> f32;

impl<'a> QuantQuery<'a> {
    pub(crate) fn new(codes: &'a Codes, metric: Metric, query: &[f32]) -> Self {
        let l2 = metric == Metric::L2;
        let (weights, bias) = if l2 {
            (
                query
                    .iter()
                    .zip(&codes.offset)
                    .map(|(q, o)| q - o)
                    .collect(),
                0.0,
            )
        } else {
            let weights = query.iter().zip(&codes.scale).map(|(q, s)| q * s).collect();
            (
                weights,
                query.iter().zip(&codes.offset).map(|(q, o)| q * o).sum(),
            )
        };
        QuantQuery {
            weights,
            scale: &codes.scale,
            bias,
            l2,
            kernel: kernel(),
        }
    }

    /// Approximate score of a code, higher is better; never NaN.
    #[inline(always)]
    pub(crate) fn score(&self, code: &[u8]) -> f32 {
        let s = (self.kernel)(self, code);
        if s.is_nan() {
            f32::NEG_INFINITY
        } else {
            s
        }
    }
}

fn kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        return avx512::score;
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        return avx2::score;
    }
    scalar_score
}

/// Dimension `i`'s share of the score (before the L2 sign and the dot bias).
#[inline(always)]
fn term(q: &QuantQuery<'_>, i: usize, code: u8) -> f32 {
    let c = f32::from(code);
    if q.l2 {
        let d = q.weights[i] - q.scale[i] * c;
        d * d
    } else {
        q.weights[i] * c
    }
}

fn scalar_score(q: &QuantQuery<'_>, code: &[u8]) -> f32 {
    const LANES: usize = 8;
    let mut acc = [0.0f32; LANES];
    let len = code.len().min(q.weights.len()).min(q.scale.len());
    let chunks = len / LANES * LANES;
    let term = |i: usize| term(q, i, code[i]);
    for base in (0..chunks).step_by(LANES) {
        for (lane, a) in acc.iter_mut().enumerate() {
            *a += term(base + lane);
        }
    }
    let sum = acc.iter().sum::<f32>() + (chunks..len).map(term).sum::<f32>();
    if q.l2 {
        -sum
    } else {
        sum + q.bias
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::QuantQuery;
    use crate::index::distance::avx2::hsum;

    pub(super) fn score(q: &QuantQuery<'_>, code: &[u8]) -> f32 {
        // SAFETY: installed by `kernel()` only after AVX2 and FMA were detected.
        unsafe { score_impl(q, code) }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn score_impl(q: &QuantQuery<'_>, code: &[u8]) -> f32 {
        let len = code.len().min(q.weights.len()).min(q.scale.len());
        let (pc, pw, ps) = (code.as_ptr(), q.weights.as_ptr(), q.scale.as_ptr());
        let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        // SAFETY (loads below): `i + 16 <= len` (or `i + 8 <= len`) is checked first, and
        // `len` bounds all three slices; `_mm_loadl_epi64` reads 8 bytes.
        while i + 16 <= len {
            let (c0, c1) = unsafe { (widen(pc.add(i)), widen(pc.add(i + 8))) };
            let (w0, w1) = unsafe { (_mm256_loadu_ps(pw.add(i)), _mm256_loadu_ps(pw.add(i + 8))) };
            if q.l2 {
                let (s0, s1) =
                    unsafe { (_mm256_loadu_ps(ps.add(i)), _mm256_loadu_ps(ps.add(i + 8))) };
                let (d0, d1) = (_mm256_fnmadd_ps(s0, c0, w0), _mm256_fnmadd_ps(s1, c1, w1));
                acc0 = _mm256_fmadd_ps(d0, d0, acc0);
                acc1 = _mm256_fmadd_ps(d1, d1, acc1);
            } else {
                acc0 = _mm256_fmadd_ps(w0, c0, acc0);
                acc1 = _mm256_fmadd_ps(w1, c1, acc1);
            }
            i += 16;
        }
        if i + 8 <= len {
            let c = unsafe { widen(pc.add(i)) };
            let w = unsafe { _mm256_loadu_ps(pw.add(i)) };
            if q.l2 {
                let d = _mm256_fnmadd_ps(unsafe { _mm256_loadu_ps(ps.add(i)) }, c, w);
                acc0 = _mm256_fmadd_ps(d, d, acc0);
            } else {
                acc0 = _mm256_fmadd_ps(w, c, acc0);
            }
            i += 8;
        }
        let mut sum = hsum(_mm256_add_ps(acc0, acc1));
        for (j, &c) in code.iter().enumerate().take(len).skip(i) {
            sum += super::term(q, j, c);
        }
        if q.l2 {
            -sum
        } else {
            sum + q.bias
        }
    }

    /// Eight bytes at `p` as eight f32.
    ///
    /// # Safety
    /// `p..p + 8` must be readable; the CPU must support AVX2.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn widen(p: *const u8) -> __m256 {
        // SAFETY: the caller guarantees 8 readable bytes; the load is unaligned.
        let bytes = unsafe { _mm_loadl_epi64(p.cast::<__m128i>()) };
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes))
    }
}

/// The AVX2 kernel at sixteen lanes (see `distance::avx512`).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::QuantQuery;

    pub(super) fn score(q: &QuantQuery<'_>, code: &[u8]) -> f32 {
        // SAFETY: installed by `kernel()` only after AVX-512F was detected.
        unsafe { score_impl(q, code) }
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn score_impl(q: &QuantQuery<'_>, code: &[u8]) -> f32 {
        let len = code.len().min(q.weights.len()).min(q.scale.len());
        let (pc, pw, ps) = (code.as_ptr(), q.weights.as_ptr(), q.scale.as_ptr());
        let (mut acc0, mut acc1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut i = 0;
        // SAFETY (loads below): `i + 32 <= len` (or `i + 16 <= len`) is checked first, and
        // `len` bounds all three slices; `_mm_loadu_si128` reads 16 bytes.
        let step = |i: usize, acc: &mut __m512| {
            let c = unsafe { widen(pc.add(i)) };
            let w = unsafe { _mm512_loadu_ps(pw.add(i)) };
            *acc = if q.l2 {
                let d = _mm512_fnmadd_ps(unsafe { _mm512_loadu_ps(ps.add(i)) }, c, w);
                _mm512_fmadd_ps(d, d, *acc)
            } else {
                _mm512_fmadd_ps(w, c, *acc)
            };
        };
        while i + 32 <= len {
            step(i, &mut acc0);
            step(i + 16, &mut acc1);
            i += 32;
        }
        if i + 16 <= len {
            step(i, &mut acc0);
            i += 16;
        }
        let mut sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
        for (j, &c) in code.iter().enumerate().take(len).skip(i) {
            sum += super::term(q, j, c);
        }
        if q.l2 {
            -sum
        } else {
            sum + q.bias
        }
    }

    /// Sixteen bytes at `p` as sixteen f32.
    ///
    /// # Safety
    /// `p..p + 16` must be readable; the CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn widen(p: *const u8) -> __m512 {
        // SAFETY: the caller guarantees 16 readable bytes; the load is unaligned.
        let bytes = unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_scores_track_exact_scores() {
        let dim = 37;
        let data: Vec<f32> = (0..50 * dim)
            .map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0)
            .collect();
        let vectors = VectorSet::new(&data, dim, Metric::L2).unwrap();
        let mut codes = Codes::fit(vectors);
        codes.extend(vectors);
        let query: Vec<f32> = (0..dim).map(|i| i as f32 / 10.0 - 1.0).collect();
        for metric in [Metric::L2, Metric::Dot] {
            let prepared = QuantQuery::new(&codes, metric, &query);
            for id in 0..50 {
                let row = vectors.row(id);
                let exact = crate::index::distance::score(metric, &query, row);
                let approx = prepared.score(codes.row(id));
                // Each coordinate is off by at most half a step: bound the score error.
                let bound: f32 = (0..dim)
                    .map(|i| {
                        let half = codes.scale[i] / 2.0;
                        let l2 = 2.0 * (query[i] - row[i]).abs() + half;
                        half * l2.max(query[i].abs())
                    })
                    .sum();
                assert!(
                    (exact - approx).abs() <= bound + 1e-3,
                    "{metric:?} {exact} {approx} {bound}"
                );
                let mut kernels: Vec<Kernel> = vec![scalar_score];
                #[cfg(target_arch = "x86_64")]
                {
                    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                        kernels.push(avx2::score);
                    }
                    if is_x86_feature_detected!("avx512f") {
                        kernels.push(avx512::score);
                    }
                }
                for kernel in kernels {
                    assert!(
                        (kernel(&prepared, codes.row(id)) - approx).abs()
                            < 1e-3 * approx.abs().max(1.0)
                    );
                }
            }
        }
    }
}
