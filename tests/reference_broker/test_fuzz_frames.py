"""The short version of ``make fuzz`` (fuzz/binary_frames.py): mutated frames against a broker process,
another client served throughout; its figures are printed and must all be clean."""

import pytest

from fuzz import binary_frames

pytestmark = pytest.mark.slow


def test_twenty_thousand_mutated_frames_find_nothing(capsys):
    code = binary_frames.main(["--frames", "20000", "--seed", "7", "--budget", "100"])
    printed = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + printed)
    assert code == 0, printed
