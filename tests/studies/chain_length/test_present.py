"""The chain-length study's figures and TeX tables, from a synthetic analysis (written into tmp_path only)."""
from snaptax.paper import render
from snaptax.studies.chain_length import present
from tests.studies.chain_length.test_analyse import LOSS, make_run


def test_write_saves_figures_and_tables(tmp_path):
    a = make_run(tmp_path / "run")
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("chain_length-chains", "chain_length-mirror"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").stat().st_size > 1000
    fit = (tmp_path / "gen" / "chain_length-fit.tex").read_text()
    assert fit.count("\\\\") == 1 + 3 * len(LOSS)              # header + 3 configurations × 3 jobs
    # τ(n) = 1e6/IOPS as built: 1000 µs, +1500 µs with the first snapshot, +250 µs per further layer
    row = next(line for line in fit.splitlines() if line.startswith("on-disk metadata & random I/O & "))
    assert "& 1000.0 [" in row and "& 1500.0 [" in row and "& 250.0 [" in row
    assert present.UNIDENTIFIED_MARK not in row                 # both costs identified
    # the mark is not the claims table's provisional dagger, and the rows name configurations in words
    assert present.UNIDENTIFIED_MARK != render.PROVISIONAL_MARK and "dagger" not in present.UNIDENTIFIED_MARK
    assert "-metadata" not in fit and "lvm-thin" not in fit
    t1 = (tmp_path / "gen" / "chain_length-table1.tex").read_text()
    assert t1.count("\\\\") == 1 + len(LOSS)                   # header + one row per datastore
    assert "VMFS (SEsparse) & qcow2 on-disk-metadata & 65 & 60 [" in t1                   # built with 60 % loss
    assert "vSAN (vSANsparse) & qcow2 in-memory-metadata & 35 & 30 [" in t1
    assert "vVOL (array-native) & LVM thin, 64 KiB chunks (TCG guest) & no impact & 2 [" in t1


def test_a_cost_whose_interval_spans_zero_and_more_than_the_base_is_unidentified():
    from snaptax.models.chain import ChainFit

    def fit(tau1_ci, layer_ci=(-1.0, 1.0)):
        return ChainFit(100.0, 0.0, 0.0, ((90.0, 110.0), tau1_ci, layer_ci), 0.5, 20)

    assert present.unidentified(fit((-30.0, 30.0)))          # includes 0, 60 wide > τ0 / 2 = 50
    assert present.unidentified(fit((-1.0, 1.0), (-40.0, 15.0)))
    assert not present.unidentified(fit((-20.0, 20.0)))      # includes 0 but narrower than τ0 / 2: no cost, identified
    assert not present.unidentified(fit((20.0, 200.0)))      # wide but excludes 0: a cost, identified


def test_the_chains_are_drawn_on_a_log_axis():
    """LVM thin runs at about a tenth of qcow2's IOPS: a linear axis flattens it near zero (issue 50)."""
    from types import SimpleNamespace

    import pandas as pd

    rows = [{"job": job, "phase": "create", "variant": variant, "chain_length": n, "iops": iops,
             "iops_low": 0.9 * iops, "iops_high": 1.1 * iops, "ratio": 1.0, "n": 3}
            for job in ("randrw", "readwrite") for variant, iops in (("on-disk-metadata", 6e4), ("lvm-thin", 3e3))
            for n in range(3)]
    spec = present.chains_chart(SimpleNamespace(summary=pd.DataFrame(rows))).to_dict()
    scales = [layer["encoding"]["y"].get("scale", {}).get("type") for panel in spec["hconcat"]
              for layer in panel["layer"]]
    assert len(scales) == 6 and set(scales) == {"log"}    # band, line and points of both panels


def test_configurations_that_coincide_stay_visible():
    """Both qcow2 stand-ins share their baseline, so their points at 0 snapshots coincide: each configuration has
    its own hollow shape, so the point beneath shows around the one above (issue 50)."""
    from types import SimpleNamespace

    import pandas as pd

    rows = [{"job": "randrw", "phase": "create", "variant": variant, "chain_length": n, "iops": 6e4,
             "iops_low": 5e4, "iops_high": 7e4, "ratio": 1.0, "n": 3}
            for variant in ("on-disk-metadata", "in-memory-metadata") for n in range(2)]
    spec = present.chain_chart(SimpleNamespace(summary=pd.DataFrame(rows)), "randrw").to_dict()
    points = [layer for layer in spec["layer"] if layer["mark"]["type"] == "point"]
    assert len(points) == 1
    assert points[0]["mark"]["filled"] is False
    assert points[0]["encoding"]["shape"]["field"] == points[0]["encoding"]["color"]["field"] == "variant"
