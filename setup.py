"""The one part of the build pyproject.toml cannot declare stably: miofind's native launcher, a C extension
against CPython's limited API (one abi3 binary for CPython 3.10+). It is optional: without a C compiler
the install succeeds and launches go through ctypes and CuPy (``miofind.launch``)."""

from setuptools import Extension, setup

setup(
    # the source defines Py_LIMITED_API (3.10) itself
    ext_modules=[Extension("miofind._native", ["miofind/_native.c"], py_limited_api=True, optional=True,
                           extra_compile_args=["-O2"])],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
