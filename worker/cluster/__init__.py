"""Many workers as one cache, on etcd (DESIGN.md, "Many workers"; docs/consistency.md).

- :mod:`worker.cluster.etcd`: the etcd v3 client (etcd3gw over the grpc-gateway), its errors,
  and a watch stream that reports compaction;
- :mod:`worker.cluster.members`: worker entries in Alluxio's layout, registration under a lease,
  and the membership view clients build their hash ring from;
- :mod:`worker.cluster.events` / :mod:`worker.cluster.publisher` / :mod:`worker.cluster.follower`:
  the invalidation feed (events, batched publishing, ordered application with catch-up);
- :mod:`worker.cluster.node`: one worker's part in the cluster, wired by the worker process.
"""
