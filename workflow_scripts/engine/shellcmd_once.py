"""A job's record formats its shell command once, not three times.

`Job.log_info` (the record of a job a dry run lists, and a run prints as the job starts) reads
the `shellcmd` property three times: for the record's fields, the "Shell command" line and
its event. Each read formats the rule's command anew from the job's inputs, outputs, params,
wildcards and the workflow's globals: a tenth of a full-study dry run. While one job's record
is written, the first formatting is kept and read again; everywhere else, and for every other
job, `shellcmd` formats as Snakemake does (a retried job's resources, say, are read afresh).
An error formatting the command is raised as Snakemake raises it. `install()` is a no-op on a
Snakemake whose `Job` has no `shellcmd` property or no `log_info`.
"""

from __future__ import annotations

_UNREAD = object()


def install(job_class: type | None = None) -> bool:
    """Snakemake's `Job.log_info` (or ``job_class``'s) keeps its job's formatted shell command
    while it runs (once per process); False where the class lacks the expected members."""
    if job_class is None:
        from snakemake import jobs

        job_class = jobs.Job
    plain = job_class.__dict__.get("shellcmd")
    log_info = job_class.__dict__.get("log_info")
    if getattr(log_info, "_keeps_shellcmd", False):
        return True
    if not isinstance(plain, property) or not callable(log_info):
        return False
    held: dict[int, object] = {}  # id(job) -> its command, while that job's record is written

    def shellcmd(self):
        command = held.get(id(self), _UNREAD)
        if command is _UNREAD:
            command = plain.fget(self)
            if id(self) in held:
                held[id(self)] = command
        return command

    def keeping_log_info(self, *args, **kwargs):
        key = id(self)
        if key in held:  # a record inside this job's own record
            return log_info(self, *args, **kwargs)
        held[key] = _UNREAD
        try:
            return log_info(self, *args, **kwargs)
        finally:
            del held[key]

    keeping_log_info._keeps_shellcmd = True
    keeping_log_info.__doc__ = log_info.__doc__
    job_class.shellcmd = property(shellcmd, doc=plain.__doc__)
    job_class.log_info = keeping_log_info
    return True
