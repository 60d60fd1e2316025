"""Regenerate ``src/adjudge/autocheck/_unicode_tables.py``: the Unicode 17.0 data the check reads.

The reference checker runs on Unicode 17.0 (its JavaScript engine's ICU); the interpreter may
know an older version (Python 3.11 knows 14.0). Every class the auto check reads is written out
here at 17.0, so the check does not depend on the interpreter's Unicode version. The sources,
pinned in ``pyproject.toml``:

- ``unicodedata2`` (17.0): the general categories (``Cf``, ``M``, ``N``, ``L``, ``Lu``/``Ll``) and
  which code points are assigned in 17.0 (NFKC and NFKD come from it at run time);
- ``regex``: the Script, Cased and Case_Ignorable properties and simple case folding. It knows a
  later Unicode version, so each of its classes is cut to the code points assigned in 17.0;
- case mappings: the interpreter's ``str.lower``/``str.upper`` for the characters it knows (the
  mappings of an assigned character do not change between versions), and for characters added
  since, the case partner simple case folding pairs them with.

``tests/autocheck/test_unicode17.py`` checks every table against node's own Unicode 17 data.
Run: ``python scripts/gen_unicode_tables.py`` (under an interpreter of Unicode 17.0 or older).
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import regex
import unicodedata2

OUT = Path(__file__).parent.parent / "src" / "adjudge" / "autocheck" / "_unicode_tables.py"
VERSION = "17.0.0"
CODE_POINTS = [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
SIGMA, FINAL_SIGMA = "\u03a3", "\u03c2"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def assigned(c: str) -> bool:
    """Whether ``c`` is assigned in Unicode 17.0."""
    return unicodedata2.category(c) != "Cn"


def ranges(test: Callable[[str], bool]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = None
    for cp in range(sys.maxunicode + 2):
        ok = cp <= sys.maxunicode and not 0xD800 <= cp <= 0xDFFF and test(chr(cp))
        if ok and start is None:
            start = cp
        elif not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def esc(cp: int) -> str:
    if 0x20 <= cp < 0x7F and chr(cp) not in '\\"-[]^':
        return chr(cp)
    return f"\\U{cp:08x}" if cp > 0xFFFF else f"\\u{cp:04x}"


def as_class(spans: list[tuple[int, int]]) -> str:
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in spans)


def case_maps() -> tuple[dict[str, str], dict[str, str]]:
    """Unicode 17.0's full lowercase and uppercase mappings (the characters they change)."""
    known = {chr(cp) for cp in CODE_POINTS if unicodedata.category(chr(cp)) != "Cn"}
    lower = {c: c.lower() for c in known if c.lower() != c}
    upper = {c: c.upper() for c in known if c.upper() != c}
    cased = "".join(
        chr(cp) for cp in CODE_POINTS if unicodedata2.category(chr(cp)) in ("Lu", "Ll", "Lt")
    )
    for cp in CODE_POINTS:
        c = chr(cp)
        category = unicodedata2.category(c)
        if c in known or category not in ("Lu", "Ll", "Lt"):
            continue
        partners = [x for x in regex.findall("(?i)" + regex.escape(c), cased) if x != c]
        if category in ("Lu", "Lt"):
            for small in (x for x in partners if unicodedata2.category(x) == "Ll"):
                lower[c] = small
                upper.setdefault(small, c)
        else:
            for capital in (x for x in partners if unicodedata2.category(x) == "Lu"):
                upper[c] = capital
                lower.setdefault(capital, c)
    return lower, upper


def sigma_final(text: str, i: int, cased: Callable[[str], bool], ci: Callable[[str], bool]) -> bool:
    """Unicode's Final_Sigma condition for the capital sigma at ``text[i]``."""
    j = i - 1
    while j >= 0 and ci(text[j]):
        j -= 1
    if j < 0 or not cased(text[j]):
        return False
    k = i + 1
    while k < len(text) and ci(text[k]):
        k += 1
    return k == len(text) or not cased(text[k])


def lowering_differs(
    lower: dict[str, str], cased: Callable[[str], bool], ci: Callable[[str], bool]
) -> Callable[[str], bool]:
    """Whether a text holding ``c`` may lowercase differently in this interpreter than in 17.0:
    its own mapping differs, or it decides a final sigma differently (Cased, Case_Ignorable)."""

    def differs(c: str) -> bool:
        if c.lower() != lower.get(c, c):
            return True
        # Each probe: the text, where its sigma is, and where its lowercase is in the result.
        for probe, at, lowered_at in (
            (c + SIGMA, -1, -1),
            ("A" + c + SIGMA, -1, -1),
            ("A" + SIGMA + c, 1, 1),
        ):
            final = sigma_final(probe, at % len(probe), cased, ci)
            if (probe.lower()[lowered_at] == FINAL_SIGMA) != final:
                return True
        return False

    return differs


def as_pairs(mapping: dict[str, str]) -> str:
    """``char`` + ``mapping`` per entry, entries joined by a space (no mapping holds one)."""
    return " ".join("".join(esc(ord(ch)) for ch in k + v) for k, v in sorted(mapping.items()))


def main() -> None:
    if unicodedata2.unidata_version != VERSION:
        raise SystemExit(f"unicodedata2 knows {unicodedata2.unidata_version}, not {VERSION}")
    if _version(unicodedata.unidata_version) > _version(VERSION):
        raise SystemExit("run under an interpreter of Unicode 17.0 or older (see the docstring)")
    script = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]")
    cased_re = regex.compile(r"\p{Cased}")
    ci_re = regex.compile(r"\p{Case_Ignorable}")

    def cased(c: str) -> bool:
        return assigned(c) and cased_re.match(c) is not None

    def ci(c: str) -> bool:
        return assigned(c) and ci_re.match(c) is not None

    lower, upper = case_maps()
    tables = {
        "FORMAT": ranges(lambda c: unicodedata2.category(c) == "Cf"),
        "MARK": ranges(lambda c: unicodedata2.category(c).startswith("M")),
        "NUMBER": ranges(lambda c: unicodedata2.category(c).startswith("N")),
        # \p{L} and \p{N} beyond ASCII (ASCII letters and digits are tested on their own).
        "ALNUM": ranges(lambda c: ord(c) > 0x7F and unicodedata2.category(c)[0] in "LN"),
        "CJK": ranges(lambda c: assigned(c) and script.match(c) is not None),
        "CASED": ranges(cased),
        "CASE_IGNORABLE": ranges(ci),
        "LOWER_DIFFERS": ranges(lowering_differs(lower, cased, ci)),
    }
    lines = [
        '"""Unicode 17.0 character data for the auto check, generated by',
        'scripts/gen_unicode_tables.py: do not edit."""',
        "",
        f'UNICODE_VERSION = "{VERSION}"',
        "#: The interpreter's Unicode version LOWER_DIFFERS was computed against.",
        f'BASE_UNICODE_VERSION = "{unicodedata.unidata_version}"',
        "",
        "# Classes as ``re`` source. ``re`` matches a class of BMP characters with a bitmap, but",
        "# falls back to a linear list of ranges as soon as one astral range is in it: each is",
        "# split so the hot path can use the fast half unless the text has astral characters.",
        "# LOWER_DIFFERS: the characters whose presence may make the base interpreter's",
        "# str.lower() differ from Unicode 17.0's (their own mapping, or a final sigma by them).",
    ]
    for name, spans in tables.items():
        bmp = [(a, min(b, 0xFFFF)) for a, b in spans if a <= 0xFFFF]
        astral = [(max(a, 0x10000), b) for a, b in spans if b > 0xFFFF]
        lines.append(f'{name} = "{as_class(bmp)}"  # noqa: E501')
        lines.append(f'{name}_ASTRAL = "{as_class(astral)}"  # noqa: E501')
    lines += [
        "",
        "# Full case mappings, as ``char + mapping`` entries joined by spaces: LOWER for every",
        "# character whose lowercase is another, UPPER for the BMP ones whose uppercase is.",
        f'LOWER = "{as_pairs(lower)}"  # noqa: E501',
        f'UPPER = "{as_pairs({k: v for k, v in upper.items() if ord(k) <= 0xFFFF})}"  # noqa: E501',
    ]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
