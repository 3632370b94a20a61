"""Imports point down only: simhpc -> scheduler -> apps -> models -> pdes.

Every module of the five packages is parsed (not imported), and every import in it, at module
level or inside a function, is checked against the layer order; relative imports are resolved
against the module's own package. And no package exports a name that one of its own modules
shadows once imported.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The layers, top first; each may import the ones after it.
LAYERS = ("simhpc", "scheduler", "apps", "models", "pdes")


def _modules(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def _imported(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file."""
    package = list(path.relative_to(root).parent.parts)  # what "." means in this module
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _violations(package: str, root: Path = ROOT) -> list[str]:
    above = set(LAYERS[: LAYERS.index(package)])
    bad = []
    for path in _modules(package, root):
        for line, name in _imported(path, root):
            top = name.split(".")[0]
            if top in above:
                bad.append(f"{path.relative_to(root)}:{line}: imports {name}")
    return bad


@pytest.mark.parametrize("package", LAYERS)
def test_imports_point_down_only(package):
    assert _modules(package), f"no modules found in {package}/"
    bad = _violations(package)
    assert not bad, f"{package} may import only {', '.join(LAYERS[LAYERS.index(package) + 1:]) or 'none of the others'}:\n" + "\n".join(bad)


# A module named like one of its package's lazy exports replaces the export once it is imported
# (the import system binds each submodule on its package): ``pkg.replay(...)`` would then call a
# module (the replay modules are named replay_engine and trace_replay for this reason).
@pytest.mark.parametrize("package", LAYERS)
def test_exported_names_are_not_shadowed_by_submodules(package):
    pkg = importlib.import_module(package)
    for m in pkgutil.walk_packages(pkg.__path__, package + "."):
        if not m.name.endswith(".__main__"):
            importlib.import_module(m.name)
    shadowed = [n for n in getattr(pkg, "__all__", ()) if inspect.ismodule(getattr(pkg, n, None))]
    assert not shadowed, f"{package}: exports that are now modules: {shadowed}"


def test_relative_imports_resolve_to_the_right_package():
    # simhpc/experiment/spec.py: "from ..traces import check_trace" is simhpc.traces.
    names = [n for _, n in _imported(ROOT / "simhpc" / "experiment" / "spec.py")]
    assert "simhpc.traces" in names
    # An __init__ module's "from .x import y" is the package's own x.
    names = [n for _, n in _imported(ROOT / "simhpc" / "experiment" / "__init__.py")]
    assert "simhpc.experiment.toml_io" in names


def test_the_check_sees_function_local_and_relative_imports(tmp_path):
    (tmp_path / "models" / "sub").mkdir(parents=True)
    (tmp_path / "models" / "sub" / "x.py").write_text(
        "import numpy\nfrom pdes import Entity\nfrom . import y\n\n"
        "def f():\n    from scheduler.job import Job\n    import apps.mpi as m\n")
    assert _violations("models", tmp_path) == ["models/sub/x.py:6: imports scheduler.job",
                                              "models/sub/x.py:7: imports apps.mpi"]
    assert _violations("simhpc", tmp_path) == []
