//! Welch's t-test: is the mean of B different from the mean of A, when the
//! two sides may have different variances? The parametric companion of the
//! rank test in [`super::significance`]: it uses the size of the
//! differences, not only their order, so with few trials it can reach a
//! smaller p than Mann–Whitney (3 against 3 can go below 0.1), at the price
//! of assuming each side's mean is roughly normal (true for per-trial
//! averages by the central limit theorem, false for a bimodal side — which
//! the trial checks report).
//!
//! Welch (1947), "The generalization of 'Student's' problem when several
//! different population variances are involved", Biometrika 34:28–35; the
//! degrees of freedom are Satterthwaite's (1946) approximation. The t
//! distribution's tail is the regularized incomplete beta function,
//! evaluated with Lentz's continued fraction (Numerical Recipes 3rd ed.
//! §6.4) and Lanczos's log-gamma (§6.1).

/// The result of a two-sided Welch t-test of B against A.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Welch {
    /// (mean(b) − mean(a)) / √(s²a/na + s²b/nb).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

/// Welch's t-test, two-sided. `None` with fewer than 2 values on a side. When
/// both sides have no spread, p is 0 if the means differ and 1 if not.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (qa, qb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = qa + qb;
    if se2 <= 0.0 {
        let p = if ma == mb { 1.0 } else { 0.0 };
        let t = if ma == mb {
            0.0
        } else {
            f64::INFINITY.copysign(mb - ma)
        };
        return Some(Welch {
            t,
            df: f64::INFINITY,
            p,
        });
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2 * se2 / (qa * qa / (a.len() - 1) as f64 + qb * qb / (b.len() - 1) as f64);
    Some(Welch {
        t,
        df,
        p: t_two_sided_p(t, df),
    })
}

/// P(|T| ≥ |t|) for Student's t with `df` (real, > 0) degrees of freedom:
/// I_{df/(df+t²)}(df/2, ½).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    inc_beta(x, df / 2.0, 0.5).clamp(0.0, 1.0)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error < 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b).
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast for x < (a+1)/(a+b+2); use the
    // symmetry I_x(a,b) = 1 − I_{1−x}(b,a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(x, a, b) / a
    } else {
        1.0 - front * beta_cf(1.0 - x, b, a) / b
    }
}

/// Lentz's evaluation of the continued fraction for I_x(a, b).
fn beta_cf(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_tail_matches_closed_forms_and_tables() {
        // df = 1 is the Cauchy distribution: P(|T| ≥ t) = 1 − 2·atan(t)/π.
        for t in [0.5, 1.0, 3.0, 10.0] {
            let want = 1.0 - 2.0 * f64::atan(t) / std::f64::consts::PI;
            assert!((t_two_sided_p(t, 1.0) - want).abs() < 1e-12, "t={t}");
        }
        // df = 2: P(|T| ≥ t) = 1 − t/√(2 + t²).
        for t in [0.3f64, 1.0, 2.5, 8.0] {
            let want = 1.0 - t / (2.0 + t * t).sqrt();
            assert!((t_two_sided_p(t, 2.0) - want).abs() < 1e-12, "t={t}");
        }
        // The 97.5 % quantiles of any t table give p = 0.05 (4 digits).
        for (df, q) in [(3.0, 3.182), (5.0, 2.571), (10.0, 2.228), (30.0, 2.042)] {
            assert!((t_two_sided_p(q, df) - 0.05).abs() < 2e-4, "df={df}");
        }
        // Large df: the normal, P(|Z| ≥ 1.96) = 0.0500.
        assert!((t_two_sided_p(1.959_964, 1e7) - 0.05).abs() < 1e-6);
        assert_eq!(t_two_sided_p(0.0, 4.0), 1.0);
        // ln Γ at known points: Γ(5) = 24, Γ(½) = √π.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }

    #[test]
    fn welch_by_hand() {
        // Equal variances and sizes of 2: df = 2 exactly, t = 2/√2, so
        // p = 1 − (√2)/√(2 + 2) = 1 − 1/√2.
        let w = welch(&[0.0, 2.0], &[2.0, 4.0]).unwrap();
        assert!((w.t - std::f64::consts::SQRT_2).abs() < 1e-12);
        assert!((w.df - 2.0).abs() < 1e-12);
        assert!((w.p - (1.0 - std::f64::consts::FRAC_1_SQRT_2)).abs() < 1e-12);
        // Unequal variances: a = 1..5 (mean 3, s² 2.5), b = 2,4,..,10 (mean 6,
        // s² 10): se² = 0.5 + 2 = 2.5, t = 3/√2.5 = 1.8974, df = 6.25 /
        // (0.25/4 + 4/4) = 5.8824.
        let w = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!((w.t - 3.0 / 2.5f64.sqrt()).abs() < 1e-12);
        assert!((w.df - 6.25 / 1.0625).abs() < 1e-12);
        // Between the df = 5 and df = 6 values of the same t.
        let (p5, p6) = (t_two_sided_p(w.t, 5.0), t_two_sided_p(w.t, 6.0));
        assert!(w.p < p5 && w.p > p6, "{p5} > {} > {p6}", w.p);
        // Direction: B smaller gives negative t, same p.
        let v = welch(&[2.0, 4.0, 6.0, 8.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((v.t + w.t).abs() < 1e-12 && (v.p - w.p).abs() < 1e-12);
    }

    #[test]
    fn three_against_three_can_be_significant_and_edges() {
        // Tight trials 10 % apart: the rank test's floor is p = 0.1 here,
        // Welch's is not.
        let w = welch(&[1000.0, 1010.0, 990.0], &[1100.0, 1110.0, 1090.0]).unwrap();
        assert!(w.p < 0.001, "{w:?}");
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
        assert_eq!(welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap().p, 1.0);
        assert_eq!(welch(&[5.0, 5.0], &[6.0, 6.0]).unwrap().p, 0.0);
    }
}
