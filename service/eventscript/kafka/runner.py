"""The worker process's old module name: what starts, watches and stops a topology's workers is in
``kafka/supervisor.py`` (issue 19 renamed it; three unrelated ``runner.py`` files were one too
many). Kept so that code importing the old name still works."""

from .supervisor import GRACE_SECONDS, TopologyRunner, compile_programs, instance_id

__all__ = ["GRACE_SECONDS", "TopologyRunner", "compile_programs", "instance_id"]
