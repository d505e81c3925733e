"""The port's review room: the user's decisions on a translation's hunks, kept safe on disk.

``model`` (``ReviewModel``: the hunks and decisions in memory; each key is an op ``apply`` makes, no I/O),
``queries`` (what the model counts and lists) with ``memo`` (those counts kept per revision), ``split`` and
``editor`` (a hunk cut in two, or edited in the user's editor), ``reconcile`` (decisions carried over to a new
translation), ``file_format`` (``<out>.review.json``), ``journal`` (each change, fsync'd, beside it), ``lock``
(one writer at a time), ``store`` (a change committed to disk before the key returns), ``state``
(``ReviewState``: the model and its store bound together for the CLI and the screen; not a workspace state
file: ``hipwizard.port.state`` owns ``.hipwizard/port.json``), ``nav`` (where the user is in a review).
"""
