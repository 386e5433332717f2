"""scripts/render_tables.py (`make tables`): every experiment it cannot use is named, with why."""

from __future__ import annotations

from tests.conftest import load_script

from runner.paths import PROJECT_ROOT
from runner.reporting.logged_runs import SkippedRun


def test_every_experiment_config_is_known_with_its_study():
    studies = load_script("render_tables")._configured_studies(PROJECT_ROOT / "conf")
    configs = {p.stem for p in (PROJECT_ROOT / "conf" / "experiment").glob("*.yaml")}
    assert set(studies) == configs
    assert studies["rq5_source_shift_ragtruth"] == "rq5_source_shift"
    assert studies["hri_example"] == "hri_example"


def test_a_paper_report_lists_its_skipped_experiments_and_only_its_own():
    script = load_script("render_tables")
    studies = script._configured_studies(PROJECT_ROOT / "conf")
    skipped = [
        SkippedRun("rq2_grouped_cv", "no complete run, only incomplete run folder(s) .x.tmp"),
        SkippedRun("hri_example", "no run yet"),
    ]
    section = script._skipped_section("ragscope", skipped, studies)
    assert "## Not in this report" in section
    assert "- `rq2_grouped_cv`: no complete run, only incomplete run folder(s) .x.tmp" in section
    assert "hri_example" not in section
    assert script._skipped_section("ragscope", [], studies) == ""


def test_without_any_run_it_says_so_and_names_every_study(tmp_path, capsys):
    rc = load_script("render_tables").main(
        ["--artifacts", str(tmp_path), "--experiments", str(tmp_path / "e")]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "no logged runs" in out
    for stem in (p.stem for p in (PROJECT_ROOT / "conf" / "experiment").glob("*.yaml")):
        assert f"skipped {stem}: no run yet" in out
