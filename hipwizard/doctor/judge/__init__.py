"""Judging the environment: the compatibility matrix (``matrix``), what kind of machine is being looked at
(``context``), the checks of the machine (``machine``), of the Python stack (``stack``) and of the sources'
agreement (``agreement``), run in checklist order by ``checklist.run_checks``; a crashing check is a warning."""
