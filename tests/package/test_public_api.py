"""The public surface a reader can hold: ``import mantis_fast as mf`` gives the main path of an
agent loop (about 35 names), every other public name lives in its layer's namespace, the names
that moved still work for one release with a ``DeprecationWarning``, and every top-level name is
documented in numpydoc sections (what the API reference is generated from)."""

from __future__ import annotations

import enum
import importlib
import inspect
import pydoc
import subprocess
import sys
import warnings

import pytest
from numpydoc.validate import validate

import mantis_fast

# numpydoc's checks a reader relies on: no docstring, a parameter undocumented or documented
# but absent, an empty description, a value returned without a Returns section.
REQUIRED = {"GL08", "PR01", "PR02", "PR07", "RT01", "RT03"}


def test_the_top_level_is_the_main_path() -> None:
    namespace: dict[str, object] = {}
    exec("from mantis_fast import *", namespace)
    names = set(namespace) - {"__builtins__"}
    assert names == set(mantis_fast.__all__)
    assert 30 <= len(names) <= 40, len(names)
    for name in ("Xvfb", "Capture", "Input", "resize", "encode_png", "model_to_screen",
                 "scale_brain_to_display", "scale_points", "LoopDetector", "Action",
                 "Dispatcher", "MantisError", "InvalidInputError"):  # fmt: skip
        assert name in names


MOVED = sorted(
    (name, layer) for layer, names in mantis_fast._LAYERS.items() for name in names.split()
)


@pytest.mark.parametrize(("name", "layer"), MOVED, ids=[name for name, _ in MOVED])
def test_a_moved_name_warns_and_is_its_layers_object(name: str, layer: str) -> None:
    with pytest.deprecated_call(match=rf"mantis_fast\.{name} is deprecated.*{layer}\.{name}"):
        old = getattr(mantis_fast, name)
    assert old is getattr(importlib.import_module(layer), name)
    assert name not in mantis_fast.__all__


def test_a_moved_name_imported_with_from_warns_at_the_importing_line() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        from mantis_fast import Trajectory  # noqa: F401
    # Python's import looks the name up twice (``hasattr`` in importlib, then the binding);
    # the binding's warning names the importing line.
    deprecations = [w for w in seen if issubclass(w.category, DeprecationWarning)]
    assert deprecations and deprecations[-1].filename == __file__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mantis_fast.no_such_name  # noqa: B018


def test_importing_the_package_warns_nothing() -> None:
    """A fresh interpreter with every warning an error imports the package and its layers."""
    layers = ["x11", "pixels", "geometry", "loops", "actions", "errors", "platforms"]
    source = "import mantis_fast; " + "; ".join(f"import mantis_fast.{m}" for m in layers)
    subprocess.run([sys.executable, "-W", "error", "-c", source], check=True)


def _public_objects() -> list[str]:
    """Dotted paths of every top-level name that numpydoc can validate, and the public methods
    and properties of the classes among them (what the reference shows)."""
    paths = []
    for name in mantis_fast.__all__:
        obj = getattr(mantis_fast, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or callable(obj)):
            continue  # constants
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue  # the errors: one-line docstrings, documented in docs/errors.md
        path = f"{obj.__module__}.{obj.__qualname__}"
        paths.append(path)
        if inspect.isclass(obj):  # its own methods and those its package's bases give it
            for owner in obj.__mro__:
                if not owner.__module__.startswith("mantis_fast."):
                    continue
                for attr, value in vars(owner).items():
                    if attr.startswith("_") or not (inspect.isfunction(value) or isinstance(
                        value, (property, classmethod, staticmethod))):  # fmt: skip
                        continue
                    paths.append(f"{owner.__module__}.{owner.__qualname__}.{attr}")
    return sorted(set(paths))


@pytest.mark.parametrize("path", _public_objects())
def test_every_top_level_name_is_documented_in_numpydoc_sections(path: str) -> None:
    required = REQUIRED
    documented = pydoc.locate(path)
    if inspect.isclass(documented) and issubclass(documented, enum.Enum):
        required = REQUIRED - {"PR01"}  # numpydoc reads Enum's functional-API constructor
    errors = [f"{code}: {message}" for code, message in validate(path)["errors"]]
    missing = [e for e in errors if e.split(":")[0] in required]
    assert not missing, f"{path}: {missing}"
