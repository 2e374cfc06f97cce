"""SleepJob: N pods from one template; the job succeeds when every pod has."""

from sleepjob.kind import SleepJobKind
from sleepjob.spec import SleepJobSpec

__all__ = ["SleepJobKind", "SleepJobSpec"]
