"""``python -m viewer --world village``: the viewer without the ``goap`` command."""

import sys

from viewer.app import main

sys.exit(main())
