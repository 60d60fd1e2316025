"""``python -m adjudge.cli``: the same as the ``adjudge`` command."""

from adjudge.cli import main

main()
