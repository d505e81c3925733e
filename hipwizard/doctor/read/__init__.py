"""Reading the answers: parsers of the Python side's outputs (``python``: the probe's JSON, ``collect_env``,
``ds_report``; ``packages``: pip and ``llamafactory-cli env`` listings; ``versions``: one-line version outputs),
and the merge of every tool's view into one ``EnvReport`` (``environment``) with the evidence for each fact
(``evidence``). The GPU tools' parsers are shared with telemetry in ``hipwizard.gpu.parsers``."""
