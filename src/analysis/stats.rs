//! Small numerical helpers shared by the analysis modules: the normal and
//! chi-square tail probabilities, the Kolmogorov distribution, the two-sample
//! Kolmogorov–Smirnov statistic on plain samples, and a seeded random number
//! generator for the bootstrap.
//!
//! Each is the textbook method, cited where it is defined; they are here
//! rather than in a statistics crate because rtscope needs only these few and
//! each is a dozen lines that the tests below check against known values.

/// Complementary error function, erfc(x), with fractional error < 1.2e-7
/// everywhere (Chebyshev fit; Press et al., *Numerical Recipes in C*, 2nd
/// ed., §6.2, `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// P(Z > z) for a standard normal Z.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// P(X > x) for X ~ χ²(k), by the Wilson–Hilferty cube-root normal
/// approximation (Wilson & Hilferty 1931), accurate to a few 1e-3 in the
/// tail for k ≥ 3, which is all a 1 % test needs.
pub fn chi2_sf(x: f64, k: usize) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let k = k as f64;
    let h = 2.0 / (9.0 * k);
    let z = ((x / k).cbrt() - (1.0 - h)) / h.sqrt();
    normal_sf(z)
}

/// The Kolmogorov distribution's survival function Q(λ) =
/// 2 Σ_{j≥1} (−1)^{j−1} e^{−2 j² λ²}: the asymptotic p-value of a KS
/// statistic D with effective size n_e is Q((√n_e + 0.12 + 0.11/√n_e)·D)
/// (Press et al., *Numerical Recipes*, §14.3, `probks`/`kstwo`).
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=100 {
        let term = sign * (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// p-value of a two-sample KS statistic `d` between samples of sizes n1, n2.
pub fn ks_pvalue(d: f64, n1: f64, n2: f64) -> f64 {
    if n1 <= 0.0 || n2 <= 0.0 {
        return 1.0;
    }
    let ne = n1 * n2 / (n1 + n2);
    let s = ne.sqrt();
    kolmogorov_q((s + 0.12 + 0.11 / s) * d)
}

/// Two-sample KS statistic D = sup |F_a − F_b| of two plain samples
/// (sorted in place).
pub fn ks_statistic(a: &mut [f64], b: &mut [f64]) -> f64 {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny seeded generator, so that
/// bootstrap intervals are reproducible from one report to the next.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in the open interval (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tail_matches_tables() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(2.575_829) - 0.005).abs() < 1e-6);
        assert!((normal_sf(-1.0) - 0.841_344_7).abs() < 1e-6);
    }

    #[test]
    fn chi2_tail_matches_tables() {
        // χ²(10) 0.99 quantile 23.209; χ²(20) 0.95 quantile 31.410.
        assert!((chi2_sf(23.209, 10) - 0.01).abs() < 0.002, "{}", chi2_sf(23.209, 10));
        assert!((chi2_sf(31.410, 20) - 0.05).abs() < 0.003);
    }

    #[test]
    fn kolmogorov_matches_known_points() {
        // Q(1.358) = 0.05, Q(1.628) = 0.01 (the classic critical values).
        assert!((kolmogorov_q(1.358) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_q(1.628) - 0.01).abs() < 1e-3);
    }

    #[test]
    fn ks_statistic_by_hand() {
        let mut a = vec![1.0, 2.0, 3.0, 4.0];
        let mut b = vec![3.0, 4.0, 5.0, 6.0];
        // After 2: F_a = 0.5, F_b = 0; after 4: 1 vs 0.5 → D = 0.5.
        assert!((ks_statistic(&mut a, &mut b) - 0.5).abs() < 1e-12);
        let mut c = vec![1.0, 2.0];
        let mut d = vec![1.0, 2.0];
        assert_eq!(ks_statistic(&mut c, &mut d), 0.0);
    }

    #[test]
    fn splitmix_is_uniform_enough() {
        let mut r = SplitMix64(42);
        let n = 100_000;
        let mean = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005);
    }
}
