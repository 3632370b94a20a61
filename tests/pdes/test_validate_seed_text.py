"""The seed and one-line text checks of pdes.validate."""

from __future__ import annotations

import numpy as np
import pytest

from pdes.errors import UserError
from pdes.validate import SEED_MAX, check_seed, check_text


@pytest.mark.parametrize("ok", [0, 1, SEED_MAX, np.int64(7), np.uint64(SEED_MAX)])
def test_seeds_in_range_are_plain_ints(ok):
    v = check_seed("seed", ok)
    assert v == int(ok) and type(v) is int


@pytest.mark.parametrize("bad", [-1, SEED_MAX + 1, 2**64, 1.5, "3", True, None])
def test_seeds_out_of_range_or_not_integers_are_refused(bad):
    with pytest.raises(UserError, match=r"^seed must be an integer in 0\.\.9223372036854775807, got "):
        check_seed("seed", bad)


def test_the_seed_range_is_what_the_workload_draws_tell_apart():
    # The draws use the seed's low 63 bits: SEED_MAX + 1 would repeat seed 0.
    from scheduler.workload import seeded_rng

    assert seeded_rng(SEED_MAX + 1).random() == seeded_rng(0).random()
    assert seeded_rng(SEED_MAX).random() != seeded_rng(0).random()


@pytest.mark.parametrize("ok", ["default", "fcfs tiny", "\u00b5s-run", "a/b"])
def test_one_line_text_passes(ok):
    assert check_text("name:", ok) == ok


@pytest.mark.parametrize("bad,what", [
    ("a\x00b", "a control character, '\\x00'"), ("a\nb", "a control character, '\\n'"),
    ("\x1b[31m", "a control character, '\\x1b'"), ("a\ud800", "a lone surrogate"),
])
def test_control_characters_are_refused(bad, what):
    with pytest.raises(UserError, match="^name: must be one line of printable text") as exc:
        check_text("name:", bad)
    assert what in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("bad", ["", None, 3])
def test_empty_or_not_text_is_refused(bad):
    with pytest.raises(UserError, match="^name: must be a non-empty string"):
        check_text("name:", bad)
