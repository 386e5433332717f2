"""`make lint`'s own checks: an import cycle fails, an unused public name fails.

Each check runs on a tiny package written to a temporary folder, and on the project, as
`make lint` runs it: ``python scripts/<check>.py`` in a process of its own, judged by its exit
status and output. In the test process, ``ast.parse`` can fail for reasons that are no cycle
and no dead name: see `tests.conftest.run_script`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tests.conftest import ROOT, call_in_fresh_process, load_script, run_script

pytestmark = pytest.mark.slow  # every test runs a lint script in a process of its own

dead_code = load_script("dead_code")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# --------------------------------------------------------------------------- import cycles


def test_two_modules_importing_each_other_fail_naming_both_and_the_lines(tmp_path):
    src = write(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import g\n\ndef f():\n    return g\n",
            "pkg/b.py": "def g():\n    from pkg import a  # a lazy import is a dependency too\n",
        },
    )
    result = run_script("check_imports", str(src), "pkg")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "import cycle: pkg.a <-> pkg.b" in out
    assert "a.py:1: pkg.a imports pkg.b" in out and "b.py:2: pkg.b imports pkg.a" in out


def test_a_module_importing_its_own_package_is_a_cycle(tmp_path):
    src = write(
        tmp_path / "src",
        {
            "pkg/__init__.py": "from pkg.contract import names\n",
            "pkg/contract.py": "def names():\n    import pkg\n    return pkg.__path__\n",
        },
    )
    result = run_script("check_imports", str(src), "pkg")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "import cycle: pkg <-> pkg.contract" in result.stdout


def test_imports_pointing_one_way_and_type_checking_imports_pass(tmp_path):
    src = write(
        tmp_path / "src",
        {
            "pkg/__init__.py": "from pkg.a import f\n",
            "pkg/a.py": "from pkg.b import g\n\ndef f():\n    return g\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.a import f\n"
                "def g():\n    return 1\n"
            ),
        },
    )
    result = run_script("check_imports", str(src), "pkg")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 import cycles among 3 modules" in result.stdout


def test_the_project_has_no_import_cycle():
    result = run_script("check_imports")
    assert result.returncode == 0, result.stdout + result.stderr
    modules = len(list((ROOT / "src" / "runner").rglob("*.py")))
    assert result.stdout.splitlines()[-1] == f"0 import cycles among {modules} modules"


# --------------------------------------------------------------------------- dead code


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A package whose every public name has a user: another module, its own module, a
    Hydra ``_target_``, a ``module:Name`` string, ``__all__``, a script, a registration."""
    return write(
        tmp_path,
        {
            "src/pkg/__init__.py": '"""A package."""\n\n__all__ = ["exported"]\n',
            "src/pkg/core.py": """\
                \"\"\"Core.\"\"\"
                LIMIT = 3


                def used_elsewhere():
                    return helper()


                def helper():
                    return LIMIT


                def exported():
                    pass


                def loaded_by_hydra():
                    pass


                class Base:
                    def __init_subclass__(cls, name=None):
                        pass


                class Registered(Base, name="registered"):
                    pass


                class Schema:
                    pass
                """,
            "src/pkg/user.py": (
                "from pkg.core import used_elsewhere\n\n"
                'SCHEMAS = ["pkg.core:Schema"]\n\n\n'
                "def run():\n    return used_elsewhere(), SCHEMAS\n"
            ),
            "scripts/tool.py": "from pkg.user import run\n\nrun()\n",
            "conf/part.yaml": "_target_: pkg.core.loaded_by_hydra\n",
        },
    )


def test_a_project_whose_names_are_all_used_passes(project):
    result = run_script("dead_code", "--root", str(project), "--package", "pkg")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 problems" in result.stdout


def test_a_function_nothing_calls_fails_and_a_test_is_no_user(project):
    core = project / "src/pkg/core.py"
    core.write_text(
        core.read_text() + '\n\ndef forgotten():\n    """Named in a docstring: `forgotten`."""\n'
    )
    write(project, {"tests/test_core.py": "from pkg.core import forgotten\n\nforgotten()\n"})
    result = run_script("dead_code", "--root", str(project), "--package", "pkg")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "src/pkg/core.py:34: pkg.core.forgotten is never used (tests do not count)" in out
    assert "1 problems" in out


def test_a_function_used_only_by_its_own_definition_is_dead(project):
    core = project / "src/pkg/core.py"
    core.write_text(core.read_text() + "\n\ndef recursive(n):\n    return recursive(n - 1)\n")
    result = run_script("dead_code", "--root", str(project), "--package", "pkg")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pkg.core.recursive is never used" in result.stdout


def unused_messages(root: str, allowed: dict[str, str]) -> list[str]:
    """What `dead_code.unused` finds in package ``pkg`` under `root` with `allowed` as its
    allowlist (called through `call_in_fresh_process`: it parses source)."""
    return [message for _, _, message in dead_code.unused(Path(root), "pkg", allowed)]


def test_an_allowed_name_needs_its_reason_to_stay_true(project):
    gone = {"pkg.core.nothing": "a reason"}
    found = call_in_fresh_process(unused_messages, str(project), gone)
    assert found == ["pkg.core.nothing is in ALLOWED but not defined: remove it"]
    used = {"pkg.core.helper": "a reason"}
    found = call_in_fresh_process(unused_messages, str(project), used)
    assert found == ["pkg.core.helper is used: remove it from ALLOWED"]


def test_the_project_has_no_unused_public_name_and_every_allowance_has_a_reason():
    result = run_script("dead_code")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("0 problems (")
    assert all(reason.strip() for reason in dead_code.ALLOWED.values())
    assert dead_code.ROOT == ROOT
