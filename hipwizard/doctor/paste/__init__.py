"""A pasted terminal log as a source of answers: read it with a cap (``input``), cut it into the tool outputs
it holds and name each by its content (``recognise``), and write them as a recording folder that the usual
replay reads (``recording``)."""
