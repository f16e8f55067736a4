"""Wake-ups: LISTEN/NOTIFY on PostgreSQL, an in-process hook on SQLite; polling covers the rest."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from seojobs.store.db import NOTIFY_CHANNEL, Database

log = logging.getLogger("seojobs.listener")


class Listener:
    def __init__(self, db: Database, wake: Callable[[], None]) -> None:
        self.db = db
        self.wake = wake
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # In-process wake-ups work on both dialects (a job enqueued by this process's API).
        self.db.add_wake_hook(self.wake)
        if self.db.dialect == "postgresql":
            self._thread = threading.Thread(target=self._listen, name="seojobs-listen", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self.db.remove_wake_hook(self.wake)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _listen(self) -> None:
        import psycopg  # server extra; only needed here

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.db.psycopg_conninfo(), autocommit=True) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    # Jobs may have arrived while we were not listening.
                    self.wake()
                    while not self._stop.is_set():
                        for _note in conn.notifies(timeout=0.5, stop_after=1):
                            self.wake()
            except Exception:
                log.warning("LISTEN connection lost; polling until it is back", exc_info=True)
                self._stop.wait(1.0)
