import sys

from gradebench.cli import main

sys.exit(main())
