import sys

from hotstandby.cli import main

sys.exit(main())
