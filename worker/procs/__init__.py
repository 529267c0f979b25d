"""Several processes serving one worker's port (``dora.worker.processes``): the primary, which
owns all state, and front processes that answer the hot read routes the way a same-host client
would (near-cache, short-circuit page reads) and pass everything else to the primary."""
