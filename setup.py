"""Thin setuptools front: CMake builds the one extension module, fxinplace._C."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent.resolve()


def _build_key() -> str:
    """A build directory per interpreter and torch: a CMake cache configured for
    another environment would silently compile against that environment's torch."""
    import torch

    identity = f"{sys.executable}|{torch.__version__}|{torch.__file__}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    return f"python-{sys.implementation.cache_tag}-torch{torch.__version__}-{digest}"


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        out_dir = Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_dir = Path(os.environ.get("FXINPLACE_BUILD_DIR", ROOT / "build" / _build_key())).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake",
            str(ROOT),
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}",
            "-DFXINPLACE_BUILD_TESTS=OFF",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        subprocess.run(configure, cwd=build_dir, check=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(["cmake", "--build", ".", "--target", "_C", "-j", jobs], cwd=build_dir, check=True)


setup(
    package_dir={"": "python"},
    # fxinplace/_C/ holds the extension's stubs, a .pyi a submodule: a folder of data beside
    # _C*.so (which Python imports first), listed so that setuptools ships it as such.
    packages=[*find_packages("python"), "fxinplace._C"],
    package_data={"fxinplace": ["py.typed"], "fxinplace._C": ["*.pyi"]},
    ext_modules=[CMakeExtension("fxinplace._C")],
    cmdclass={"build_ext": CMakeBuild},
)
