import numpy as np
import pytest

from reportgen.analysis import calibration
from reportgen.analysis.interval import block_length, ratio_interval


def _arm(rng, mean, runs=1, steps=180, rho=0.5):
    return [np.array_split(ar1(rng, steps, rho=rho, cv=0.1, mean=mean), 3) for _ in range(runs)]


def ar1(rng, n, *, rho, cv, mean=100.0):
    """Per-step values with coefficient of variation `cv` and lag-1 autocorrelation `rho`."""
    return mean * (1.0 + cv * calibration.ar1(rng, (n,), rho=rho))


@pytest.mark.parametrize("method", ["block-bootstrap", "batch-means"])
def test_interval_finds_a_large_effect_and_brackets_the_estimate(method):
    rng = np.random.default_rng(11)
    b, c = _arm(rng, 100.0), _arm(rng, 120.0)
    iv = ratio_interval(b, c, method=method, seed=5)
    assert iv.low < iv.estimate < iv.high
    assert iv.significant and iv.low > 1.1
    assert iv.n_baseline == iv.n_candidate == 180
    assert iv.estimate == pytest.approx(np.mean([s.mean() for s in c[0]]) / np.mean([s.mean() for s in b[0]]))


def test_bootstrap_is_deterministic_given_the_seed():
    rng = np.random.default_rng(2)
    b, c = _arm(rng, 100.0), _arm(rng, 101.0)
    assert ratio_interval(b, c, seed=9) == ratio_interval(b, c, seed=9)
    assert ratio_interval(b, c, seed=9).low != ratio_interval(b, c, seed=10).low


def test_block_length_grows_with_autocorrelation():
    rng = np.random.default_rng(4)
    iid = [rng.normal(size=200) for _ in range(3)]
    correlated = [ar1(rng, 200, rho=0.9, cv=0.1) for _ in range(3)]
    assert block_length(iid) <= 2
    assert block_length(correlated) > block_length(iid) + 2


def test_interval_is_wider_than_an_iid_interval_on_correlated_steps():
    rng = np.random.default_rng(8)
    b, c = _arm(rng, 100.0, rho=0.8), _arm(rng, 100.0, rho=0.8)
    iv = ratio_interval(b, c, seed=1)
    xb, xc = np.concatenate(b[0]), np.concatenate(c[0])
    naive_se = np.sqrt(xb.var(ddof=1) / xb.size / xb.mean() ** 2 + xc.var(ddof=1) / xc.size / xc.mean() ** 2)
    assert np.log(iv.high / iv.low) / 2 > 1.5 * 1.96 * naive_se


def test_repeats_resample_runs_and_widen_the_interval():
    rng = np.random.default_rng(5)
    # Two runs per arm whose levels differ by 6 %: between-run spread must enter the interval.
    b = _arm(rng, 100.0) + _arm(rng, 106.0)
    c = _arm(rng, 103.0) + _arm(rng, 109.0)
    pooled = ratio_interval(
        [[np.concatenate([b[0][w], b[1][w]]) for w in range(3)]],
        [[np.concatenate([c[0][w], c[1][w]]) for w in range(3)]],
        seed=3,
    )
    runs = ratio_interval(b, c, seed=3)
    assert "runs" in runs.method
    assert runs.high - runs.low > pooled.high - pooled.low


def test_empty_window_gives_no_interval_with_a_warning():
    rng = np.random.default_rng(1)
    b = _arm(rng, 100.0)
    c = [[b[0][0][:5], np.array([]), np.array([])]]
    iv = ratio_interval(b, c)
    assert iv.low is None and iv.high is None and not iv.significant
    assert iv.warnings
    with pytest.raises(ValueError):
        ratio_interval(b, b, method="t-test")
