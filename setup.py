"""The one compiled part of adjudge, declared here because pyproject.toml cannot yet do it stably.

The auto check's one-pass text functions (src/adjudge/autocheck/_speedups.c). Optional: where
it cannot be compiled, the install goes on and adjudge.autocheck.chars uses their ``re`` twins.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "adjudge.autocheck._speedups",
            ["src/adjudge/autocheck/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
