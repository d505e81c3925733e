"""The train step's config room: a LLaMA-Factory config as ``TrainConfig`` (``train_config``), its YAML
(``yaml_io``, read through ``bounded``), its DeepSpeed JSON (``deepspeed``), a ``llamafactory-cli`` command line
read as one (``command_line``), and what the installed LLaMA-Factory knows (``llamafactory_info``)."""
