"""``python -m deplbench.cli``: the same as the ``deplbench`` command."""

import sys

from deplbench.cli import main

sys.exit(main())
