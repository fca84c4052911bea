"""Multi-rank triage: ``graphlint trace TARGET --nproc N`` and ``torchrun ... -m graphlint trace``.

Every rank of the ``torch.distributed`` job runs the ordinary stage ladder; the pieces here make
it rank-aware and line the ranks up afterwards:

- ``job``: which rank this process is (torchrun's environment) and the job folder the ranks share;
- ``rank_worker``: inside a rank's worker: the process group, the rank's facts, its collectives,
  and a progress watcher (where the rank is, and since when);
- ``collectives`` / ``stacks``: collective ops in recorded FX graphs, and where a stack dump is;
- ``rank_run``: one rank's ladder, stopped when a peer dies or hangs; rank 0 then merges;
- ``divergence`` / ``hangs`` / ``merge``: the ``distributed`` findings and the merged report;
- ``launch``: ``--nproc N`` runs torch's own launcher (``torch.distributed.run``), nothing else.
"""
