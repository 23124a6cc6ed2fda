"""A smaller run of scripts/calibrate.py's simulation: A/A false-positive rate of the interval
within the nominal level (Monte-Carlo error allowed), Mann-Whitney on raw steps clearly above it."""

from reportgen.analysis.calibration import SimSettings, simulate


def test_interval_methods_hold_their_level_and_mann_whitney_does_not():
    s = SimSettings(sims=300, seed=12345)
    rates = {(r.method, r.scenario): r for r in simulate(s)}
    nominal = 1 - s.confidence
    for method in ("block-bootstrap", "batch-means"):
        aa = rates[(method, "A/A")]
        assert aa.rate <= nominal + 3 * (nominal * (1 - nominal) / s.sims) ** 0.5, (method, aa.rate)
        assert rates[(method, "+5%")].rate > 0.6  # power for +5 % at rho 0.5, CV 10 %, 180 steps
    mw = rates[("mann-whitney", "A/A")]
    assert mw.rate > nominal + 5 * mw.mc_se and mw.rate > 0.12
