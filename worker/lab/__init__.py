"""A lab of emulated hosts on one Linux machine: network namespaces on a bridge, each host its
own address and its own mount namespace, running SeaweedFS, etcd and workers as separate hosts
would (:mod:`worker.lab.netns` makes the hosts, :mod:`worker.lab.lab` runs the servers)."""
