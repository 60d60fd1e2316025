"""The engine a verdict is re-derived with: adjudge's version and its Unicode tables.

The auto check reads text through character data frozen at one Unicode version (its generated
tables, and ``unicodedata2`` for NFKC and NFKD), whatever the interpreter's own version is. Two
engines that agree on these three strings run the same rules over the same character data, so
the same inputs give the same verdict byte for byte; an engine that differs in one of them may
not, and a replay names which.
"""

from __future__ import annotations

from typing import Final

import unicodedata2

from adjudge.autocheck._unicode_tables import UNICODE_VERSION

#: The names of an engine's parts, in the order a replay reports them.
PARTS: Final = ("adjudge", "unicode", "normalization")

#: What each part is, as a replay explains a difference in it.
MEANING: Final = {
    "adjudge": "adjudge version",
    "unicode": "Unicode version of the auto check's character tables",
    "normalization": "Unicode version of NFKC/NFKD (unicodedata2)",
}


def engine() -> dict[str, str]:
    """This engine: ``adjudge`` (the package version), ``unicode`` (the auto check's generated
    character tables) and ``normalization`` (the NFKC/NFKD data)."""
    # Imported at call time: the package root may itself still be importing this module.
    from adjudge import __version__  # noqa: PLC0415

    return {
        "adjudge": __version__,
        "unicode": UNICODE_VERSION,
        "normalization": str(unicodedata2.unidata_version),
    }
