"""``python -m deplbench``: the same as the ``deplbench`` command."""

from deplbench.cli import console_main

console_main()
