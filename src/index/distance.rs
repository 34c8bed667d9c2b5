//! Distance kernels: dot product and squared L2, with runtime SIMD dispatch.
//!
//! On x86_64 with AVX2 and FMA the kernels use 256-bit intrinsics; elsewhere (and on
//! aarch64) a portable version with eight independent accumulators, which the compiler
//! auto-vectorises. Hot loops resolve the kernel once into a [`Scorer`] instead of
//! re-checking CPU features per call.
//!
//! Both inputs are compared over their common length; callers validate dimensions.

use super::metric::Metric;

/// Dot product of `a` and `b`.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    (Kernels::detect().dot)(a, b)
}

/// Squared Euclidean distance between `a` and `b`.
#[inline]
pub fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    (Kernels::detect().l2_sq)(a, b)
}

/// Similarity of `a` and `b` under `metric`, higher is better: the dot product for
/// [`Metric::Cosine`] (vectors are normalised on the way in) and [`Metric::Dot`], the
/// negated squared distance for [`Metric::L2`]. Never NaN (see [`Scorer::score`]).
#[inline]
pub fn score(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    Scorer::new(metric).score(a, b)
}

/// Scales `v` to unit L2 norm; `false` (and `v` untouched) when it has no direction (zero,
/// or not finite).
pub fn normalize(v: &mut [f32]) -> bool {
    let norm = dot(v, v).sqrt();
    if scalable(norm) {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
        true
    } else {
        false
    }
}

/// Whether [`normalize`] can scale `v` to unit length.
pub fn has_direction(v: &[f32]) -> bool {
    scalable(dot(v, v).sqrt())
}

fn scalable(norm: f32) -> bool {
    norm > 0.0 && norm.is_finite()
}

/// Hints the CPU to fetch every cache line `data` touches: random rows defeat the hardware
/// prefetcher, and requesting several rows at once overlaps their memory latencies. Rows
/// rarely start on a line (a large allocation starts 16 bytes into its page), so a
/// 128-byte row spans three lines, not two; stepping 64 bytes from the row's start missed
/// the third, and the kernel stalled on it (68% of its samples at 128 dimensions).
#[inline(always)]
pub(crate) fn prefetch_lines<T>(data: &[T]) {
    const LINE: usize = 64;
    let start = data.as_ptr() as usize;
    let end = start + std::mem::size_of_val(data);
    let mut line = start & !(LINE - 1);
    while line < end {
        prefetch(line as *const u8);
        line += LINE;
    }
}

#[inline(always)]
fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint and never faults, whatever the address; SSE is part
    // of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch(ptr.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// A similarity function resolved once for a metric and the running CPU.
#[derive(Clone, Copy)]
pub struct Scorer {
    kernel: fn(&[f32], &[f32]) -> f32,
}

impl Scorer {
    /// The fastest kernel for `metric` on this CPU.
    pub fn new(metric: Metric) -> Self {
        let kernels = Kernels::detect();
        let kernel = match metric {
            Metric::Cosine | Metric::Dot => kernels.dot,
            Metric::L2 => kernels.neg_l2_sq,
        };
        Scorer { kernel }
    }

    /// The similarity of `a` and `b`, higher is better. NaN (from NaN or infinite inputs)
    /// comes out as `-inf`, so every score is ordered.
    #[inline(always)]
    pub fn score(&self, a: &[f32], b: &[f32]) -> f32 {
        let s = (self.kernel)(a, b);
        if s.is_nan() {
            f32::NEG_INFINITY
        } else {
            s
        }
    }
}

/// The kernel set chosen for this CPU.
#[derive(Clone, Copy)]
struct Kernels {
    dot: fn(&[f32], &[f32]) -> f32,
    l2_sq: fn(&[f32], &[f32]) -> f32,
    neg_l2_sq: fn(&[f32], &[f32]) -> f32,
}

impl Kernels {
    #[inline]
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") {
            return Kernels {
                dot: avx512::dot,
                l2_sq: avx512::l2_sq,
                neg_l2_sq: avx512::neg_l2_sq,
            };
        }
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Kernels {
                dot: avx2::dot,
                l2_sq: avx2::l2_sq,
                neg_l2_sq: avx2::neg_l2_sq,
            };
        }
        Kernels {
            dot: scalar::dot,
            l2_sq: scalar::l2_sq,
            neg_l2_sq: scalar::neg_l2_sq,
        }
    }
}

/// Portable kernels (no runtime dispatch): the fallback, and the baseline in benchmarks.
pub mod scalar {
    /// Lanes of independent accumulators: enough to break the add dependency chain and
    /// to map onto one 256-bit or two 128-bit registers when auto-vectorised.
    const LANES: usize = 8;

    /// Dot product of `a` and `b` over their common length.
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        reduce(a, b, |x, y| x * y)
    }

    /// Squared Euclidean distance over the common length.
    pub fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
        reduce(a, b, |x, y| (x - y) * (x - y))
    }

    pub(super) fn neg_l2_sq(a: &[f32], b: &[f32]) -> f32 {
        -l2_sq(a, b)
    }

    #[inline(always)]
    fn reduce(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
        let len = a.len().min(b.len());
        let (a, b) = (&a[..len], &b[..len]);
        let mut acc = [0.0f32; LANES];
        let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
        let tail: f32 = ca
            .remainder()
            .iter()
            .zip(cb.remainder())
            .map(|(&x, &y)| f(x, y))
            .sum();
        for (xa, xb) in ca.zip(cb) {
            for i in 0..LANES {
                acc[i] += f(xa[i], xb[i]);
            }
        }
        acc.iter().sum::<f32>() + tail
    }
}

#[cfg(target_arch = "x86_64")]
pub(in crate::index) mod avx2 {
    use std::arch::x86_64::*;

    /// Floats per 256-bit register.
    const W: usize = 8;

    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only installed by `Kernels::detect` after AVX2 and FMA were detected.
        unsafe { dot_impl(a, b) }
    }

    pub(super) fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: as in `dot`.
        unsafe { l2_sq_impl(a, b) }
    }

    pub(super) fn neg_l2_sq(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: as in `dot`.
        -unsafe { l2_sq_impl(a, b) }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_impl(a: &[f32], b: &[f32]) -> f32 {
        let step = |acc, x, y| _mm256_fmadd_ps(x, y, acc);
        // SAFETY: AVX2 and FMA are enabled here, by this function's contract.
        unsafe { reduce(a, b, step, super::scalar::dot) }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn l2_sq_impl(a: &[f32], b: &[f32]) -> f32 {
        let step = |acc, x, y| {
            let d = _mm256_sub_ps(x, y);
            _mm256_fmadd_ps(d, d, acc)
        };
        // SAFETY: as in `dot_impl`.
        unsafe { reduce(a, b, step, super::scalar::l2_sq) }
    }

    /// The loop both kernels share: `step(acc, x, y)` folds one register of `a` and `b`
    /// into an accumulator, over four independent accumulators (to hide FMA latency) and
    /// then one; `rest` covers the scalar remainder past the last full register.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA. Only call it from a function with those features
    /// enabled: it is inlined there, and so is `step`.
    #[inline(always)]
    unsafe fn reduce(
        a: &[f32],
        b: &[f32],
        step: impl Fn(__m256, __m256, __m256) -> __m256,
        rest: impl FnOnce(&[f32], &[f32]) -> f32,
    ) -> f32 {
        let len = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut i = 0;
        // SAFETY: the caller guarantees AVX2 and FMA. Each unaligned load is preceded by a
        // check that `i + W <= len` (or `i + 4W <= len`), and `len` is within both slices.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); 4];
            while i + 4 * W <= len {
                for (j, lane) in acc.iter_mut().enumerate() {
                    let off = i + j * W;
                    let (x, y) = (_mm256_loadu_ps(pa.add(off)), _mm256_loadu_ps(pb.add(off)));
                    *lane = step(*lane, x, y);
                }
                i += 4 * W;
            }
            while i + W <= len {
                let (x, y) = (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
                acc[0] = step(acc[0], x, y);
                i += W;
            }
            let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
            // The call is skipped when there is no remainder (the usual case: dimensions
            // are multiples of 8).
            let tail = if i < len {
                rest(&a[i..len], &b[i..len])
            } else {
                0.0
            };
            hsum(sum) + tail
        }
    }

    /// The sum of the eight lanes of `v` (also used by the quantised walk kernel).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::index) fn hsum(v: __m256) -> f32 {
        let pair = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let quad = _mm_add_ps(pair, _mm_movehl_ps(pair, pair));
        _mm_cvtss_f32(_mm_add_ss(quad, _mm_shuffle_ps(quad, quad, 1)))
    }
}

/// 512-bit kernels. Measured on the project's Xeon, where the peers (numpy's BLAS, faiss,
/// hnswlib built with `-march=native`) run AVX-512: the same loop as [`avx2`], sixteen
/// floats a register, with a masked load for the remainder instead of a scalar tail.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// Floats per 512-bit register.
    const W: usize = 16;

    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only installed by `Kernels::detect` after AVX-512F was detected.
        unsafe { dot_impl(a, b) }
    }

    pub(super) fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: as in `dot`.
        unsafe { l2_sq_impl(a, b) }
    }

    pub(super) fn neg_l2_sq(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: as in `dot`.
        -unsafe { l2_sq_impl(a, b) }
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn dot_impl(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: AVX-512F is enabled here, by this function's contract.
        unsafe { reduce(a, b, |acc, x, y| _mm512_fmadd_ps(x, y, acc)) }
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn l2_sq_impl(a: &[f32], b: &[f32]) -> f32 {
        let step = |acc, x, y| {
            let d = _mm512_sub_ps(x, y);
            _mm512_fmadd_ps(d, d, acc)
        };
        // SAFETY: as in `dot_impl`.
        unsafe { reduce(a, b, step) }
    }

    /// As `avx2::reduce`; `step` must map two zero registers to `acc` unchanged (true of
    /// both kernels), since masked-off lanes of the remainder load as zero.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; only call it from a function with it enabled.
    #[inline(always)]
    unsafe fn reduce(a: &[f32], b: &[f32], step: impl Fn(__m512, __m512, __m512) -> __m512) -> f32 {
        let len = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut i = 0;
        // SAFETY: the caller guarantees AVX-512F. Full loads are preceded by a check that
        // `i + W <= len` (or `i + 4W <= len`); the last load is masked to `len - i < W`
        // lanes, and masked-off lanes are not read (they cannot fault).
        unsafe {
            let mut acc = [_mm512_setzero_ps(); 4];
            while i + 4 * W <= len {
                for (j, lane) in acc.iter_mut().enumerate() {
                    let off = i + j * W;
                    let (x, y) = (_mm512_loadu_ps(pa.add(off)), _mm512_loadu_ps(pb.add(off)));
                    *lane = step(*lane, x, y);
                }
                i += 4 * W;
            }
            while i + W <= len {
                let (x, y) = (_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
                acc[0] = step(acc[0], x, y);
                i += W;
            }
            if i < len {
                let mask: __mmask16 = (1u16 << (len - i)) - 1;
                let x = _mm512_maskz_loadu_ps(mask, pa.add(i));
                let y = _mm512_maskz_loadu_ps(mask, pb.add(i));
                acc[1] = step(acc[1], x, y);
            }
            let sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
            _mm512_reduce_add_ps(sum)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
    }

    fn naive_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
            .sum()
    }

    fn data(len: usize, salt: u32) -> Vec<f32> {
        (0..len as u32)
            .map(|i| ((i.wrapping_mul(2654435761) ^ salt) % 1000) as f32 / 500.0 - 1.0)
            .collect()
    }

    #[test]
    fn kernels_match_naive_at_every_length() {
        for len in 0..100 {
            let (a, b) = (data(len, 1), data(len, 7));
            let tol = 1e-4 * (len as f64 + 1.0);
            let mut pairs = vec![
                (dot(&a, &b), naive_dot(&a, &b)),
                (scalar::dot(&a, &b), naive_dot(&a, &b)),
                (l2_sq(&a, &b), naive_l2(&a, &b)),
                (scalar::l2_sq(&a, &b), naive_l2(&a, &b)),
            ];
            // Every SIMD level this CPU has, not only the one `detect` picks.
            #[cfg(target_arch = "x86_64")]
            {
                if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                    pairs.push((avx2::dot(&a, &b), naive_dot(&a, &b)));
                    pairs.push((avx2::l2_sq(&a, &b), naive_l2(&a, &b)));
                }
                if is_x86_feature_detected!("avx512f") {
                    pairs.push((avx512::dot(&a, &b), naive_dot(&a, &b)));
                    pairs.push((avx512::l2_sq(&a, &b), naive_l2(&a, &b)));
                }
            }
            for (got, want) in pairs {
                assert!(
                    (got as f64 - want).abs() < tol,
                    "len {len}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn score_is_higher_for_closer_vectors() {
        let (q, near, far) = ([1.0, 0.0], [0.9, 0.1], [-1.0, 0.0]);
        for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
            assert!(
                score(metric, &q, &near) > score(metric, &q, &far),
                "{metric:?}"
            );
        }
        assert_eq!(score(Metric::L2, &q, &far), -4.0);
    }

    #[test]
    fn normalize_gives_unit_norm_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert!((dot(&v, &v) - 1.0).abs() < 1e-6);
        let mut zero = vec![0.0; 5];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 5]);
    }

    #[test]
    fn mismatched_lengths_use_the_common_prefix() {
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[1.0, 1.0]), 3.0);
    }
}
