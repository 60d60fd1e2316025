"""The stage timers are off unless the edge turns them on (no environment is read), and on they
write each stage's CPU time and count at exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import sys
from pathlib import Path
from adjudge.app import timing
assert not timing.enabled()  # ADJUDGE_STAGE_TIMES is in the environment: it is not read here
if sys.argv[1] == "on":
    timing.enable(Path(sys.argv[2]))
for _ in range(3):
    with timing.stage("work"):
        sum(range(1000))
"""


def test_the_timers_run_only_when_enabled(tmp_path: Path) -> None:
    """Enabled, the file holds the stage's count; not enabled, nothing is written even with the
    old variable set."""
    out = tmp_path / "stages.json"
    env = {**os.environ, "ADJUDGE_STAGE_TIMES": str(tmp_path / "ignored.json")}
    for mode in ("off", "on"):
        subprocess.run(
            [sys.executable, "-c", _SCRIPT, mode, str(out)], check=True, env=env, timeout=60
        )
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["stages"]["work"]["count"] == 3 and report["stages"]["work"]["cpu_ns"] > 0
    assert not (tmp_path / "ignored.json").exists()
