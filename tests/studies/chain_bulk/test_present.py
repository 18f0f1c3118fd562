"""The chain-bulk study's figure and TeX table, from a synthetic analysis (written into tmp_path only)."""
import pytest

from snaptax.studies.chain_bulk import analyse as an, present
from tests.studies.chain_bulk.test_analyse import TAU, make_run


def _row(tex: str, start: str) -> list[str]:
    line = next(line for line in tex.splitlines() if line.startswith(start))
    return line.removesuffix(" \\\\").split(" & ")


def test_write_saves_the_figure_and_the_fit_table(tmp_path):
    a = an.analyse(make_run(tmp_path / "run"))
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    assert (tmp_path / "fig" / "chain_bulk-ratios.pdf").stat().st_size > 1000
    assert (tmp_path / "fig" / "chain_bulk-ratios.svg").stat().st_size > 1000
    fit = (tmp_path / "gen" / "chain_bulk-fit.tex").read_text()
    assert fit.count("\\\\") == 1 + len(TAU)                  # header + one row per configuration and series
    # VMFS reads were built with τ1/τ0 = 150/500: the first snapshot adds 30 % per read
    read = _row(fit, "on-disk-metadata & 512 KiB sequential read & ")
    assert read[2].endswith("$\\mu$s") and float(read[3].split(" [")[0]) == pytest.approx(30, abs=1)
    # vSAN clones: τ1/τ0 = 0.5/2 and τL/τ0 = 0.15/2, τ0 printed in seconds
    clone = _row(fit, "in-memory-metadata & full clone & ")
    assert clone[2].endswith(" s") and float(clone[3].split(" [")[0]) == pytest.approx(25, rel=0.05)
    assert float(clone[4].split(" [")[0]) == pytest.approx(7.5, rel=0.05)
