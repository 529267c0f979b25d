"""A lab of emulated hosts on one Linux machine: network namespaces on a bridge, each host its
own address and its own mount namespace, running SeaweedFS, etcd and workers as separate hosts
would (:mod:`worker.devlab.lab.netns` makes the hosts, :mod:`worker.devlab.lab.lab` runs the
servers)."""
