//! Deterministic synthetic vectors shared by the index tests and the search benchmarks:
//! a SplitMix64 stream (so fixtures need no extra crates) and points drawn from Gaussian
//! clusters.

/// Deterministic pseudo-random stream (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits (an endless stream, not an iterator).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 24 bits.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Roughly standard normal (Irwin–Hall of 4, centred).
    pub fn gauss(&mut self) -> f32 {
        (0..4).map(|_| self.unit()).sum::<f32>() - 2.0
    }
}

/// Points around `clusters` random centres of dimension `dim`: each point picks a centre
/// uniformly and adds unit Gaussian noise per coordinate.
pub struct Blobs {
    rng: Rng,
    dim: usize,
    clusters: usize,
    centres: Vec<f32>,
}

impl Blobs {
    /// Draws the centres from `seed`, each coordinate Gaussian scaled by `spread`.
    pub fn new(seed: u64, dim: usize, clusters: usize, spread: f32) -> Self {
        let mut rng = Rng(seed);
        let centres = (0..clusters * dim).map(|_| rng.gauss() * spread).collect();
        Blobs {
            rng,
            dim,
            clusters,
            centres,
        }
    }

    /// The next `n` points, row-major, and the cluster of each.
    pub fn take(&mut self, n: usize) -> (Vec<f32>, Vec<usize>) {
        let mut data = Vec::with_capacity(n * self.dim);
        let mut labels = Vec::with_capacity(n);
        for _ in 0..n {
            let c = (self.rng.next() % self.clusters as u64) as usize;
            labels.push(c);
            let centre = &self.centres[c * self.dim..(c + 1) * self.dim];
            data.extend(centre.iter().map(|&x| x + self.rng.gauss()));
        }
        (data, labels)
    }
}
