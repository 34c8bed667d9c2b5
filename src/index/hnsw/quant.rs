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

    /// Codes whose rows and norms were computed before (a mapped segment's): kept as
    /// given. `norms` must hold every row's for L2 and be empty otherwise.
    pub(crate) fn with_norms(
        metric: Metric,
        offset: Vec<f32>,
        scale: Vec<f32>,
        bytes: pages::LineBytes,
        norms: Vec<f32>,
    ) -> Codes {
        Codes {
            offset,
            scale,
            bytes,
            norms,
            l2: metric == Metric::L2,
        }
    }

    /// The L2 norms of the coded rows (empty for the other metrics).
    pub(crate) fn norms(&self) -> &[f32] {
        &self.norms
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

    /// The codes of rows `ids` (each coded), in that order: their bytes interleaved for
    /// [`QuantQuery::dots_interleaved`], and a table of no rows with these ranges and the
    /// rows' norms, which a [`QuantQuery`] over the interleaved rows is prepared against.
    pub(crate) fn gather(&self, ids: &[u32]) -> (Codes, Interleaved) {
        let ranges = Codes {
            offset: self.offset.clone(),
            scale: self.scale.clone(),
            bytes: pages::LineBytes::default(),
            norms: if self.l2 {
                ids.iter().map(|&id| self.norms[id as usize]).collect()
            } else {
                Vec::new()
            },
            l2: self.l2,
        };
        (
            ranges,
            Interleaved::new(ids.iter().map(|&id| self.row(id)), ids.len(), self.dim()),
        )
    }

    /// Rows coded.
    pub(crate) fn rows(&self) -> u32 {
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

/// Codes of a few rows laid out for [`QuantQuery::dots_interleaved`]: blocks of
/// [`Interleaved::ROWS`] rows, each the rows' first four bytes, then their next four, and
/// so on (row `r`, byte `d` at `((r / 16 * groups + d / 4) * 16 + r % 16) * 4 + d % 4`,
/// zeros past the last row and dimension). One 64-byte load then holds four dimensions of
/// sixteen rows, and `vpdpbusd` against four weights broadcast sums them per row, so a
/// block's sixteen products come out in one register, with no per-row horizontal sum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interleaved {
    bytes: Vec<u8>,
    rows: usize,
    /// Groups of four dimensions per row.
    groups: usize,
}

impl Interleaved {
    const ROWS: usize = 16;

    fn new<'r>(rows: impl Iterator<Item = &'r [u8]>, len: usize, dim: usize) -> Interleaved {
        let groups = dim.div_ceil(4);
        let mut bytes = vec![0u8; len.div_ceil(Self::ROWS) * groups * Self::ROWS * 4];
        for (r, row) in rows.enumerate() {
            let block = r / Self::ROWS * groups * Self::ROWS * 4;
            for (d, &byte) in row.iter().enumerate() {
                bytes[block + (d / 4 * Self::ROWS + r % Self::ROWS) * 4 + d % 4] = byte;
            }
        }
        Interleaved {
            bytes,
            rows: len,
            groups,
        }
    }

    /// Rows held.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// The bytes of one block.
    fn blocks(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.groups * Self::ROWS * 4)
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
    /// Distances measured before (a mapped segment's), and the largest row norm.
    pub(crate) fn from_parts(dist: Vec<f32>, largest: f32) -> Residuals {
        Residuals { dist, largest }
    }

    /// Each row's distance from its code, and the largest row norm.
    pub(crate) fn parts(&self) -> (&[f32], f32) {
        (&self.dist, self.largest)
    }

    /// Rows measured.
    pub(crate) fn len(&self) -> usize {
        self.dist.len()
    }

    /// The distances of rows `ids`, in that order (a row not measured stays unknown).
    pub(crate) fn gather(&self, ids: &[u32]) -> Residuals {
        Residuals {
            dist: ids
                .iter()
                .map(|&id| self.dist.get(id as usize).copied().unwrap_or(f32::INFINITY))
                .collect(),
            largest: self.largest,
        }
    }

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
            let (apart, norm) = measure(row, codes.row(id), &codes.offset, &codes.scale);
            // Rounded up, so the f32 is never below the distance (NaN stays NaN).
            let up = |v: f64| (v.sqrt() * (1.0 + 1e-6)) as f32;
            self.dist.push(up(apart));
            self.largest = self.largest.max(up(norm));
        }
    }
}

/// `(|x - x̂|², |x|²)` in f64 for row `x` with code `code` (`x̂` what it decodes to), in
/// eight interleaved sums: a store's open measures every row, and one running sum would
/// wait on the previous add at every dimension.
fn measure(row: &[f32], code: &[u8], offset: &[f32], scale: &[f32]) -> (f64, f64) {
    const LANES: usize = 8;
    let terms = |x: f32, c: u8, o: f32, s: f32| {
        let x = f64::from(x);
        let decoded = f64::from(o) + f64::from(s) * f64::from(c);
        ((x - decoded) * (x - decoded), x * x)
    };
    let dims = row.len().min(code.len()).min(offset.len()).min(scale.len());
    let whole = dims - dims % LANES;
    let (mut apart, mut norm) = ([0.0f64; LANES], [0.0f64; LANES]);
    let chunks = row[..whole]
        .chunks_exact(LANES)
        .zip(code[..whole].chunks_exact(LANES))
        .zip(offset[..whole].chunks_exact(LANES))
        .zip(scale[..whole].chunks_exact(LANES));
    for (((x, c), o), s) in chunks {
        for lane in 0..LANES {
            let (a, n) = terms(x[lane], c[lane], o[lane], s[lane]);
            apart[lane] += a;
            norm[lane] += n;
        }
    }
    let (mut apart, mut norm) = (apart.iter().sum::<f64>(), norm.iter().sum::<f64>());
    for i in whole..dims {
        let (a, n) = terms(row[i], code[i], offset[i], scale[i]);
        apart += a;
        norm += n;
    }
    (apart, norm)
}

/// A query prepared against a [`Codes`] table: `score(id)` approximates the exact score
/// of row `id` (up to a per-query constant for L2, which does not change order).
pub(crate) struct QuantQuery<'a> {
    codes: &'a Codes,
    /// The code weights (dot: `query * scale`; L2: `(query - offset) * scale`) divided by
    /// `step` and rounded.
    weights: Vec<i16>,
    /// The weights split for the VNNI scan ([`split`]): high bytes, then low bytes, each
    /// padded with zeros to whole 64-byte blocks; empty without VNNI.
    split: Vec<i8>,
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
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx2") {
            // SAFETY: the features were just detected.
            return unsafe { Self::new_avx512(codes, query) };
        }
        Self::prepared(codes, query)
    }

    /// [`QuantQuery::new`] compiled for AVX-512: its loops over the dimensions (a few
    /// hundred nanoseconds, a query's fixed cost on a small visible set) vectorise 16
    /// wide, where the x86-64 baseline has 4.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn new_avx512(codes: &'a Codes, query: &[f32]) -> Self {
        Self::prepared(codes, query)
    }

    #[inline(always)]
    fn prepared(codes: &'a Codes, query: &[f32]) -> Self {
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
        let largest = real.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        let step = if largest > 0.0 {
            largest / weight_limit(real.len())
        } else {
            0.0
        };
        let inverse = if step > 0.0 { 1.0 / step } else { 0.0 };
        // Rounded half away from zero by truncation (`round` is a libm call per value);
        // `as` saturates and maps NaN to 0, and |w / step| is at most the limit plus a
        // rounding, which truncation keeps within it. Any rounding is correct: `rounding`
        // below measures the weights as they are.
        let weights: Vec<i16> = real
            .iter()
            .map(|&w| {
                let x = w * inverse;
                (x + 0.5f32.copysign(x)) as i16
            })
            .collect();
        let sums = Sums::of(query, codes, &weights, step);
        // Against the weights in exact arithmetic: each code is at most 255, and L2
        // doubles the dot product.
        let rounding = (if l2 { 2.0 } else { 1.0 } * 255.0 * sums.off) as f32;
        QuantQuery {
            codes,
            step: if l2 { 2.0 * step } else { step },
            bias: sums.bias as f32,
            rounding,
            reach: (if l2 { sums.reach } else { sums.reach.sqrt() }) as f32,
            split: split_weights(&weights),
            weights,
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
    #[cfg(test)]
    pub(crate) fn bounds(&self, id: u32, residuals: &Residuals) -> (f32, f32) {
        if id >= self.codes.rows() {
            return (0.0, f32::INFINITY);
        }
        self.bounds_of(self.dot(id), id, residuals)
    }

    /// The integer code product of each row of `ids` (all coded), in order: the first
    /// half of [`QuantQuery::bounds`], reading rows a few ahead of the one scored.
    pub(crate) fn dots(&self, ids: &[u32], out: &mut Vec<i32>) {
        /// Rows fetched ahead: sparse visible ids defeat the hardware prefetcher.
        const AHEAD: usize = 8;
        out.reserve(ids.len());
        ids.iter()
            .take(AHEAD)
            .for_each(|&id| self.codes.prefetch(id));
        #[cfg(target_arch = "x86_64")]
        if !self.split.is_empty() {
            // SAFETY: `split` is filled only once VNNI was detected (`split_weights`).
            unsafe { vnni::dots(self.codes, &self.split, ids, AHEAD, out) };
            return;
        }
        for (i, &id) in ids.iter().enumerate() {
            if let Some(&next) = ids.get(i + AHEAD) {
                self.codes.prefetch(next);
            }
            out.push(self.dot(id));
        }
    }

    /// [`QuantQuery::dots`] of every row of `set`, in order.
    pub(crate) fn dots_interleaved(&self, set: &Interleaved, out: &mut Vec<i32>) {
        out.reserve(set.blocks().len() * Interleaved::ROWS);
        #[cfg(target_arch = "x86_64")]
        if !self.split.is_empty() {
            // SAFETY: `split` is filled only once VNNI was detected (`split_weights`).
            unsafe { vnni::dots_interleaved(&self.split, set, out) };
            out.truncate(set.len());
            return;
        }
        for block in set.blocks() {
            let mut sums = [0i32; Interleaved::ROWS];
            for (group, bytes) in block.chunks_exact(Interleaved::ROWS * 4).enumerate() {
                for (sum, code) in sums.iter_mut().zip(bytes.chunks_exact(4)) {
                    let weights = self.weights.iter().skip(group * 4);
                    *sum += weights
                        .zip(code)
                        .map(|(&w, &c)| i32::from(w) * i32::from(c))
                        .sum::<i32>();
                }
            }
            out.extend_from_slice(&sums);
        }
        out.truncate(set.len());
    }

    /// The integer product of the weights and row `id`'s code.
    #[inline(always)]
    fn dot(&self, id: u32) -> i32 {
        (self.kernel)(&self.weights, self.codes.row(id))
    }

    /// [`QuantQuery::bounds`] of row `id` (coded) from its integer product `dot`.
    #[inline(always)]
    pub(crate) fn bounds_of(&self, dot: i32, id: u32, residuals: &Residuals) -> (f32, f32) {
        let Some(&e) = residuals.dist.get(id as usize) else {
            return (0.0, f32::INFINITY);
        };
        let norm = self.codes.norms.get(id as usize).copied().unwrap_or(0.0);
        let (estimate, error) = self.bracket(dot, e, norm, residuals.largest);
        if estimate.is_finite() && error.is_finite() {
            (estimate, error)
        } else {
            (0.0, f32::INFINITY)
        }
    }

    /// The lower and upper bounds of every row of a gathered set, in order: `dots` its
    /// products, `residuals` its distances and the codes prepared against its norms
    /// ([`Codes::gather`]); `-inf` and `inf` where nothing is known. The bounds of
    /// [`QuantQuery::bounds_of`] in one branch-free loop, which vectorises.
    pub(crate) fn bounds_all(
        &self,
        dots: &[i32],
        residuals: &Residuals,
        lower: &mut Vec<f32>,
        upper: &mut Vec<f32>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx2") {
            // SAFETY: the features were just detected.
            return unsafe { self.bounds_all_avx512(dots, residuals, lower, upper) };
        }
        self.bounds_all_portable(dots, residuals, lower, upper);
    }

    /// [`QuantQuery::bounds_all`] compiled for AVX-512 (16 rows an instruction).
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn bounds_all_avx512(
        &self,
        dots: &[i32],
        residuals: &Residuals,
        lower: &mut Vec<f32>,
        upper: &mut Vec<f32>,
    ) {
        self.bounds_all_portable(dots, residuals, lower, upper);
    }

    #[inline(always)]
    fn bounds_all_portable(
        &self,
        dots: &[i32],
        residuals: &Residuals,
        lower: &mut Vec<f32>,
        upper: &mut Vec<f32>,
    ) {
        let n = dots.len();
        lower.clear();
        lower.resize(n, f32::NEG_INFINITY);
        upper.clear();
        upper.resize(n, f32::INFINITY);
        let norms = if self.codes.l2 {
            self.codes.norms.get(..n)
        } else {
            Some(&[][..])
        };
        // Rows not measured or without a norm (never for codes from `Codes::gather`)
        // stay unknown.
        let (Some(dist), Some(norms)) = (residuals.dist.get(..n), norms) else {
            return;
        };
        let (lower, upper) = (&mut lower[..n], &mut upper[..n]);
        let bound =
            |i: usize, (estimate, error): (f32, f32), lower: &mut [f32], upper: &mut [f32]| {
                // Finite (NaN compares false), as a select rather than a branch.
                let known = estimate.abs() < f32::INFINITY && error.abs() < f32::INFINITY;
                lower[i] = if known {
                    estimate - error
                } else {
                    f32::NEG_INFINITY
                };
                upper[i] = if known {
                    estimate + error
                } else {
                    f32::INFINITY
                };
            };
        // One loop per metric: the metric's branch out of the loop body.
        if self.codes.l2 {
            for i in 0..n {
                let bracket = self.bracket_l2(dots[i], dist[i], norms[i]);
                bound(i, bracket, lower, upper);
            }
        } else {
            for i in 0..n {
                let bracket = self.bracket_dot(dots[i], dist[i], residuals.largest);
                bound(i, bracket, lower, upper);
            }
        }
    }

    /// `(estimate, error)` of a row from its product `dot`, its distance `e` from its
    /// code, its code's norm (L2) and the largest row norm (see [`QuantQuery::bounds`]);
    /// non-finite when nothing is known.
    #[inline(always)]
    fn bracket(&self, dot: i32, e: f32, norm: f32, largest: f32) -> (f32, f32) {
        if self.codes.l2 {
            self.bracket_l2(dot, e, norm)
        } else {
            self.bracket_dot(dot, e, largest)
        }
    }

    /// [`QuantQuery::bracket`] for L2.
    #[inline(always)]
    fn bracket_l2(&self, dot: i32, e: f32, norm: f32) -> (f32, f32) {
        let (ops, kernel) = self.roundings();
        let dot = dot as f32 * self.step;
        let estimate = dot - norm - self.reach;
        // `|q - x̂|²`, bounded above.
        let apart = (self.rounding - estimate).max(0.0).sqrt();
        let far = apart + e;
        let error = self.rounding
            + 2.0 * apart * e
            + e * e
            + ops * (dot.abs() + norm + self.reach)
            + kernel * far * far;
        // Summing the error rounded it too.
        (estimate, error * (1.0 + ops))
    }

    /// [`QuantQuery::bracket`] for the dot product (and cosine).
    #[inline(always)]
    fn bracket_dot(&self, dot: i32, e: f32, largest: f32) -> (f32, f32) {
        let (ops, kernel) = self.roundings();
        let dot = dot as f32 * self.step;
        let estimate = dot + self.bias;
        let error = self.rounding
            + self.reach * e
            + ops * (dot.abs() + self.bias.abs())
            + kernel * self.reach * largest;
        (estimate, error * (1.0 + ops))
    }

    /// The relative rounding of a few f32 operations, and of the exact kernel's sum.
    #[inline(always)]
    fn roundings(&self) -> (f32, f32) {
        let ops = 4.0 * f32::EPSILON;
        (ops, 2.0 * (self.weights.len() as f32 + 2.0) * f32::EPSILON)
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

/// The sums a [`QuantQuery`] needs over the dimensions, in f64 (the bounds count on each
/// within one f32 rounding), with `o` the origin (the codes' offset for L2, else 0):
struct Sums {
    /// Dot: `Σ q · offset`.
    bias: f64,
    /// `Σ |step · w - (q - o) · scale|`: how far the integer weights are from exact.
    off: f64,
    /// `Σ (q - o)²`.
    reach: f64,
}

impl Sums {
    /// In eight interleaved sums: independent adds that vectorise, where one running sum
    /// waits on the previous add at every dimension.
    #[inline(always)]
    fn of(query: &[f32], codes: &Codes, weights: &[i16], step: f32) -> Sums {
        const LANES: usize = 8;
        let (l2, step) = (codes.l2, f64::from(step));
        let terms = |q: f32, o: f32, s: f32, w: i16| {
            let (q, o) = (f64::from(q), f64::from(o));
            let apart = if l2 { q - o } else { q };
            let bias = if l2 { 0.0 } else { q * o };
            let off = (step * f64::from(w) - apart * f64::from(s)).abs();
            (bias, off, apart * apart)
        };
        let mut lanes = [[0.0f64; LANES]; 3];
        let dims = query
            .len()
            .min(codes.offset.len())
            .min(codes.scale.len())
            .min(weights.len());
        let whole = dims - dims % LANES;
        let chunks = query[..whole]
            .chunks_exact(LANES)
            .zip(codes.offset[..whole].chunks_exact(LANES))
            .zip(codes.scale[..whole].chunks_exact(LANES))
            .zip(weights[..whole].chunks_exact(LANES));
        for (((q, o), s), w) in chunks {
            for lane in 0..LANES {
                let (bias, off, reach) = terms(q[lane], o[lane], s[lane], w[lane]);
                lanes[0][lane] += bias;
                lanes[1][lane] += off;
                lanes[2][lane] += reach;
            }
        }
        let mut sums = lanes.map(|l| l.iter().sum::<f64>());
        for i in whole..dims {
            let (bias, off, reach) = terms(query[i], codes.offset[i], codes.scale[i], weights[i]);
            sums[0] += bias;
            sums[1] += off;
            sums[2] += reach;
        }
        Sums {
            bias: sums[0],
            off: sums[1],
            reach: sums[2],
        }
    }
}

/// Largest integer weight for `dim` dimensions: `dim * 255 * limit` must fit an `i32`, so
/// no partial sum of any kernel overflows (16,319 up to 516 dimensions, 13,779 at 768),
/// and each weight must split into the two signed bytes of the VNNI scan
/// ([`SPLIT_LIMIT`]).
fn weight_limit(dim: usize) -> f32 {
    let limit = i32::MAX as usize / (255 * dim.max(1));
    limit.clamp(1, SPLIT_LIMIT as usize) as f32
}

/// Weights up to this magnitude are `128 h + l` with `h` in `-128..=127` and `l` in
/// `-64..=63`.
const SPLIT_LIMIT: i16 = 127 * 128 + 63;

/// `w` as `(h, l)` with `w = 128 h + l`, `l` in `-64..=63` (`|w| <=` [`SPLIT_LIMIT`]).
fn split(w: i16) -> (i8, i8) {
    let w = i32::from(w);
    let high = (w + 64) >> 7;
    // In range for every weight within the limit; `as` only drops the zero high bits.
    (high as i8, (w - 128 * high) as i8)
}

/// The weights split for the VNNI scan (see [`QuantQuery::split`]), when the CPU has it.
#[inline(always)]
fn split_weights(weights: &[i16]) -> Vec<i8> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni") {
        let padded = weights.len().div_ceil(64) * 64;
        let mut split = vec![0i8; 2 * padded];
        for (i, &w) in weights.iter().enumerate() {
            (split[i], split[padded + i]) = self::split(w);
        }
        return split;
    }
    Vec::new()
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

/// The scan's products on AVX-512 VNNI: `vpdpbusd` multiplies 64 code bytes by 64 signed
/// weight bytes and sums them in fours into 16 lanes, so each weight is split into two
/// bytes (`w = 128 h + l`) and a row costs two instructions per 64 dimensions, where
/// widening the codes to 16 bits for `vpmaddwd` costs three per 32. Same integers.
#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::{Codes, Interleaved};

    /// [`super::QuantQuery::dots_interleaved`]: per block, per group of four dimensions,
    /// one load and two `vpdpbusd` (high and low weight bytes, broadcast), in two chains.
    ///
    /// # Safety
    /// As for [`dots`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn dots_interleaved(split: &[i8], set: &Interleaved, out: &mut Vec<i32>) {
        let padded = split.len() / 2;
        assert!(
            set.groups * 4 <= padded,
            "split weights of another dimension"
        );
        let (high, low) = split.split_at(padded);
        let word = |bytes: &[i8], group: usize| {
            let b = &bytes[group * 4..group * 4 + 4];
            i32::from_le_bytes([b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8])
        };
        let weights: Vec<(i32, i32)> = (0..set.groups)
            .map(|g| (word(high, g), word(low, g)))
            .collect();
        for block in set.blocks() {
            // Four chains of high and low sums: a `vpdpbusd` waits on the one before in
            // its chain.
            let mut acc = [_mm512_setzero_si512(); 8];
            for (group, &(h, l)) in weights.iter().enumerate() {
                // SAFETY: a block holds `groups` loads of 64 bytes.
                let codes = unsafe { _mm512_loadu_si512(block.as_ptr().add(group * 64).cast()) };
                let chain = 2 * (group % 4);
                acc[chain] = _mm512_dpbusd_epi32(acc[chain], codes, _mm512_set1_epi32(h));
                acc[chain + 1] = _mm512_dpbusd_epi32(acc[chain + 1], codes, _mm512_set1_epi32(l));
            }
            let sum = |a: usize, b: usize| _mm512_add_epi32(acc[a], acc[b]);
            let high = _mm512_add_epi32(sum(0, 2), sum(4, 6));
            let low = _mm512_add_epi32(sum(1, 3), sum(5, 7));
            let sums = _mm512_add_epi32(_mm512_slli_epi32::<7>(high), low);
            let mut lanes = [0i32; Interleaved::ROWS];
            // SAFETY: 16 lanes into 16 i32.
            unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), sums) };
            out.extend_from_slice(&lanes);
        }
    }

    /// Appends the product of every row of `ids` with the split weights, fetching rows
    /// `ahead` of the one scored (the first `ahead` already requested).
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VNNI, and `split` must hold
    /// the high then the low bytes of `codes.dim()` weights, each padded to 64-byte blocks.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn dots(
        codes: &Codes,
        split: &[i8],
        ids: &[u32],
        ahead: usize,
        out: &mut Vec<i32>,
    ) {
        let dim = codes.dim();
        let padded = dim.div_ceil(64) * 64;
        assert_eq!(
            split.len(),
            2 * padded,
            "split weights of another dimension"
        );
        let (high, low) = split.split_at(padded);
        let tail = dim % 64;
        let tail_mask: u64 = if tail == 0 { u64::MAX } else { (1 << tail) - 1 };
        for (i, &id) in ids.iter().enumerate() {
            if let Some(&next) = ids.get(i + ahead) {
                codes.prefetch(next);
            }
            let row = codes.row(id);
            let (mut acc_high, mut acc_low) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            for block in 0..padded / 64 {
                let at = block * 64;
                // The last block of a row not a multiple of 64 long reads only its bytes.
                let mask = if at + 64 <= dim { u64::MAX } else { tail_mask };
                // SAFETY: the masked load reads `row[at..min(at + 64, dim)]` only; the
                // weights are padded to whole blocks.
                let (c, h, l) = unsafe {
                    (
                        _mm512_maskz_loadu_epi8(mask, row.as_ptr().add(at).cast()),
                        _mm512_loadu_si512(high.as_ptr().add(at).cast()),
                        _mm512_loadu_si512(low.as_ptr().add(at).cast()),
                    )
                };
                acc_high = _mm512_dpbusd_epi32(acc_high, c, h);
                acc_low = _mm512_dpbusd_epi32(acc_low, c, l);
            }
            // Each lane is a partial sum within the weight limit's bound: no overflow.
            let sum = _mm512_add_epi32(_mm512_slli_epi32::<7>(acc_high), acc_low);
            out.push(_mm512_reduce_add_epi32(sum));
        }
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

/// Test rows: `n` rows of `dim` pseudo-random values in [-5, 5), and their codes.
#[cfg(test)]
pub(crate) fn coded_rows(n: usize, dim: usize, metric: Metric) -> (Vec<f32>, Codes) {
    let rows: Vec<f32> = (0..n * dim)
        .map(|i| ((i * 7919) % 1013) as f32 / 101.0 - 5.0)
        .collect();
    let vectors = VectorSet::trusted(&rows, dim, metric);
    let mut codes = Codes::fit(vectors);
    codes.extend(vectors);
    (rows, codes)
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
    fn split_weights_recombine() {
        for w in -SPLIT_LIMIT..=SPLIT_LIMIT {
            let (high, low) = split(w);
            assert!((-64..=63).contains(&low), "{w}");
            assert_eq!(128 * i32::from(high) + i32::from(low), i32::from(w));
        }
    }

    #[test]
    fn scan_products_equal_the_kernel_at_every_length() {
        for dim in (1..200usize).chain([384, 767, 768]) {
            let (_, mut codes) = coded_rows(5, dim, Metric::Dot);
            // Extreme codes too: a row of 255s and one of 0s.
            codes.push_rows(&vec![1e9; dim]);
            codes.push_rows(&vec![-1e9; dim]);
            let query: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin()).collect();
            let prepared = QuantQuery::new(&codes, &query);
            let ids = [6, 0, 3, 5, 1, 4, 2];
            let mut got = Vec::new();
            prepared.dots(&ids, &mut got);
            let want: Vec<i32> = ids
                .iter()
                .map(|&id| scalar_dot(&prepared.weights, codes.row(id)))
                .collect();
            assert_eq!(got, want, "dim {dim}");
        }
    }

    #[test]
    fn interleaved_products_equal_the_kernel() {
        for (dim, rows) in [
            (1usize, 1usize),
            (3, 17),
            (4, 16),
            (37, 40),
            (128, 33),
            (384, 5),
        ] {
            let (_, mut codes) = coded_rows(rows, dim, Metric::L2);
            codes.push_rows(&vec![1e9; dim]);
            let ids: Vec<u32> = (0..=rows as u32).rev().step_by(2).collect();
            let (ranges, set) = codes.gather(&ids);
            let query: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin() * 4.0).collect();
            let (prepared, on_ranges) = (
                QuantQuery::new(&codes, &query),
                QuantQuery::new(&ranges, &query),
            );
            assert_eq!(prepared.weights, on_ranges.weights);
            let mut got = Vec::new();
            on_ranges.dots_interleaved(&set, &mut got);
            let mut want = Vec::new();
            prepared.dots(&ids, &mut want);
            assert_eq!(got, want, "dim {dim}, {rows} rows");
            let norms: Vec<f32> = ids.iter().map(|&id| codes.norms[id as usize]).collect();
            assert_eq!(ranges.norms, norms);
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
