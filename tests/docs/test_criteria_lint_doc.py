"""The criteria reference's lint walk-through runs as written, and its table names every code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adjudge.autocheck.lint import CODES

REFERENCE = Path(__file__).parent.parent.parent / "docs" / "guide" / "criteria.md"
SECTION = REFERENCE.read_text(encoding="utf-8").split("\n## Check your criteria before you post\n")[
    1
]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
BLOCKS = BLOCK.findall(SECTION)
#: Each `sh` block and the output block that follows it.
STEPS = [(body, BLOCKS[i + 1][1]) for i, (kind, body) in enumerate(BLOCKS) if kind == "sh"]


def test_the_walk_through_has_its_steps() -> None:
    """Three commands, each followed by what it prints."""
    assert len(STEPS) == 3
    assert all(kind in ("sh", "text", "json") for kind, _ in BLOCKS)


def test_the_walk_through_prints_what_the_page_says(tmp_path: Path) -> None:
    """Each `sh` block, run in order in one directory at 100 columns, prints the block below it."""
    env = {
        **os.environ,
        "COLUMNS": "100",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("FORCE_COLOR", None)
    for command, expected in STEPS:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.stderr == ""
        assert done.stdout == expected, command


@pytest.mark.parametrize("code", CODES)
def test_every_code_is_in_the_table(code: str) -> None:
    """Each finding code has its row, with the rule it rests on."""
    assert re.search(rf"^\| `{code}` \|", SECTION, re.M), code
