"""The frozen app's entry point: the same `main` as the `parley` console script."""

import sys

from desktop.cli import main

if __name__ == "__main__":
    sys.exit(main())
