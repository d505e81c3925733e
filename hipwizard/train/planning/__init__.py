"""The train step's planning room: one ``Plan`` for a config (``plan``): the GPU it is for (``device``), the
rules users trip over (``rules``), the model's shape (``model_shape``), peak memory (``memory``), throughput
(``throughput``), the speed knobs installed (``knobs``), the advisor's ranking (``advisor``), MFU against a
ceiling (``ceiling``) and the presets a plan starts from (``presets``)."""
