"""An implementation whose import sleeps: in every process but the first to import it (a marker file in
$NANOLM_TEST_PIDS decides), or in all of them with NANOLM_TEST_SLEEP_ALL set — so that a signal lands while a
worker is still loading. Each importing process writes its pid there."""

import os
import time
from pathlib import Path

from nanolm_core import *  # noqa: F403

_pids = Path(os.environ["NANOLM_TEST_PIDS"])
(_pids / str(os.getpid())).write_text("importer")
try:
    (_pids / "first").open("x").close()  # the first importer loads at once
    _first = not os.environ.get("NANOLM_TEST_SLEEP_ALL")
except FileExistsError:
    _first = False
if _first:
    (_pids / "loaded").write_text("")
else:
    (_pids / "sleeping").write_text("")
    time.sleep(600)
