"""Sphinx configuration: the guide pages (Markdown, through MyST) and the API reference built from
the numpydoc docstrings of the public names (`make docs`, warnings are errors)."""

from __future__ import annotations

import importlib.metadata

project = "mantis_fast"
author = "the mantis_fast authors"
release = importlib.metadata.version("mantis_fast")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "img/*.md"]

# The reference documents what users import; the signatures come from the code (and the
# compiled kernels' .pyi stubs through the public wrappers).
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
# An override without a docstring of its own (Gymnasium's vector env methods) shows none rather
# than its base class's, written for another docs toolchain.
autodoc_inherit_docstrings = False
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = "mantis_fast"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}


def _write_top_level_page() -> None:
    """``api/top.rst``: every name of ``mantis_fast.__all__``, linked to its entry on its layer's
    page (each object is documented once, where it is defined), written from the package
    itself so the list cannot go stale."""
    import inspect
    from pathlib import Path

    import mantis_fast

    rows = []
    for name in sorted(mantis_fast.__all__, key=str.lower):
        obj = getattr(mantis_fast, name)
        if inspect.isclass(obj):
            role, target = ("exc" if issubclass(obj, BaseException) else "class"), obj
        elif callable(obj):
            role, target = "func", obj
        else:
            rows.append(f"   * - ``{name}``\n     - {name} = {obj!r}")
            continue
        summary = (inspect.getdoc(target) or "").split("\n\n")[0].replace("\n", " ")
        rows.append(
            f"   * - :{role}:`{name} <{target.__module__}.{target.__qualname__}>`\n"
            f"     - {summary}"
        )
    text = (
        "mantis_fast (the main path)\n===========================\n\n"
        ".. automodule:: mantis_fast\n   :no-members:\n\n"
        "Every name ``import mantis_fast as mf`` gives, with the page of the layer that "
        "defines it.\n\n.. list-table::\n   :widths: 30 70\n\n" + "\n".join(rows) + "\n"
    )
    page = Path(__file__).with_name("api") / "top.rst"
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


_write_top_level_page()
