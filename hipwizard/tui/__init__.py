"""The Textual face of hipwizard. Only this package imports textual."""

