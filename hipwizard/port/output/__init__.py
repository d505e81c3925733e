"""The port's output room: the decisions written into the output folder, which is the user's working tree.

``apply`` (rebuild each file from its accepted hunks and write it; hand edits merged, never overwritten),
``worktree`` (what hipwizard wrote there, the user's edits since, conflicts and how they are settled) with
``worktree_hunks`` (those edits and conflicts as hunks), ``compile_check`` (hipcc over what was written).
Named ``output`` rather than ``write``: ``hipwizard.port.write`` is the service.
"""
