"""python -m precision_probe [ARGS...]: the bundled probe, as the precision-probe command."""

import sys

from precision_probe import main

sys.exit(main())
