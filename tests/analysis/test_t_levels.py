"""The committed per-look t levels (reportgen/analysis/t_levels.json, written by scripts/t_levels.py):
what the simulation gives, looked up instead of simulated, and ignored once the simulation changes."""

from __future__ import annotations

import json

import pytest

from reportgen.analysis import design as dz


def test_the_table_was_made_by_this_simulation_and_holds_the_shipped_designs():
    data = json.loads(dz.T_LEVELS.read_text(encoding="utf-8"))
    assert (data["seed"], data["method"]) == (dz.T_SEED, dz.T_METHOD)
    levels = dz._t_levels()
    assert levels == data["levels"]
    # the shipped GPU design (2-16) and the CPU demo's (2-5), and the designs the committed campaigns
    # ran (3-12, 3-5), at the analysis' paths
    for looks in (range(2, 17), range(2, 6), range(3, 13), range(3, 6)):
        assert dz.t_level_key(tuple(looks), 0.05, dz.T_PATHS) in levels
    # every level lies between a single look's alpha and Bonferroni's alpha / looks
    for key, tail in levels.items():
        n = len(key.split()[2].split(","))
        assert 0.05 / n < tail < 0.05, key


@pytest.mark.parametrize("looks", [(3, 4, 5), (3, 7)])
def test_a_committed_level_is_exactly_what_the_simulation_gives(looks):
    """Recomputed here (0.3 s each): the table is a cache of the simulation, to the last bit."""
    key = dz.t_level_key(looks, 0.05, dz.T_PATHS)
    assert dz._t_levels()[key] == dz.simulate_t_tail(looks, 0.05, dz.T_PATHS)


def test_the_level_is_looked_up_when_committed_and_simulated_otherwise(monkeypatch):
    calls: list[tuple[int, ...]] = []
    real = dz.simulate_t_tail

    def counted(looks, alpha, paths):
        calls.append(looks)
        return real(looks, alpha, paths)

    monkeypatch.setattr(dz, "simulate_t_tail", counted)
    dz.t_look_tail.cache_clear()
    try:
        # sorted and deduplicated, looks below 2 pairs dropped, before the lookup
        assert (
            dz.t_look_tail((12, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1), 0.05)
            == dz._t_levels()[dz.t_level_key(tuple(range(3, 13)), 0.05, dz.T_PATHS)]
        )
        assert calls == []
        assert dz.t_look_tail((3, 5), 0.05, 20_000) == real((3, 5), 0.05, 20_000)  # not in the table
        assert calls == [(3, 5)]
        assert dz.t_look_tail((6,), 0.05) == 0.05  # one look: alpha itself, nothing simulated
        assert calls == [(3, 5)]
    finally:
        dz.t_look_tail.cache_clear()


def test_a_table_of_another_seed_or_method_is_not_used(tmp_path, monkeypatch):
    data = json.loads(dz.T_LEVELS.read_text(encoding="utf-8"))
    for change in ({"seed": dz.T_SEED + 1}, {"method": dz.T_METHOD + 1}):
        other = tmp_path / "t_levels.json"
        other.write_text(json.dumps({**data, **change}), encoding="utf-8")
        monkeypatch.setattr(dz, "T_LEVELS", other)
        dz._t_levels.cache_clear()
        try:
            assert dz._t_levels() == {}
        finally:
            dz._t_levels.cache_clear()
