"""The train step's run room: a run folder written from a plan (``rundir``), launched detached (``launcher``)
with its ``run.json`` (``manifest``), its logs read as they grow (``tail``, ``logscan``) into a ``history``,
``alarms`` and a ``failure`` diagnosis, followed (``watch``) and copied for a view (``snapshot``), stopped
(``stop``), found on disk (``runs``), and the GPUs a run uses (``gpus``)."""
