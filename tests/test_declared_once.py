"""Every value is declared once: a conf YAML sets only what differs from what it would get
without it, and the seed is written once.

"Without it" is composed for real: the YAML's body is taken out (its defaults list kept) in
a copy of ``conf/``, the same config is composed again, and every leaf the YAML sets must
differ there (unresolved: ``${seed}`` differs from 13). What a key falls back to is thus the
class's default (the schema derived from it), the parent YAML of its defaults list, the
part's own YAML for an experiment's ``verifiers.x.batch_size``; ``study.params.*`` are
compared with the study's ``Params`` defaults.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import typing
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runner.config import register_configs
from runner.paths import PROJECT_ROOT
from runner.settings import import_path

CONF = PROJECT_ROOT / "conf"
BASE = "experiment=rq1_cheap_signals"
SWAPPED = ("dataset", "split", "bootstrap", "tracking")  # `group=option`
PLURAL = {"gate": "gates", "verifier": "verifiers", "judge": "judges"}  # `+g@gates.x=option`
ADDED = ("routing", "hri", "detector", "train")  # `+g@g=option`
FILES = sorted(
    p.relative_to(CONF).as_posix()
    for p in CONF.rglob("*.yaml")
    if p.parts[len(CONF.parts)] not in ("hydra", "architecture")  # plugins' files; model shapes
)

register_configs()


def where(rel: str) -> tuple[list[str], str]:
    """The overrides that compose `rel` and the path of the node it fills."""
    group, stem = rel.rsplit("/", 1) if "/" in rel else ("", rel)
    stem = stem.removesuffix(".yaml")
    if group == "":
        return [BASE], ""
    if group == "experiment":
        return [f"experiment={stem}"], ""
    if group in SWAPPED:
        return [BASE, f"{group}={stem}"], group
    if group in PLURAL:
        return [BASE, f"+{group}@{PLURAL[group]}.probe={stem}"], f"{PLURAL[group]}.probe"
    assert group in ADDED, f"{rel}: which group is this? add it to the test"
    return [BASE, f"+{group}@{group}={stem}"], group


def leaves(node: object, path: str = "") -> dict[str, object]:
    """Dotted path -> value of every leaf (a list and an empty mapping are leaves)."""
    if isinstance(node, dict) and node:
        out: dict[str, object] = {}
        for key, value in node.items():
            out.update(leaves(value, f"{path}.{key}" if path else str(key)))
        return out
    return {path: node}


def body(raw: dict) -> dict:
    """What the file itself sets, without its defaults list (and Hydra's own settings)."""
    return {k: v for k, v in raw.items() if k not in ("defaults", "hydra")}


def compose_raw(conf: Path, overrides: list[str]) -> dict:
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=False)


def params_defaults(study_target: str) -> dict[str, object]:
    params = typing.get_type_hints(import_path(study_target))["params"]
    out = {}
    for f in dataclasses.fields(params):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def duplicates(rel: str, conf: Path) -> list[str]:
    """The keys `rel` sets to the value they would have without it."""
    path = conf / rel
    text = path.read_text()
    raw = yaml.safe_load(text) or {}
    own = leaves(body(raw))
    overrides, node = where(rel)
    kept = {"defaults": raw["defaults"]} if "defaults" in raw else {}
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("# @package"))
    path.write_text(header + yaml.safe_dump(kept))
    try:
        without = leaves(compose_raw(conf, overrides))
    finally:
        path.write_text(text)
    study = own.get("study._target_", without.get("study._target_"))
    found = []
    for key, value in own.items():
        at = f"{node}.{key}" if node else key
        if at.startswith("study.params."):
            name = at.removeprefix("study.params.")
            default = params_defaults(study).get(name, object())
            if value == default and type(value) is type(default):
                name = import_path(study).name
                found.append(f"{at}: {value!r} is the {name} Params default")
        elif at in without and without[at] == value and not at.startswith("hydra."):
            found.append(f"{at}: {value!r} is what it gets without {rel}")
    return found


@pytest.fixture(scope="module")
def conf_copy(tmp_path_factory) -> Path:
    copy = tmp_path_factory.mktemp("conf") / "conf"
    shutil.copytree(CONF, copy)
    return copy


@pytest.mark.parametrize("rel", FILES)
def test_a_yaml_sets_only_what_differs_from_where_its_keys_come_from(rel, conf_copy):
    assert duplicates(rel, conf_copy) == []


def test_the_check_finds_a_value_stated_twice(conf_copy):
    gate = conf_copy / "gate" / "ragscope_c.yaml"
    text = gate.read_text()
    gate.write_text(text + "max_iter: 1000  # LogitGate's default, restated\n")
    try:
        assert duplicates("gate/ragscope_c.yaml", conf_copy) == [
            "gates.probe.max_iter: 1000 is what it gets without gate/ragscope_c.yaml"
        ]
    finally:
        gate.write_text(text)
    experiment = conf_copy / "experiment" / "rq1_cheap_signals.yaml"
    text = experiment.read_text()
    gates = "  gates: ${gates}"
    experiment.write_text(text.replace(gates, f"{gates}\n  params:\n    timing_rows: 540", 1))
    try:
        found = duplicates("experiment/rq1_cheap_signals.yaml", conf_copy)
        assert found == ["study.params.timing_rows: 540 is the rq1_cheap_signals Params default"]
    finally:
        experiment.write_text(text)


SEED_LITERAL = re.compile(r"(?<![\w.])13(?![\w.])")


def test_the_seed_is_written_once_in_the_code():
    hits = []
    for path in sorted((PROJECT_ROOT / "src" / "runner").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if SEED_LITERAL.search(code) and "13: 1.56" not in code:  # AHP's random index
                hits.append(f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}")
    assert len(hits) == 1, hits
    assert hits[0].startswith("src/runner/settings.py:") and hits[0].endswith("SEED = 13")


def test_every_seed_in_conf_follows_the_master_seed():
    found = []
    for path in sorted(CONF.rglob("*.yaml")):
        for key, value in leaves(yaml.safe_load(path.read_text()) or {}).items():
            if key.rsplit(".", 1)[-1] in ("seed", "random_state"):
                found.append((path.relative_to(CONF).as_posix(), key, value))
    assert found and all(value == "${seed}" for _, _, value in found), found
