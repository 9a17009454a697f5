"""Build the private compiled kernels: every ``src_cython/<layer>/_name.pyx`` becomes the module
``mantis_fast.<layer>._name``, beside the Python wrapper that validates its inputs and the
``_name.pyi`` stub that types it. Hand-written C lives in real headers: beside the kernel that
uses it, or in ``src_cython/include/`` when several share it.

The generated C goes to ``build/cython/``, never into the package or the wheel. OpenMP is used
when a probe compile with ``-fopenmp`` works (``MANTIS_OPENMP=0`` turns it off); the kernels
build and pass without it. Debug info is left out (``MANTIS_DEBUG_SYMBOLS=1`` keeps it).
``MANTIS_BUILD_ONLY=_resize,_coords`` limits a build to the named modules.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
KERNELS = Path("src_cython")  # relative: setuptools wants relative source paths
INCLUDE = KERNELS / "include"
SOURCES = sorted(p.relative_to(HERE) for p in (HERE / KERNELS).rglob("_*.pyx"))
ONLY = {name for name in os.environ.get("MANTIS_BUILD_ONLY", "").split(",") if name}

if not SOURCES:
    # An sdist or checkout without the kernels would otherwise build a pure-Python wheel that
    # installs everywhere and fails on import.
    sys.exit(f"setup.py: no Cython kernels under {HERE / KERNELS}: the source tree is incomplete")

# The build tools come after that check, so an incomplete tree says so even without them.
import numpy as np  # noqa: E402
from Cython.Build import cythonize  # noqa: E402
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402


def openmp_flags() -> list[str]:
    """Return ["-fopenmp"] when the C compiler can build and link an OpenMP program."""
    if os.environ.get("MANTIS_OPENMP", "1") == "0":
        print("MANTIS_OPENMP=0: building kernels without OpenMP", file=sys.stderr)
        return []
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
DEBUG = [] if os.environ.get("MANTIS_DEBUG_SYMBOLS") == "1" else ["-g0"]


def extension(pyx: Path) -> Extension:
    return Extension(
        ".".join(("mantis_fast", *pyx.relative_to(KERNELS).with_suffix("").parts)),
        [str(pyx)],
        include_dirs=[np.get_include(), str(INCLUDE), str(pyx.parent)],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3", "-fno-strict-aliasing", *DEBUG, *OPENMP],
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
        build_dir="build/cython",
        include_path=[str(INCLUDE)],
        compiler_directives={"language_level": 3, "embedsignature": True},
        quiet=True,
    ),
    cmdclass={"build_ext": BuildExt},
)
