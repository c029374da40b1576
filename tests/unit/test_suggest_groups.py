"""The group aggregation and confidence bands of `suggest` (pure)."""

from __future__ import annotations

import pytest

from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.suggest import band, group_key, suggest_groups


def _hit(rid: str, path: str, score: float, **meta: object) -> Hit:
    return Hit(rid, path, "notes", "", 1, 2, score, "", "c", metadata=dict(meta))


def test_group_keys() -> None:
    hit = _hit("a", "a/b/c.md", 0.5, kind="memo", tags=["x", "y"])
    assert group_key("path:1")(hit) == "a"
    assert group_key("path:2")(hit) == "b"
    assert group_key("path:3")(hit) == "(root)"
    assert group_key("source")(hit) == "notes"
    assert group_key("kind")(hit) == "memo"
    assert group_key("tags")(hit) == "x, y"
    assert group_key("missing")(hit) == "(none)"
    for bad in ("path:0", "path:x", " "):
        with pytest.raises(ConfigError):
            group_key(bad)


def test_scores_are_shares_summed_over_chunks_and_normalised() -> None:
    chunk1 = [_hit("a1", "a/1.md", 0.9), _hit("b1", "b/1.md", 0.3)]
    chunk2 = [_hit("a2", "a/2.md", 0.4), _hit("b2", "b/2.md", 0.4), _hit("me", "me/x.md", 1.0)]
    groups = suggest_groups(
        [3.0, 1.0], [chunk1, chunk2], group_key("path:1"), exclude=lambda h: h.id == "me"
    )
    assert [g.group for g in groups] == ["a", "b"]
    a = 3 / 4 * 0.9 / 1.2 + 1 / 4 * 0.5
    assert groups[0].score == pytest.approx(a)
    assert groups[1].score == pytest.approx(1 - a)
    assert groups[0].margin == pytest.approx(2 * a - 1)
    assert [h.id for h in groups[0].best] == ["a1", "a2"]
    assert groups[1].band == "low"


def test_bands() -> None:
    assert band(0.7, 0.4) == "high"
    assert band(0.45, 0.3) == "medium"
    assert band(0.6, 0.15) == "medium"
    assert band(0.35, 0.05) == "low"
    assert band(0.2, 0.2) == "low"
