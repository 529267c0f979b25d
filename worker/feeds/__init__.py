"""Change feeds from the UFS (DESIGN.md, "Change feeds from the UFS"): the object store's own
events — SeaweedFS's filer subscription, a webhook — make outside writes visible at a sync
interval of -1. :mod:`worker.feeds.change` holds the event model and how events reach the
cache; one module per source."""
