"""Load jobs: prewarming metadata and pages in the background (see :mod:`worker.load.manager`)."""

from worker.load.job import JobState, LoadJob
from worker.load.manager import LoadManager, LoadRejected

__all__ = ["JobState", "LoadJob", "LoadManager", "LoadRejected"]
