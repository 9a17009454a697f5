"""Build the private compiled kernels: every ``mantis_fast/<layer>/_name.pyx`` becomes the module
``mantis_fast.<layer>._name``, beside the Python wrapper that validates its inputs and the
``_name.pyi`` stub that types it.

OpenMP is used only when a probe compile with ``-fopenmp`` works; the kernels build and pass
without it. ``MANTIS_BUILD_ONLY=_resize,_coords`` limits a build to the named modules.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
SOURCES = sorted((HERE / "mantis_fast").rglob("_*.pyx"))
ONLY = {name for name in os.environ.get("MANTIS_BUILD_ONLY", "").split(",") if name}


def openmp_flags() -> list[str]:
    """Return ["-fopenmp"] when the C compiler can build and link an OpenMP program."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.errors import CompileError, LinkError
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    tmp = tempfile.mkdtemp()
    try:
        probe = os.path.join(tmp, "probe.c")
        with open(probe, "w") as f:
            f.write(
                "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
            )
        objects = compiler.compile([probe], output_dir=tmp, extra_postargs=["-fopenmp"])
        compiler.link_executable(objects, os.path.join(tmp, "probe"), extra_postargs=["-fopenmp"])
        return ["-fopenmp"]
    except (CompileError, LinkError):
        print("OpenMP probe failed: building kernels single-threaded", file=sys.stderr)
        return []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


OPENMP = openmp_flags()


def extension(pyx: Path) -> Extension:
    return Extension(
        ".".join(pyx.relative_to(HERE).with_suffix("").parts),
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3", "-fno-strict-aliasing", *OPENMP],
        extra_link_args=OPENMP,
    )


class BuildExt(build_ext):
    """Compile the extensions in parallel: the machine's cores are the limit, not the files."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1


extensions = [extension(p) for p in SOURCES if not ONLY or p.stem in ONLY]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": 3, "embedsignature": True},
        quiet=True,
    ),
    cmdclass={"build_ext": BuildExt},
)
