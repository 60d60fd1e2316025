"""Shared test helpers: running node once for a batch of differential cases."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

NODE = shutil.which("node")

requires_node = pytest.mark.skipif(
    NODE is None, reason="node is not on PATH: the differential tests compare against node itself"
)


def run_node(script: str, cases: list[Any]) -> list[Any]:
    """Run ``script`` in node with ``cases`` (JSON) as the global ``CASES``; return its results.

    The script must evaluate ``RESULTS`` (a list, one entry per case). One process per batch.
    """
    assert NODE is not None
    program = (
        "const CASES = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        f"{script}\n"
        "process.stdout.write(JSON.stringify(RESULTS));\n"
    )
    done = subprocess.run(
        [NODE, "-e", program],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    results: list[Any] = json.loads(done.stdout)
    return results
