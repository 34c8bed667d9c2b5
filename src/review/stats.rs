//! Rates, percentiles and means with 95% confidence intervals, and the intervals of their
//! differences between two groups.

use serde::Serialize;

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Bootstrap resamples for the interval of a percentile difference.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// A point estimate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// A rate: `successes` of `trials`, with its Wilson score interval; `None` without trials.
pub fn wilson(successes: u64, trials: u64) -> Option<Estimate> {
    if trials == 0 {
        return None;
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Some(Estimate {
        value: p,
        low: center - half,
        high: center + half,
    })
}

/// The difference `b - a` of two rates, with Newcombe's hybrid score interval (from the two
/// Wilson intervals).
pub fn rate_difference(a: &Estimate, b: &Estimate) -> Estimate {
    let d = b.value - a.value;
    Estimate {
        value: d,
        low: d - ((b.value - b.low).powi(2) + (a.high - a.value).powi(2)).sqrt(),
        high: d + ((b.high - b.value).powi(2) + (a.value - a.low).powi(2)).sqrt(),
    }
}

/// The `q` quantile (0 < q < 1) of `sorted` (ascending) by nearest rank, with the
/// distribution-free order-statistic interval: ranks `nq ∓ z·sqrt(nq(1-q))`, rounded
/// outward and clamped to the sample. `None` for an empty sample.
pub fn quantile(sorted: &[f64], q: f64) -> Option<Estimate> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let at = |rank: f64| sorted[(rank as usize).clamp(1, n) - 1];
    let spread = Z95 * (nf * q * (1.0 - q)).sqrt();
    Some(Estimate {
        value: at((nf * q).ceil()),
        low: at((nf * q - spread).floor()),
        high: at((nf * q + spread).ceil() + 1.0),
    })
}

/// The difference `b - a` of the `q` quantiles of two samples (ascending), with a
/// percentile bootstrap interval (`BOOTSTRAP_RESAMPLES` resamples of each, seeded, so a
/// report is reproducible). `None` if a sample is empty.
pub fn quantile_difference(a: &[f64], b: &[f64], q: f64) -> Option<Estimate> {
    let value = quantile(b, q)?.value - quantile(a, q)?.value;
    let mut rng = SplitMix64(0x5eed_f011_0000_0001);
    let mut diffs: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resampled_quantile(b, q, &mut rng) - resampled_quantile(a, q, &mut rng))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let pick = |p: f64| diffs[((p * diffs.len() as f64) as usize).min(diffs.len() - 1)];
    Some(Estimate {
        value,
        low: pick(0.025),
        high: pick(0.975),
    })
}

fn resampled_quantile(sorted: &[f64], q: f64, rng: &mut SplitMix64) -> f64 {
    let mut sample: Vec<f64> = (0..sorted.len())
        .map(|_| sorted[(rng.next() % sorted.len() as u64) as usize])
        .collect();
    sample.sort_by(f64::total_cmp);
    let rank = ((sample.len() as f64 * q).ceil() as usize).clamp(1, sample.len());
    sample[rank - 1]
}

/// A sample's mean, its standard error, and its size.
#[derive(Debug, Clone, Copy)]
struct Moments {
    mean: f64,
    se2: f64,
}

fn moments(values: &[f64]) -> Option<Moments> {
    let n = values.len() as f64;
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some(Moments { mean, se2: var / n })
}

/// The mean, with the normal interval `mean ± z·s/√n` (`s` the sample standard deviation;
/// a single value has a zero-width interval).
pub fn mean(values: &[f64]) -> Option<Estimate> {
    let m = moments(values)?;
    let half = Z95 * m.se2.sqrt();
    Some(Estimate {
        value: m.mean,
        low: m.mean - half,
        high: m.mean + half,
    })
}

/// The difference `b - a` of two means, with Welch's normal interval.
pub fn mean_difference(a: &[f64], b: &[f64]) -> Option<Estimate> {
    let (a, b) = (moments(a)?, moments(b)?);
    let d = b.mean - a.mean;
    let half = Z95 * (a.se2 + b.se2).sqrt();
    Some(Estimate {
        value: d,
        low: d - half,
        high: d + half,
    })
}

/// SplitMix64: a small seeded generator for the bootstrap.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_hand_computed_intervals() {
        // 8 of 10: p = .8, z² = 3.8415; center = (.8 + .19207)/1.38415 = .71674,
        // half = 1.96·sqrt(.016 + .0096037)/1.38415 = .22657.
        let e = wilson(8, 10).unwrap();
        assert!(close(e.value, 0.8));
        assert!(close(e.low, 0.49016), "{e:?}");
        assert!(close(e.high, 0.94332), "{e:?}");
        // 0 of 5: the interval starts at 0 and ends at z²/(n+z²) = 3.8415/8.8415.
        let e = wilson(0, 5).unwrap();
        assert!(close(e.low, 0.0) && close(e.high, 0.43448), "{e:?}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn newcombe_difference_combines_both_wilson_intervals() {
        let a = wilson(8, 10).unwrap();
        let b = wilson(0, 5).unwrap();
        let d = rate_difference(&a, &b);
        assert!(close(d.value, -0.8));
        // low = -.8 - sqrt(0² + (.94332-.8)²) ; high = -.8 + sqrt(.43448² + (.8-.49016)²).
        assert!(close(d.low, -0.8 - 0.14332), "{d:?}");
        assert!(close(
            d.high,
            -0.8 + (0.43448f64.powi(2) + 0.30984f64.powi(2)).sqrt()
        ));
    }

    #[test]
    fn quantiles_are_order_statistics() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        // p50: rank 50; spread 1.96·sqrt(25) = 9.8 → ranks 40 and 61.
        let e = quantile(&xs, 0.5).unwrap();
        assert_eq!((e.value, e.low, e.high), (50.0, 40.0, 61.0));
        // p95: rank 95; spread 1.96·sqrt(4.75) = 4.2717 → ranks 90 and 101 → clamped 100.
        let e = quantile(&xs, 0.95).unwrap();
        assert_eq!((e.value, e.low, e.high), (95.0, 90.0, 100.0));
        let one = quantile(&[7.0], 0.95).unwrap();
        assert_eq!((one.value, one.low, one.high), (7.0, 7.0, 7.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn a_constant_shift_has_an_exact_bootstrap_interval() {
        let a = vec![10.0; 30];
        let b = vec![25.0; 40];
        let d = quantile_difference(&a, &b, 0.95).unwrap();
        assert_eq!((d.value, d.low, d.high), (15.0, 15.0, 15.0));
        let a: Vec<f64> = (1..=50).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 100.0).collect();
        let d = quantile_difference(&a, &b, 0.5).unwrap();
        assert_eq!(d.value, 100.0);
        assert!(
            d.low <= 100.0 && d.high >= 100.0 && d.low > 80.0 && d.high < 120.0,
            "{d:?}"
        );
    }

    #[test]
    fn means_use_the_sample_standard_deviation() {
        // 2, 4, 6: mean 4, s = 2, se = 2/√3 = 1.1547, half = 2.2632.
        let e = mean(&[2.0, 4.0, 6.0]).unwrap();
        assert!(close(e.value, 4.0) && close(e.low, 4.0 - 2.26318) && close(e.high, 6.26318));
        // b - a = 6; half = 1.96·sqrt(4/3 + 4/3) = 3.20060.
        let d = mean_difference(&[2.0, 4.0, 6.0], &[8.0, 10.0, 12.0]).unwrap();
        assert!(close(d.value, 6.0) && close(d.low, 6.0 - 3.20060), "{d:?}");
        assert_eq!(mean(&[]), None);
    }
}
