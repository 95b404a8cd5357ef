"""The Jepsen-style test of the real `meridian` binary (tests/jepsen/run).

Modules, in the order a run uses them:
  resp      a minimal RESP2 client with a timeout on every call (stdlib only)
  cluster   the world: network namespaces or loopback, moto's S3, the nodes, the proxies
  proxy     the delaying proxy every peer link goes through (its own process)
  nemesis   the seeded fault schedule: partitions, latency, kill, pause, S3 outage, clock
  workload  the clients and the history they record (invoke / ok / fail / info, times)
  checker   what must hold once everything is healed and converged
"""
