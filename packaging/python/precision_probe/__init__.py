"""precision-probe: which numeric precisions this machine can really train in.

The wheel carries the probe and its engine, built for glibc 2.28 (manylinux_2_28, PyTorch's own
floor), in this package: ``bin/precision-probe`` and
``libexec/precision-probe/precision-probe-engine`` (where the probe looks for its engine).

``precision-probe`` on PATH (pip's console script) and ``python -m precision_probe`` are this
launcher: it runs the bundled probe with PRECISION_PROBE_PYTHON set to this interpreter
(sys.executable), unless it is set already, so that the torch the probe checks, right after
PRECISION_PROBE_TORCH, is the one this Python's training imports (docs/images.md).
"""

import os
import sys

__version__ = "@VERSION@"

# A bundled binary that cannot be started is an environment problem: exit 3 (docs/exit-codes.md).
_EXIT_ENVIRONMENT = 3


def probe_path():
    """The bundled probe's path."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "precision-probe")


def main(argv=None):
    """Replaces this process with the bundled probe, given `argv` (default: sys.argv[1:])."""
    args = sys.argv[1:] if argv is None else list(argv)
    probe = probe_path()
    if not os.environ.get("PRECISION_PROBE_PYTHON") and sys.executable:
        os.environ["PRECISION_PROBE_PYTHON"] = sys.executable
    try:
        os.execv(probe, [probe] + args)
    except OSError as error:
        sys.stderr.write(
            "precision-probe: error: the bundled probe %s cannot be started (%s): reinstall the "
            "wheel (pip install --force-reinstall precision-probe), or use the tarball\n"
            % (probe, error.strerror or error))
        return _EXIT_ENVIRONMENT
