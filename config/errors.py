"""The one error type configuration raises."""


class ConfigError(ValueError):
    """A property key, value or site file is wrong. The message names what, where, and what was
    expected."""
