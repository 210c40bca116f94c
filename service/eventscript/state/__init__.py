"""Task state larger than memory: the local store of record, its changelog, a bounded cache of
hot instances and an index of the timers of the instances that are not in memory.

- :mod:`.changelog` — store keys, changelog positions (the ``es-pos`` header) and task-state
  records (record clock, repartition high-water marks, timer sequence);
- :mod:`.store` — :class:`~.store.TaskStore`, the task's RocksDB store (instances, task state,
  checkpoint, committed input position, timer index);
- :mod:`.timers` — :class:`~.timers.TimerIndex`, the timers of evicted instances, merged into the
  task's in-memory timer queue;
- :mod:`.cache` — :class:`~.cache.InstanceCache`, which keeps the engine's contexts bounded.

Nothing here knows Kafka: the worker (``eventscript.kafka``) and the backfill drive a task, and the
task drives these.
"""
